"""Program files for the tests: `save` (Program.save, returning the path) and the
byte-level pieces (`pack`, `metadata_text`, `rewrite`) with which the tests build bad
files, written from the layout in docs/program-file.md rather than from the writer."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import jax
import jaxlib

import cyxla as cx

MAGIC = b"CYXLAPRG"
HEADER = struct.Struct("<8sIIQQQQ")  # magic, format, crc, M, S, C, reserved


def _spec_line(key: str, spec: cx.TensorSpec) -> str:
    return f"{key} {spec.element_type.name} [{','.join(map(str, spec.shape))}]"


def metadata_text(program: cx.Program) -> str:
    """The metadata lines of `program` (without an output_tree), in the documented order."""
    lines = [
        f"name {program.name}",
        f"platform {program.platform}",
        f"stablehlo_version {program.stablehlo_version}",
        *(_spec_line("input", s) for s in program.inputs),
        *(_spec_line("output", s) for s in program.outputs),
        *(f"custom_call {target}" for target in program.custom_calls),
        f"cyxla_version {cx.__version__}",
        f"jax_version {jax.__version__}",
        f"jaxlib_version {jaxlib.__version__}",
    ]
    return "".join(line + "\n" for line in lines)


def pack(
    metadata: bytes,
    stablehlo: bytes,
    options: bytes,
    *,
    version: int = 1,
    reserved: int = 0,
    crc: int | None = None,
) -> bytes:
    """A whole file from its three parts; the keywords make bad headers."""
    body = (
        struct.pack("<QQQQ", len(metadata), len(stablehlo), len(options), reserved)
        + metadata
        + stablehlo
        + options
    )
    checksum = zlib.crc32(body) if crc is None else crc
    return MAGIC + struct.pack("<II", version, checksum) + body


def parts(data: bytes) -> tuple[bytes, bytes, bytes]:
    """The metadata, StableHLO and compile options of a well-formed file."""
    _, _, _, m, s, _, _ = HEADER.unpack_from(data)
    body = data[HEADER.size :]
    return body[:m], body[m : m + s], body[m + s :]


def metadata_of(data: bytes) -> str:
    return parts(data)[0].decode()


def rewrite(
    data: bytes,
    *,
    metadata: bytes | None = None,
    version: int | None = None,
    reserved: int | None = None,
    crc: bool = True,
) -> bytes:
    """`data` with fields replaced, its sizes and CRC-32 made right again (a CRC of 0
    unless `crc`)."""
    _, old_version, _, _, _, _, old_reserved = HEADER.unpack_from(data)
    old_metadata, stablehlo, options = parts(data)
    return pack(
        old_metadata if metadata is None else metadata,
        stablehlo,
        options,
        version=old_version if version is None else version,
        reserved=old_reserved if reserved is None else reserved,
        crc=None if crc else 0,
    )


def replace_metadata(data: bytes, old: str, new: str) -> bytes:
    """`data` with the first `old` of its metadata replaced by `new`, sizes and CRC right."""
    text = metadata_of(data)
    assert old in text, f"{old!r} not in the metadata"
    return rewrite(data, metadata=text.replace(old, new, 1).encode())


def save(program: cx.Program, path: str | Path) -> Path:
    """`program.save(path)`, returning the path."""
    program.save(path)
    return Path(path)
