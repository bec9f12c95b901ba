"""Helpers the tests share (conftest.py holds only fixtures and hooks): subprocesses, the
installed package and a C compiler, x64, lowering, and ctypes mirrors of cyxla/cyxla.h, to
call the native API from tests as C code would."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

import cyxla as cx
from cyxla import _core

# ------------------------------------------------------------------ disk-cache entries

#: An entry's prefix (src/cache/entry.hpp): magic, format version, header length, SHA-256
#: of everything after the prefix. The tests lay entries out with these, independently of
#: the store, to read what it wrote and to craft damaged and hostile entries.
ENTRY_PREFIX = struct.Struct("<8sII32s")
ENTRY_MAGIC = b"CYXLA\x00CE"
ENTRY_FORMAT = 2


def entry_path(cache: Path, kind: str, key: str) -> Path:
    """Where the store keeps `key`'s entry of `kind` under the cache directory `cache`."""
    return cache / kind / (hashlib.sha256(f"{kind}\0{key}".encode()).hexdigest() + ".entry")


def entry_binding(kind: str, key: str, payload: bytes) -> str:
    """The header's `binding`: SHA-256 of kind, NUL, key, NUL and payload."""
    return hashlib.sha256(f"{kind}\0{key}\0".encode() + payload).hexdigest()


def encode_entry(
    header: dict[str, Any] | bytes, payload: bytes, *, version: int = ENTRY_FORMAT
) -> bytes:
    """An entry of these header (a dict, or the bytes to write as they are) and payload,
    with a checksum that matches."""
    text = header if isinstance(header, bytes) else json.dumps(header, sort_keys=True).encode()
    digest = hashlib.sha256(text + payload).digest()
    return ENTRY_PREFIX.pack(ENTRY_MAGIC, version, len(text), digest) + text + payload


def split_entry(data: bytes) -> tuple[dict[str, Any], bytes]:
    """The header and payload of an entry's bytes, unchecked."""
    _, _, length, _ = ENTRY_PREFIX.unpack_from(data)
    header = json.loads(data[ENTRY_PREFIX.size : ENTRY_PREFIX.size + length])
    return header, data[ENTRY_PREFIX.size + length :]


@contextlib.contextmanager
def cache_seams(
    user: int | None = None, hook: Callable[[str, str, int], None] | None = None
) -> Iterator[None]:
    """The store's test seams for a while: the user id it takes as its own, and a hook it
    calls at its stages ("checked" and "opened" in a read, "listed" in a clear)."""
    hooks.set_store_seams(user, hook)
    try:
        yield
    finally:
        hooks.set_store_seams(None, None)


# ------------------------------------------------------------------ the test build's hooks


class _Hooks:
    """cyxla._core._testing, the hooks of a test build (CMake's CYXLA_TESTING, which the
    README's test command and CI's editable pairing set). A wheel for users has none: there
    a test skips when it first reaches for one, saying why."""

    def __getattr__(self, name: str) -> Any:
        testing = getattr(_core, "_testing", None)
        if testing is None:
            pytest.skip(
                "needs the test hooks of a build with -Ccmake.define.CYXLA_TESTING=ON "
                "(this cyxla is a wheel's build, which has none)"
            )
        return getattr(testing, name)


hooks = _Hooks()


# ------------------------------------------------------------------ subprocesses


def run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs `code` in a fresh interpreter (a process loads one plugin, so tests that
    choose another plugin or settings run in their own)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def run_cyxla(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs `python -m cyxla ARGS` in a fresh interpreter (in `cwd`, if given)."""
    return subprocess.run(
        [sys.executable, "-m", "cyxla", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=300,
    )


_STEPS_PRELUDE = """
import json
from pathlib import Path

import jax
import numpy as np
import pytest

import cyxla as cx


def attempt(step):
    try:
        value = step()
    except Exception as error:
        print(json.dumps([type(error).__name__, str(error)]))
    else:
        print(json.dumps(["ok", str(value)]))
"""


def run_steps(code: str, env: dict[str, str] | None = None) -> list[list[str]]:
    """Runs `code` in a fresh interpreter, where `attempt(step)` prints one JSON line per
    step it tries: ["ok", str(result)] or [exception type name, message]."""
    result = run_python(_STEPS_PRELUDE + textwrap.dedent(code), env)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


# ------------------------------------------------------------------ the installed package


def plugin_library() -> str:
    """The CPU plugin's library, as cyxla finds it."""
    from cyxla._run import plugins as _plugins

    return _plugins.entry_for("cpu").library_path()


def installed_header() -> Path:
    """The element-type header installed with the package under test (not the source
    tree's): the one piece of the PJRT C API that cyxla's public headers declare. It is
    found where `cx.get_include()` says, beside the built modules: in an editable install
    those are in site-packages while the Python files stay in the source tree."""
    return Path(cx.get_include()[0]) / "cyxla" / "element_type.h"


def private_pjrt_header() -> Path:
    """cyxla's own PJRT declarations, private to the source tree (never installed)."""
    return Path(__file__).resolve().parents[1] / "src" / "pjrt" / "pjrt_c_api.h"


def compile_c(
    source: Path, output: Path, *, shared: bool = False, defines: dict[str, str] | None = None
) -> Path:
    """Compiles `source` with the system C compiler against cyxla's installed headers and
    its private PJRT declarations ("pjrt/pjrt_c_api.h")."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    assert compiler, "the tests need a C compiler (cc) to build their probes"
    include = installed_header().parents[1]
    private = private_pjrt_header().parents[1]
    command = [compiler, "-std=c11", "-O0", "-Wall", "-Werror", f"-I{include}", f"-I{private}"]
    command += [f"-D{name}={value}" for name, value in (defines or {}).items()]
    command += [str(source), *(["-shared", "-fPIC"] if shared else ["-ldl"]), "-o", str(output)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"
    return output


# ------------------------------------------------------------------ x64


@contextlib.contextmanager
def x64_mode(enabled: bool) -> Iterator[None]:
    """jax_enable_x64 set to `enabled` inside the block, restored after it."""
    before = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", enabled)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", before)


# ------------------------------------------------------------------ lowering helpers


def spec(shape: Sequence[int], dtype: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(tuple(shape), np.dtype(dtype))


def specs_of(args: Sequence[Any]) -> list[Any]:
    """ShapeDtypeStructs (in the same pytree) for concrete arguments."""
    return [jax.tree.map(lambda a: spec(np.shape(a), np.asarray(a).dtype), arg) for arg in args]


def compile_fn(fn: Callable[..., Any], args: Sequence[Any]) -> cx.Executable:
    """Lowers `fn` for `args` (shapes and dtypes, or pytrees of them) and compiles it."""
    program = cx.lower(fn, args)
    executable, _ = cx.compile_program(program)
    return executable


# ------------------------------------------------------------------ element types


F32 = int(cx.ElementType.F32)
F64 = int(cx.ElementType.F64)
F8E5M2 = 19  # PJRT_Buffer_Type_F8E5M2: a type cyxla does not carry


# ------------------------------------------------------------------ the native API (cyxla/cyxla.h)

OK, INVALID_ARGUMENT, TYPE_MISMATCH, RELEASED, PJRT, INTERNAL, BUSY, PROGRAM_FILE = range(8)
OPTION_STRING, OPTION_INT64, OPTION_FLOAT, OPTION_BOOL = range(4)


class Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char * 512)]


class Input(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("type", ctypes.c_int), ("nbytes", ctypes.c_size_t)]


class ProgramSpec(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("executable", ctypes.c_uint64),
        ("num_inputs", ctypes.c_size_t),
        ("num_outputs", ctypes.c_size_t),
        ("input_types", ctypes.POINTER(ctypes.c_int)),
        ("input_ranks", ctypes.POINTER(ctypes.c_size_t)),
        ("input_dims", ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))),
        ("input_bytes", ctypes.POINTER(ctypes.c_size_t)),
        ("output_types", ctypes.POINTER(ctypes.c_int)),
        ("output_ranks", ctypes.POINTER(ctypes.c_size_t)),
        ("output_dims", ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))),
        ("output_bytes", ctypes.POINTER(ctypes.c_size_t)),
        ("num_batch_sizes", ctypes.c_size_t),
        ("batch_sizes", ctypes.POINTER(ctypes.c_size_t)),
    ]


#: sizeof(cyxla_ProgramSpec) in ABI version 1, before the batch sizes.
SPEC_SIZE_V1 = ProgramSpec.num_batch_sizes.offset


class ClientOption(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("type", ctypes.c_int),
        ("string_value", ctypes.c_char_p),
        ("int64_value", ctypes.c_int64),
        ("float_value", ctypes.c_double),
    ]


class RuntimeOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("plugin_path", ctypes.c_char_p),
        ("client_options", ctypes.POINTER(ClientOption)),
        ("num_client_options", ctypes.c_size_t),
    ]


GetSpec = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_uint64, ctypes.POINTER(ProgramSpec), ctypes.POINTER(Error)
)
ReleaseSpec = ctypes.CFUNCTYPE(None, ctypes.POINTER(ProgramSpec))
Execute = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.POINTER(ProgramSpec),
    ctypes.POINTER(Input),
    ctypes.c_size_t,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_size_t,
    ctypes.POINTER(Error),
)
ExecuteBatch = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.POINTER(ProgramSpec),
    ctypes.c_size_t,
    ctypes.POINTER(Input),
    ctypes.c_size_t,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_size_t,
    ctypes.POINTER(Error),
)
AlignedMemory = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t)
FreeAligned = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
Bind = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.POINTER(ProgramSpec),
    ctypes.POINTER(Input),
    ctypes.c_size_t,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_size_t,
    ctypes.POINTER(ctypes.c_uint64),
    ctypes.POINTER(Error),
)
CallBound = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.POINTER(Error))
Unbind = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.POINTER(Error))
OpenRuntime = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(RuntimeOptions), ctypes.POINTER(Error))
CloseRuntime = ctypes.CFUNCTYPE(None)
LoadProgram = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(Error)
)
ReleaseProgram = ctypes.CFUNCTYPE(None, ctypes.c_uint64)
RegisterFfiHandler = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_char_p,
    ctypes.c_void_p,
    ctypes.c_char_p,
    ctypes.c_uint32,
    ctypes.POINTER(Error),
)


class Api(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("abi_version", ctypes.c_int),
        ("oldest_compatible", ctypes.c_int),
        ("get_spec", GetSpec),
        ("release_spec", ReleaseSpec),
        ("execute", Execute),
        ("aligned_memory", AlignedMemory),
        ("free_aligned", FreeAligned),
        ("execute_batch", ExecuteBatch),
        ("bind", Bind),
        ("call_bound", CallBound),
        ("unbind", Unbind),
        ("open_runtime", OpenRuntime),
        ("close_runtime", CloseRuntime),
        ("load_program", LoadProgram),
        ("release_program", ReleaseProgram),
        ("register_ffi_handler", RegisterFfiHandler),
    ]


def table() -> Api:
    """The function table, from the capsule that extension modules import."""
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    address = get_pointer(_core._C_API, b"cyxla._core._C_API")
    return Api.from_address(address)


# ------------------------------------------------------------------ the scripted plugin
# (tests/native/scripted_plugin.c; its fixtures are in conftest.py)


def set_outputs(lib: ctypes.CDLL, types: list[int], shapes: list[list[int]]) -> None:
    flat = [d for shape in shapes for d in shape] or [0]
    lib.fake_outputs(
        ctypes.c_size_t(len(types)),
        (ctypes.c_int * max(1, len(types)))(*types),
        ctypes.c_size_t(len(shapes)),
        (ctypes.c_size_t * max(1, len(shapes)))(*[len(s) for s in shapes]),
        (ctypes.c_int64 * len(flat))(*flat),
    )


def runtime(scripted: tuple[_core.Plugin, ctypes.CDLL], platform: bytes = b"fake") -> _core.Runtime:
    scripted[1].fake_platform(platform)
    return _core.Runtime.create(scripted[0], {})
