"""Writes the small seeds of the fuzz targets (tests/fuzz/<target>/seed-*), which the
targets start from and tests/test_fuzz_corpus.py replays: run it from the repository
root with cyxla and its CPU plugin installed. Findings are kept beside the seeds as
crash-*, written by hand from libFuzzer's artifacts, never by this script."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

import cyxla as cx
from cyxla import _core

ROOT = Path(__file__).resolve().parent.parent / "tests" / "fuzz"
# What fuzz/cache_entry.cpp asks the reader for.
KIND, KEY, VERSION = "programs", "fuzz", "0.0.0"


def write(target: str, name: str, data: bytes) -> None:
    directory = ROOT / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"seed-{name}").write_bytes(data)


def program_files() -> None:
    def small(x, n):
        return {"sum": x + n.astype(x.dtype), "rows": (x[0], jnp.tanh(x))}

    specs = [jax.ShapeDtypeStruct((2, 3), jnp.float32), jax.ShapeDtypeStruct((), jnp.int32)]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "small.cyxla"
        cx.lower(small, specs).save(path)
        write("program_file", "small.cyxla", path.read_bytes())
        path = Path(directory) / "flat.cyxla"
        cx.lower(lambda x: x * 2, [jax.ShapeDtypeStruct((4,), jnp.float32)]).save(path)
        write("program_file", "flat.cyxla", path.read_bytes())


def cache_entries() -> None:
    def entry(header: dict, payload: bytes) -> bytes:
        text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
        digest = hashlib.sha256(text + payload).digest()
        return struct.pack("<8sII32s", b"CYXLA\0CE", 2, len(text), digest) + text + payload

    for name, extra, payload in [
        ("plain", {}, b"payload"),
        ("fields", {"program": {"name": "f", "dims": [1, 2.5, -3], "ok": True, "x": None}}, b""),
    ]:
        binding = hashlib.sha256(f"{KIND}\0{KEY}\0".encode() + payload).hexdigest()
        header = {
            "kind": KIND,
            "key": KEY,
            "binding": binding,
            "cyxla_version": VERSION,
            "payload_length": len(payload),
            **extra,
        }
        write("cache_entry", name, entry(header, payload))


def plugin_records() -> None:
    """Record headers of the library fuzz/plugin_record.cpp asks for: the CPU plugin's
    facts as cyxla records them, and each kind of xla_version a plugin may give."""
    record = {
        "name": "pjrt_c_api_cpu_plugin.so",
        "library": "/fuzz/pjrt_c_api_cpu_plugin.so",
        "size": 201000000,
        "mtime_ns": 1700000000,
        "pjrt_version": [0, 106],
        "xla_version": {"type": "int", "value": 2},
        "platform": "cpu",
        "platform_version": "cpu",
        "client_options": [
            {"name": "cpu_device_count", "type": "int", "value": 1},
            {"name": "asynchronous", "type": "bool", "value": False},
        ],
    }
    versions = {
        "int": {"type": "int", "value": 2},
        "str": {"type": "str", "value": "0.11.2"},
        "ints": {"type": "ints", "value": [0, 11, 2]},
        "float": {"type": "float", "value": 0.5},
        "bool": {"type": "bool", "value": True},
        "none": None,
    }
    for name, version in versions.items():
        text = json.dumps({**record, "xla_version": version}, sort_keys=True)
        write("plugin_record", name, text.encode())


def json_texts() -> None:
    # Objects, as entry headers are (the reader reads any JSON value, the replay objects).
    texts = {
        "object": '{"a": [1, -2, 3.5e-7, true, false, null], "b": {"c": "d\\u00e9\\n"}}',
        "unicode": '{"\\ud83d\\ude00": "\u03c0", "z": "\\u0000"}',
        "numbers": '{"n": [0, -0, 9223372036854775807, -9223372036854775808, 1e308, 5e-324]}',
        "nested": '{"deep": ' + "[" * 40 + "]" * 40 + "}",
    }
    for name, text in texts.items():
        write("json", name, text.encode())


def hlo_modules() -> None:
    def f(x, y):
        return x @ y, x * 2

    x = jnp.ones((2, 3), jnp.float32)
    y = jnp.ones((3, 4), jnp.float32)
    compiled = jax.jit(f, donate_argnums=(0,)).lower(x, y).compile()
    (module,) = compiled.runtime_executable().hlo_modules()
    proto = module.as_serialized_hlo_module_proto()
    # The first byte picks the format: even "hlo", odd "hlo_with_config" (field 1 holds it).
    write("hlo_signature", "module", b"\0" + proto)
    length = bytearray()
    n = len(proto)
    while True:
        length.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if n == 0:
            break
    write("hlo_signature", "with-config", b"\1" + b"\x0a" + bytes(length) + proto)


def compiled_forms() -> None:
    """The CPU plugin's serialized executables of four small programs, as the disk cache
    stores them (compiled fresh: one loaded from the cache serializes without its
    objects), and the ELF objects they carry."""
    from cyxla import _core

    f32 = jnp.float32
    programs = {
        "sin3": (lambda x: jnp.sin(x) * 2, [jax.ShapeDtypeStruct((3,), f32)]),
        "mlp": (
            lambda x, w: jnp.tanh(x @ w).sum(),
            [jax.ShapeDtypeStruct((8, 16), f32), jax.ShapeDtypeStruct((16, 16), f32)],
        ),
        "sort": (jnp.sort, [jax.ShapeDtypeStruct((16,), f32)]),
        "fori": (
            lambda x: jax.lax.fori_loop(0, 10, lambda i, v: jnp.sin(v), x),
            [jax.ShapeDtypeStruct((4,), f32)],
        ),
    }
    os.environ[cx.CACHE_ENVIRONMENT_VARIABLE] = "0"
    for name, (function, specs) in programs.items():
        executable, _ = cx.compile_program(cx.lower(function, specs))
        serialized = executable._native.serialize()
        write("compiled_form", name, serialized)
        for number, obj in enumerate(_core._compiled_details(serialized)["objects"]):
            write("elf_object", f"{name}-{number}.o", obj["contents"])


def lapack_frames() -> None:
    """One well-formed float32 call of each routine, in fuzz/lapack_handlers.cpp's byte
    layout: target, operand and result counts, each buffer (element type, rank,
    dimensions, contents, kind), then the attributes (name, kind, code)."""
    dtypes = {"f32": 0, "c64": 2, "s32": 4}
    names = ["uplo", "mode", "side", "trans_x", "diag", "sort", "compute_left", "compute_right"]
    names += ["low", "high", "left", "transpose", "other"]
    codes = "LUNVASOTCRX"

    def buffer(dtype: str, *dims: int) -> bytes:
        count = 1
        for d in dims:
            count *= d
        if dtype == "f32":
            # A diagonally dominant matrix (or vector): every routine succeeds on it.
            values = [4.0 if i % (dims[-1] + 1) == 0 else 0.5 for i in range(count)]
            contents = struct.pack(f"<{count}f", *values)
        else:  # complex64 zeros (8 bytes), int32 zeros (4 bytes)
            contents = bytes((8 if dtype == "c64" else 4) * count)
        return bytes([dtypes[dtype], len(dims), *dims]) + contents + bytes([1])

    def frame(target: int, operands: list[bytes], results: list[bytes], **attributes: Any):
        data = bytes([target, len(operands), len(results)]) + b"".join(operands + results)
        data += bytes([len(attributes)])
        for name, code in attributes.items():
            if isinstance(code, bool):  # a boolean attribute: the kind byte 3 says so
                data += bytes([names.index(name), 3, int(code)])
            elif isinstance(code, int):  # an int32 attribute: the kind byte 7 says so
                data += bytes([names.index(name), 7, code])
            else:
                data += bytes([names.index(name), 1, codes.index(code)])
        return data

    targets = _core.lapack_targets()

    def index(routine: str) -> int:
        """The target's place in the handlers' table, which the first byte picks."""
        return targets.index(f"lapack_s{routine}_ffi")

    seeds = {
        "getrf": frame(
            index("getrf"),
            [buffer("f32", 2, 3, 3)],
            [buffer("f32", 2, 3, 3), buffer("s32", 2, 3), buffer("s32", 2)],
        ),
        "trsm": frame(
            index("trsm"),
            [buffer("f32", 3, 3), buffer("f32", 3, 2)],
            [buffer("f32", 3, 2)],
            side="L",
            uplo="L",
            trans_x="N",
            diag="N",
        ),
        "potrf": frame(
            index("potrf"), [buffer("f32", 3, 3)], [buffer("f32", 3, 3), buffer("s32")], uplo="L"
        ),
        "geqp3": frame(
            index("geqp3"),
            [buffer("f32", 4, 3), buffer("s32", 3)],
            [buffer("f32", 4, 3), buffer("s32", 3), buffer("f32", 3)],
        ),
        "geqrf": frame(
            index("geqrf"), [buffer("f32", 4, 3)], [buffer("f32", 4, 3), buffer("f32", 3)]
        ),
        "orgqr": frame(
            index("orgqr"), [buffer("f32", 4, 3), buffer("f32", 3)], [buffer("f32", 4, 3)]
        ),
        "syevd": frame(
            index("syevd"),
            [buffer("f32", 3, 3)],
            [buffer("f32", 3, 3), buffer("f32", 3), buffer("s32")],
            uplo="L",
            mode="V",
        ),
        "gesdd": frame(
            index("gesdd"),
            [buffer("f32", 4, 3)],
            [
                buffer("f32", 4, 3),
                buffer("f32", 3),
                buffer("f32", 4, 4),
                buffer("f32", 3, 3),
                buffer("s32"),
            ],
            mode="A",
        ),
        "geev": frame(
            index("geev"),
            [buffer("f32", 3, 3)],
            [
                buffer("f32", 3),
                buffer("f32", 3),
                buffer("c64", 3, 3),
                buffer("c64", 3, 3),
                buffer("s32"),
            ],
            compute_left="V",
            compute_right="V",
        ),
        "gees": frame(
            index("gees"),
            [buffer("f32", 3, 3)],
            [
                buffer("f32", 3, 3),
                buffer("f32", 3, 3),
                buffer("f32", 3),
                buffer("f32", 3),
                buffer("s32"),
                buffer("s32"),
            ],
            mode="V",
            sort="N",
        ),
        "gehrd": frame(
            index("gehrd"),
            [buffer("f32", 3, 3)],
            [buffer("f32", 3, 3), buffer("f32", 2), buffer("s32")],
            low=1,
            high=3,
        ),
        "sytrd": frame(
            index("sytrd"),
            [buffer("f32", 3, 3)],
            [
                buffer("f32", 3, 3),
                buffer("f32", 3),
                buffer("f32", 2),
                buffer("f32", 2),
                buffer("s32"),
            ],
            uplo="L",
        ),
        "gtsv": frame(
            index("gtsv"),
            [buffer("f32", 4), buffer("f32", 4), buffer("f32", 4), buffer("f32", 4, 2)],
            [
                buffer("f32", 4),
                buffer("f32", 4),
                buffer("f32", 4),
                buffer("f32", 4, 2),
                buffer("s32"),
            ],
        ),
        "gesvd": frame(
            index("gesvd"),
            [buffer("f32", 4, 3)],
            [
                buffer("f32", 4, 3),
                buffer("f32", 3),
                buffer("f32", 4, 4),
                buffer("f32", 3, 3),
                buffer("s32"),
            ],
            mode="A",
        ),
        "ormqr": frame(
            index("ormqr"),
            [buffer("f32", 4, 3), buffer("f32", 3), buffer("f32", 4, 2)],
            [buffer("f32", 4, 2)],
            left=True,
            transpose=True,
        ),
    }
    for name, data in seeds.items():
        write("lapack_handlers", name, data)


if __name__ == "__main__":
    program_files()
    cache_entries()
    plugin_records()
    json_texts()
    hlo_modules()
    compiled_forms()
    lapack_frames()
    sys.exit(0)
