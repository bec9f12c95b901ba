"""The program file, format 1: a lowered program in one checksummed file that Python and
native loaders read (docs/program-file.md describes the layout).

This module is the format alone, bytes to `Contents` and back; `cyxla._program` turns
them into a `Program`. Every field read is checked before anything uses it.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cyxla._dtypes import ElementType
from cyxla._errors import ProgramFileError
from cyxla._output_tree import MAX_NESTING, decode_tree, nesting
from cyxla._platforms import PLATFORM_ORDER

__all__ = ["FORMAT_VERSION", "MAGIC", "Contents", "pack", "unpack"]

MAGIC = b"CYXLAPRG"
#: The format this cyxla writes, and the newest it reads.
FORMAT_VERSION = 1
#: magic, format version, CRC-32 of everything after byte 16, the sizes of the metadata,
#: the StableHLO and the compile options, and a reserved 0.
_HEADER = struct.Struct("<8sIIQQQQ")
_CHECKED_FROM = 16
#: Metadata keys that a file must have, and those that may appear once at most.
_REQUIRED = ("name", "platform", "stablehlo_version", "cyxla_version")
_SINGLE = (*_REQUIRED, "jax_version", "jaxlib_version", "output_tree")
_VERSION_KEYS = ("cyxla_version", "jax_version", "jaxlib_version")
_SPEC = re.compile(r"([A-Z0-9]+) \[((?:\d+(?:,\d+)*)?)\]")
#: The largest dimension a file may hold (native code's are signed 64-bit).
_MAX_DIMENSION = (1 << 63) - 1

#: (element type, dimensions) per tensor.
Specs = tuple[tuple[ElementType, tuple[int, ...]], ...]


@dataclass(frozen=True)
class Contents:
    """What a program file holds."""

    name: str
    platform: str
    stablehlo_version: str
    inputs: Specs
    outputs: Specs
    custom_calls: tuple[str, ...]
    stablehlo: bytes = field(repr=False)
    compile_options: bytes = field(repr=False)
    #: cyxla_version, jax_version and jaxlib_version: the versions that wrote the file.
    versions: Mapping[str, str]
    #: The output's `jax.tree` structure written as `cyxla._output_tree` encodes it, or
    #: None when the file has no output_tree line (its outputs are a flat tuple).
    output_tree: Any = None
    has_output_tree: bool = False
    #: The outputs the program writes into donated parameters of its own, one per
    #: parameter after the inputs, in order (`cyxla._program.donated_outputs`).
    donated_outputs: tuple[int, ...] = ()


def _spec_text(spec: tuple[ElementType, Sequence[int]]) -> str:
    element_type, dims = spec
    return f"{ElementType(element_type).name} [{','.join(str(int(d)) for d in dims)}]"


def _line(key: str, value: str) -> str:
    if "\n" in value or "\r" in value:
        raise ValueError(f"the program's {key} {value!r} holds a line break, which a file cannot")
    return f"{key} {value}\n"


def _metadata(contents: Contents) -> bytes:
    lines = [
        _line("name", contents.name),
        _line("platform", contents.platform),
        _line("stablehlo_version", contents.stablehlo_version),
        *(_line("input", _spec_text(s)) for s in contents.inputs),
        *(_line("output", _spec_text(s)) for s in contents.outputs),
        *(_line("custom_call", t) for t in contents.custom_calls),
        *(_line("donated_output", str(int(k))) for k in contents.donated_outputs),
        *(_line(k, contents.versions[k]) for k in _VERSION_KEYS),
    ]
    if contents.has_output_tree:
        lines.append(_line("output_tree", json.dumps(contents.output_tree, separators=(",", ":"))))
    return "".join(lines).encode("utf-8")


def pack(contents: Contents) -> bytes:
    """The file's bytes; ValueError if a text field holds a line break."""
    metadata = _metadata(contents)
    body = (
        struct.pack(
            "<QQQQ", len(metadata), len(contents.stablehlo), len(contents.compile_options), 0
        )
        + metadata
        + contents.stablehlo
        + contents.compile_options
    )
    return MAGIC + struct.pack("<II", FORMAT_VERSION, zlib.crc32(body)) + body


def _refuse(source: str, reason: str, message: str) -> ProgramFileError:
    return ProgramFileError(f"{source}: {message}", reason=reason)


def unpack(data: bytes, source: str) -> Contents:
    """The contents of a program file's bytes; ProgramFileError naming `source` (the
    file) and saying what is wrong with it."""
    if data[: len(MAGIC)] != MAGIC:
        raise _refuse(source, "magic", "not a cyxla program file (it does not start with CYXLAPRG)")
    if len(data) < _HEADER.size:
        raise _refuse(
            source,
            "size",
            f"truncated: {len(data)} bytes, shorter than the {_HEADER.size}-byte header",
        )
    _, version, crc, m, s, c, reserved = _HEADER.unpack_from(data)
    if version > FORMAT_VERSION:
        raise _refuse(
            source,
            "version",
            f"written by a newer cyxla: format {version}, this reads up to {FORMAT_VERSION}; "
            "upgrade cyxla",
        )
    if version < 1:
        raise _refuse(source, "version", f"format {version} does not exist (formats start at 1)")
    if max(m, s, c) > len(data):
        raise _refuse(
            source,
            "size",
            f"malformed header: sizes metadata {m}, StableHLO {s}, compile options {c} are "
            f"larger than the file ({len(data)} bytes)",
        )
    expected = _HEADER.size + m + s + c
    if len(data) < expected:
        raise _refuse(
            source, "size", f"truncated: {len(data)} bytes, the header describes {expected}"
        )
    if len(data) > expected:
        raise _refuse(
            source,
            "size",
            f"{len(data) - expected} trailing bytes after the {expected} the header describes",
        )
    if zlib.crc32(memoryview(data)[_CHECKED_FROM:]) != crc:
        raise _refuse(source, "checksum", "altered or corrupted: its CRC-32 does not match")
    if reserved != 0:
        raise _refuse(source, "reserved", f"the reserved header field is {reserved}, not 0")
    start = _HEADER.size
    metadata = bytes(data[start : start + m])
    stablehlo = bytes(data[start + m : start + m + s])
    options = bytes(data[start + m + s : expected])
    try:
        return _contents(_parse_metadata(metadata), stablehlo, options)
    except ValueError as error:
        raise _refuse(source, "metadata", f"malformed metadata: {error}") from None


def _parse_metadata(metadata: bytes) -> list[tuple[str, str]]:
    """(key, value) per line; ValueError for text that is not lines of `key value`."""
    try:
        text = metadata.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"not UTF-8 text ({error})") from None
    if text and not text.endswith("\n"):
        raise ValueError("the last line does not end with LF")
    pairs = []
    for number, line in enumerate(text.split("\n")[:-1], start=1):
        key, space, value = line.partition(" ")
        if not space or not key or "\r" in line:
            raise ValueError(f"line {number} {line[:80]!r} is not 'key value'")
        pairs.append((key, value))
    return pairs


def _spec(value: str) -> tuple[ElementType, tuple[int, ...]]:
    match = _SPEC.fullmatch(value)
    if match is None:
        raise ValueError(
            f"{value[:80]!r} is not 'ELEMENT_TYPE [d0,d1,...]' with dimensions integers >= 0"
        )
    name, dims_text = match.groups()
    if name not in ElementType.__members__:
        known = ", ".join(ElementType.__members__)
        raise ValueError(f"unknown element type {name!r} (known: {known})")
    dims = tuple(int(d) for d in dims_text.split(",")) if dims_text else ()
    if any(d > _MAX_DIMENSION for d in dims):
        raise ValueError(f"a dimension of {value[:80]!r} is larger than 2**63 - 1")
    return ElementType[name], dims


def _contents(pairs: list[tuple[str, str]], stablehlo: bytes, options: bytes) -> Contents:
    single: dict[str, str] = {}
    multiple: dict[str, list[str]] = {
        "input": [],
        "output": [],
        "custom_call": [],
        "donated_output": [],
    }
    for key, value in pairs:
        if key in multiple:
            multiple[key].append(value)
        elif key in _SINGLE:
            if key in single:
                raise ValueError(f"the key {key!r} appears twice")
            single[key] = value
        # Any other key is one a later cyxla added: ignored, as the format says.
    missing = [k for k in _REQUIRED if k not in single]
    if missing:
        raise ValueError(f"missing the required key(s) {', '.join(missing)}")
    if single["platform"] not in PLATFORM_ORDER:
        raise ValueError(
            f"unknown platform {single['platform'][:80]!r} (known: {', '.join(PLATFORM_ORDER)})"
        )
    tree, has_tree = None, "output_tree" in single
    if has_tree:
        tree = _output_tree(single["output_tree"], len(multiple["output"]))
    donated = _donated_outputs(multiple["donated_output"], len(multiple["output"]))
    return Contents(
        name=single["name"],
        platform=single["platform"],
        stablehlo_version=single["stablehlo_version"],
        inputs=tuple(_spec(v) for v in multiple["input"]),
        outputs=tuple(_spec(v) for v in multiple["output"]),
        custom_calls=tuple(multiple["custom_call"]),
        stablehlo=stablehlo,
        compile_options=options,
        versions={k: single.get(k, "") for k in _VERSION_KEYS},
        output_tree=tree,
        has_output_tree=has_tree,
        donated_outputs=donated,
    )


def _donated_outputs(values: list[str], outputs: int) -> tuple[int, ...]:
    """The donated_output lines' output indices, each a different output of the file."""
    indices = []
    for value in values:
        if not (value.isascii() and value.isdigit()) or int(value) >= outputs:
            raise ValueError(
                f"donated_output {value[:80]!r} is not the index of one of the {outputs} outputs"
            )
        if int(value) in indices:
            raise ValueError(f"donated_output {value} appears twice")
        indices.append(int(value))
    return tuple(indices)


def _output_tree(text: str, outputs: int) -> Any:
    """The output_tree line's structure, checked to be one of `outputs` leaves."""
    try:
        encoded = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"the output_tree is not JSON ({error})") from None
    if nesting(encoded) > MAX_NESTING:
        raise ValueError(f"the output_tree nests deeper than {MAX_NESTING}")
    try:
        leaves = decode_tree(encoded).num_leaves
    except (TypeError, ValueError) as error:
        raise ValueError(f"the output_tree is not an output structure ({error})") from None
    if leaves != outputs:
        raise ValueError(f"the output_tree has {leaves} leaves, but the file {outputs} outputs")
    return encoded
