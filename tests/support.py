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
import jax.numpy as jnp
import jax.scipy.special
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


def read_entry(path: Path) -> tuple[dict[str, Any], bytes]:
    """The header and payload of the entry file at `path`, unchecked."""
    return split_entry(path.read_bytes())


def write_entry(path: Path, header: dict[str, Any] | bytes, payload: bytes) -> None:
    """Writes an entry of this header and payload, with a checksum that matches."""
    path.write_bytes(encode_entry(header, payload))


def cache_entries(cache: Path, kind: str = "executables") -> list[Path]:
    """The entry files of `kind` under the cache directory `cache`, sorted."""
    return sorted((cache / kind).glob("*.entry"))


def flip(position: int) -> Callable[[bytes], bytes]:
    """A change of bytes that flips one bit of the byte at `position`."""

    def change(data: bytes) -> bytes:
        flipped = bytearray(data)
        flipped[position] ^= 0x10
        return bytes(flipped)

    return change


def shaped(*shape: int, dtype: Any = np.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, np.dtype(dtype))


def scaled_program(scale: float = 2.0, n: int = 8) -> cx.Program:
    """tanh(x @ w) * scale: each `scale` gives other StableHLO (a constant) and another key."""

    def scaled(x: jax.Array, w: jax.Array) -> jax.Array:
        return jax.numpy.tanh(x @ w) * scale

    return cx.lower(scaled, [shaped(4, n), shaped(n, n)])


def check_scaled(executable: cx.Executable, scale: float = 2.0, n: int = 8) -> None:
    """Runs a `scaled_program` and checks its output against NumPy's."""
    x = np.linspace(-1, 1, 4 * n, dtype=np.float32).reshape(4, n)
    w = np.linspace(-0.5, 0.5, n * n, dtype=np.float32).reshape(n, n)
    (out,) = executable.run([x, w])
    np.testing.assert_allclose(out, np.tanh(x @ w) * scale, rtol=1e-5, atol=1e-6)


def tanh_program(scale: float = 2.0) -> cx.Program:
    """tanh(x) * scale of one f32[4,8] input, a program whose entries tests rewrite."""

    def scaled(x: jax.Array) -> jax.Array:
        return jax.numpy.tanh(x) * scale

    return cx.lower(scaled, [shaped(4, 8)])


def tanh_x() -> np.ndarray:
    """The input `tanh_program` is run on."""
    return np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)


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


def last_json(result: subprocess.CompletedProcess[str]) -> Any:
    """The JSON a child printed last, once it has exited cleanly."""
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


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


def install_and_test_example(example: Path, work: Path) -> subprocess.CompletedProcess[str]:
    """Builds the package of examples/`example` against the installed cyxla (pip, into a
    directory of `work`) and runs its own tests there; their result, which passed."""
    target = work / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
         "--target", str(target), str(example)],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout + build.stderr
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(example / "tests")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(target)},
        cwd=work,
        timeout=600,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert " passed" in tests.stdout and "failed" not in tests.stdout
    return tests


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


#: The C and C++ sources the tests build (handlers, fake plugins, C callers).
NATIVE_SOURCES = Path(__file__).parent / "native"

#: The factor of the user handler's y = x * factor + 1 (tests/native/handlers.cc).
FACTOR = np.float32(2.5)


def compile_cxx(source: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """Compiles C++ `source` against XLA FFI headers the plugin runs (cx.ffi_include_dir)."""
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    assert compiler, "the custom-call tests need a C++ compiler (c++) to build their handler"
    command = [compiler, "-std=c++17", "-Wall", "-Wextra", "-Werror", str(source), *arguments]
    return subprocess.run(
        [*command, "-isystem", cx.ffi_include_dir()], capture_output=True, text=True, timeout=300
    )


def scale_add(target: str) -> Callable[[jax.Array], jax.Array]:
    """A function that calls the handler registered as `target`."""

    def fn(x: jax.Array) -> jax.Array:
        return jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(x.shape, x.dtype))(x, factor=FACTOR)

    fn.__name__ = f"scale_add_{target}"
    return fn


# ------------------------------------------------------------------ a small MLP


def mlp(x: jax.Array, w: jax.Array) -> jax.Array:
    return jnp.tanh(x @ w) + 1.0


def mlp_program(rows: int = 4) -> cx.Program:
    return cx.lower(mlp, [shaped(rows, 8), shaped(8, 8)])


def mlp_inputs(rows: int = 4) -> list[np.ndarray]:
    x = np.linspace(-1, 1, rows * 8, dtype=np.float32).reshape(rows, 8)
    return [x, np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8)]


# ------------------------------------------------------------------ x64


@contextlib.contextmanager
def environment(**values: str | None) -> Iterator[None]:
    """The environment variables `values` set (None: unset) for a while, then restored:
    the core reads CYXLA_CACHE_DIR and CYXLA_RUNNER at each compile or load."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def bench_specs(program: Any) -> list[jax.ShapeDtypeStruct]:
    """The input specs of a bench program (cyxla._bench.programs.BenchProgram)."""
    return [spec(a.shape, a.dtype) for a in program.make_inputs(np.random.default_rng(0))]


def fresh_compile(
    function: Callable[..., Any], specs: Sequence[Any], runner: str | None = None
) -> tuple[cx.Executable, bytes]:
    """`function` compiled without the disk cache (for `runner`, the CYXLA_RUNNER value,
    when given) and its serialized form, objects and all: one the plugin deserialized from
    the disk cache would serialize without them."""
    with environment(CYXLA_CACHE_DIR="0", CYXLA_RUNNER=runner):
        executable, statistics = cx.compile_program(cx.lower(function, specs))
    assert not statistics.cache_hit
    return executable, executable._native.serialize()


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


# ------------------------------------------------------------------ the native loader


def open_runtime_from_c(api: Api, *options: ClientOption) -> None:
    """Opens the runtime as a C program does (in a process without Python's runtime),
    naming `options`; cyxla's defaults for the platform give the others."""
    given = RuntimeOptions(
        ctypes.sizeof(RuntimeOptions),
        plugin_library().encode(),
        (ClientOption * len(options))(*options),
        len(options),
    )
    error = Error()
    assert api.open_runtime(ctypes.byref(given), ctypes.byref(error)) == OK, error.message


def load_from_c(path: Path, api: Api | None = None) -> tuple[int, int, Error]:
    """cyxla_load_program of `path` (through `api`, this process's table by default): its
    status, the handle and the error."""
    api = table() if api is None else api
    handle, error = ctypes.c_uint64(0), Error()
    status = api.load_program(str(path).encode(), ctypes.byref(handle), ctypes.byref(error))
    assert status == error.status
    return status, handle.value, error


def run_from_c(handle: int, arrays: list[np.ndarray], api: Api | None = None) -> list[np.ndarray]:
    """Runs the loaded program through get_spec and execute, as a C caller does; the
    outputs (as float32)."""
    api = table() if api is None else api
    spec, error = ProgramSpec(), Error()
    spec.struct_size = ctypes.sizeof(ProgramSpec)
    assert api.get_spec(handle, ctypes.byref(spec), ctypes.byref(error)) == OK, error.message
    try:
        outputs = [
            np.empty(spec.output_bytes[j], np.uint8).view(np.float32)
            for j in range(spec.num_outputs)
        ]
        inputs = (Input * len(arrays))(
            *(Input(a.ctypes.data, spec.input_types[i], a.nbytes) for i, a in enumerate(arrays))
        )
        pointers = (ctypes.c_void_p * len(outputs))(*(o.ctypes.data for o in outputs))
        status = api.execute(
            ctypes.byref(spec), inputs, len(arrays), pointers, len(outputs), ctypes.byref(error)
        )
        assert status == OK, error.message
        return outputs
    finally:
        api.release_spec(ctypes.byref(spec))


# ------------------------------------------------------------------ the jnp sweep
# (test_jnp_sweep.py runs it; test_aot.py exports it)

#: Relative and absolute tolerance by dtype: a few ulps (complex64 a few more: jax.nn.gelu
#: of a complex number near 500 differs by 1.6e-5 between jaxlib 0.10.2 and the plugin).
SWEEP_TOLERANCE = {
    "float32": (1e-5, 1e-6),
    "complex64": (3e-5, 1e-6),
    "float64": (1e-12, 1e-14),
}


_SWEEP_FLOATS = [0.5, -1.5, 0.0, -0.0, 2.0, np.nan, np.inf, -np.inf, 3.25, -0.75, 1.0, 7.0]


_SWEEP_INTS = [3, -2, 0, 1, 5, -7, 2, 4, -1, 6, 1, -3]


#: Second operands: no zero, so that integer division is defined.
_SWEEP_INTS_NONZERO = [2, -3, 1, 5, -1, 4, 7, -2, 3, 1, -4, 6]


def sweep_values(shape: tuple[int, ...], dtype: np.dtype, operand: int) -> np.ndarray:
    """Deterministic values of `shape` and `dtype`: first the pool's (NaN, infinities and
    -0.0 included for floats), then seeded random ones, so that no two lanes of a vector
    hold the same value; `operand` 1 takes other values (nonzero for integers)."""
    size = int(np.prod(shape, dtype=np.int64))
    roll = 5 * operand
    rng = np.random.default_rng(operand)
    if dtype.kind == "f":
        pool = np.roll(np.array(_SWEEP_FLOATS), roll)
        rest = rng.uniform(-4, 4, size)
    elif dtype.kind == "c":
        finite = np.array([v for v in _SWEEP_FLOATS if np.isfinite(v)])
        pool = np.roll(finite, roll) + 1j * np.roll(finite, roll + 3)
        rest = rng.uniform(-4, 4, size) + 1j * rng.uniform(-4, 4, size)
    else:
        pool = np.array(_SWEEP_INTS_NONZERO if operand else _SWEEP_INTS)
        rest = rng.integers(1, 8, size) * rng.choice([-1, 1], size)
    values = np.concatenate([pool, rest])[:size] if size > len(pool) else pool[:size]
    return values.reshape(shape).astype(dtype)


def _sweep_unary() -> dict[str, Callable[..., Any]]:
    return {
        "abs": jnp.abs,
        "sign": jnp.sign,
        "sqrt": jnp.sqrt,
        "exp": jnp.exp,
        "log": jnp.log,
        "sin": jnp.sin,
        "floor": jnp.floor,
        "reciprocal": jnp.reciprocal,
        "isfinite": jnp.isfinite,
        "isinf": jnp.isinf,
        "isnan": jnp.isnan,
        "signbit": jnp.signbit,
        "imag": jnp.imag,
        "real": jnp.real,
        "conj": jnp.conj,
        "logical_not": jnp.logical_not,
        "arctan": jnp.arctan,
        "arcsin": jnp.arcsin,
        "arccos": jnp.arccos,
        "arcsinh": jnp.arcsinh,
        "arccosh": jnp.arccosh,
        "arctanh": jnp.arctanh,
        "cos": jnp.cos,
        "tan": jnp.tan,
        "sinh": jnp.sinh,
        "cosh": jnp.cosh,
        "tanh": jnp.tanh,
        "expm1": jnp.expm1,
        "log1p": jnp.log1p,
        "log2": jnp.log2,
        "exp2": jnp.exp2,
        "cbrt": jnp.cbrt,
        "square": jnp.square,
        "rint": jnp.rint,
        "ceil": jnp.ceil,
        "trunc": jnp.trunc,
        "erf": jax.scipy.special.erf,
        "erfc": jax.scipy.special.erfc,
        "erf_inv": jax.scipy.special.erfinv,
        "gammaln": jax.scipy.special.gammaln,
        "digamma": jax.scipy.special.digamma,
        "sigmoid": jax.nn.sigmoid,
        "softplus": jax.nn.softplus,
        "gelu": jax.nn.gelu,
        "silu": jax.nn.silu,
        "nan_to_num": jnp.nan_to_num,
        "clip": lambda x: jnp.clip(x, -1, 2),
        "sum": jnp.sum,
        "mean": jnp.mean,
        "max": jnp.max,
        "argmax": jnp.argmax,
        "cumsum": jnp.cumsum,
        "sort": jnp.sort,
        "reshape": lambda x: jnp.reshape(x, (-1,)),
        "transpose": jnp.transpose,
    }


def _sweep_binary() -> dict[str, Callable[..., Any]]:
    return {
        "add": jnp.add,
        "multiply": jnp.multiply,
        "divide": jnp.divide,
        "floor_divide": jnp.floor_divide,
        "maximum": jnp.maximum,
        "fmax": jnp.fmax,
        "arctan2": jnp.arctan2,
        "power": jnp.power,
        "hypot": jnp.hypot,
        "logaddexp": jnp.logaddexp,
        "remainder": jnp.remainder,
        "copysign": jnp.copysign,
        "equal": jnp.equal,
        "less": jnp.less,
        "where": lambda x, y: jnp.where(jnp.abs(x) > jnp.abs(y), x, y),
        "matmul": lambda x, y: jnp.matmul(x, y.T),
        "dot": lambda x, y: jnp.dot(x, y),
        "concatenate": lambda x, y: jnp.concatenate([x, y]),
    }


SWEEP_FUNCTIONS: dict[str, tuple[Callable[..., Any], int]] = {
    **{name: (fn, 1) for name, fn in _sweep_unary().items()},
    **{name: (fn, 2) for name, fn in _sweep_binary().items()},
}


def all_at_once(fn: Callable[..., Any], arity: int, count: int) -> Callable[..., Any]:
    """`fn` applied to each of `count` groups of `arity` consecutive arguments."""

    def every(*flat: Any) -> tuple[Any, ...]:
        return tuple(fn(*flat[i * arity : (i + 1) * arity]) for i in range(count))

    return every


def compare_with_jit(ours: np.ndarray, theirs: np.ndarray, where: str) -> None:
    """Equal to jax.jit's output: integers and booleans exactly, floats within SWEEP_TOLERANCE."""
    assert ours.dtype == theirs.dtype, f"{where}: dtype {ours.dtype}, jax.jit {theirs.dtype}"
    assert ours.shape == theirs.shape, f"{where}: shape {ours.shape}, jax.jit {theirs.shape}"
    if ours.dtype.kind in "fc":
        rtol, atol = SWEEP_TOLERANCE[ours.dtype.name]
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=where)
    else:
        np.testing.assert_array_equal(ours, theirs, err_msg=where)
