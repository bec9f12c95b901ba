"""Program files for the tests of the native loader: `save` (Program.save, returning the
path) and the byte-level pieces (`pack`, `metadata_text`) with which the tests build bad
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
    """The metadata lines of `program`, in the order FORMAT.md gives."""
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


def save(program: cx.Program, path: str | Path) -> Path:
    """`program.save(path)`, returning the path."""
    program.save(path)
    return Path(path)
