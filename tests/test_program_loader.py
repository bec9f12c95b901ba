"""The native loader of program files (cyxla_open_runtime, cyxla_load_program): in a
Python process it shares Python's runtime; it refuses every kind of bad file with a
message that says which; what it loads runs like jax.jit."""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx
from cyxla import _core

from program_file_writer import metadata_text, pack, save
from support import (
    FACTOR,
    INVALID_ARGUMENT,
    OK,
    OPTION_INT64,
    OPTION_STRING,
    PJRT,
    PROGRAM_FILE,
    ClientOption,
    Error,
    ProgramSpec,
    RuntimeOptions,
    load_from_c,
    mlp,
    mlp_program,
    run_from_c,
    scale_add,
    table,
)


@pytest.fixture(scope="module")
def program() -> cx.Program:
    cx.initialize(platform="cpu")
    return mlp_program()


def test_a_loaded_program_runs_like_jax_jit(program: cx.Program, tmp_path: Path) -> None:
    status, handle, error = load_from_c(save(program, tmp_path / "mlp.cyxla"))
    assert status == OK, error.message
    try:
        rng = np.random.default_rng(0)
        x = rng.standard_normal((4, 8), np.float32)
        w = rng.standard_normal((8, 8), np.float32)
        (out,) = run_from_c(handle, [x, w])
        np.testing.assert_allclose(out.reshape(4, 8), jax.jit(mlp)(x, w), rtol=1e-6, atol=1e-6)
    finally:
        table().release_program(handle)
    # A released handle is dead: a spec cannot be taken from it.
    spec, error = ProgramSpec(), Error()
    spec.struct_size = ctypes.sizeof(ProgramSpec)
    assert table().get_spec(handle, ctypes.byref(spec), ctypes.byref(error)) != OK


def test_a_program_writing_an_output_in_place_runs_like_jax_jit(tmp_path: Path) -> None:
    # 256x256 float32 is 256 KiB: lower adds a donated parameter for it, which the loader
    # learns from the file's donated_output line. Loaded twice: compiled, then cached.
    def double_sin(x: jax.Array) -> jax.Array:
        return jnp.sin(x) * 2

    program = cx.lower(double_sin, [jax.ShapeDtypeStruct((256, 256), jnp.float32)])
    path = save(program, tmp_path / "in_place.cyxla")
    x = np.random.default_rng(1).standard_normal((256, 256), np.float32)
    for _ in range(2):
        status, handle, error = load_from_c(path)
        assert status == OK, error.message
        try:
            (out,) = run_from_c(handle, [x])
        finally:
            table().release_program(handle)
        np.testing.assert_allclose(out.reshape(256, 256), jax.jit(double_sin)(x), rtol=1e-6)


def test_open_runtime_shares_the_runtime_python_opened(program: cx.Program) -> None:
    error = Error()
    assert table().open_runtime(None, ctypes.byref(error)) == OK, error.message
    table().close_runtime()
    # The runtime Python opened stays: Python's programs still compile and run.
    executable, _ = cx.compile_program(program)
    x, w = np.ones((4, 8), np.float32), np.ones((8, 8), np.float32)
    np.testing.assert_allclose(executable.run([x, w])[0], jax.jit(mlp)(x, w), rtol=1e-6)


def test_open_runtime_refuses_another_plugin(program: cx.Program) -> None:
    options, error = RuntimeOptions(), Error()
    options.struct_size = ctypes.sizeof(RuntimeOptions)
    options.plugin_path = cx.get_library().encode()  # a library, but not the plugin in use
    assert table().open_runtime(ctypes.byref(options), ctypes.byref(error)) == INVALID_ARGUMENT
    assert b"a process has one runtime" in error.message


def test_open_runtime_refuses_a_short_struct_size() -> None:
    options, error = RuntimeOptions(), Error()
    options.struct_size = 8
    assert table().open_runtime(ctypes.byref(options), ctypes.byref(error)) == INVALID_ARGUMENT
    assert b"struct_size is 8" in error.message


def _parts(program: cx.Program) -> tuple[bytes, bytes, bytes]:
    from cyxla._jax.compile_options import compile_options

    return metadata_text(program).encode(), program.stablehlo, compile_options(None)


def _with_metadata(old: str, new: str) -> Callable[[cx.Program], bytes]:
    def make(program: cx.Program) -> bytes:
        metadata, code, options = _parts(program)
        assert old.encode() in metadata
        return pack(metadata.replace(old.encode(), new.encode(), 1), code, options)

    return make


def test_a_bad_file_reaches_c_as_load_program_refuses_it(
    program: cx.Program, tmp_path: Path
) -> None:
    """One reader (src/program/program_file.cpp) refuses bad files for both doors, each
    kind tested in test_program_file.py; a C caller gets PROGRAM_FILE, no handle, and
    load_program's message."""
    path = tmp_path / "bad.cyxla"
    path.write_bytes(pack(*_parts(program))[:-5])
    with pytest.raises(cx.ProgramFileError) as python:
        cx.load_program(path)
    status, handle, error = load_from_c(path)
    assert (status, handle) == (PROGRAM_FILE, 0), error.message
    assert error.message.decode() == f"load_program: {python.value}"


def test_outputs_that_are_not_the_programs_are_refused(program: cx.Program, tmp_path: Path) -> None:
    path = tmp_path / "bad.cyxla"
    path.write_bytes(_with_metadata("output F32 [4,8]", "output F32 [8,4]")(program))
    status, handle, error = load_from_c(path)
    assert (status, handle) == (PROGRAM_FILE, 0), error.message
    assert b"the compiled program returns (f32[4,8])" in error.message
    assert str(path).encode() in error.message


def test_unreadable_files_are_refused(tmp_path: Path) -> None:
    status, _, error = load_from_c(tmp_path / "missing.cyxla")
    assert status == INVALID_ARGUMENT
    assert b"cannot open the program file" in error.message
    assert b"No such file" in error.message


def test_a_program_for_another_platform_is_refused(program: cx.Program, tmp_path: Path) -> None:
    path = tmp_path / "cuda.cyxla"
    path.write_bytes(_with_metadata("platform cpu\n", "platform cuda\n")(program))
    status, _, error = load_from_c(path)
    assert status == INVALID_ARGUMENT
    assert b"holds a program for 'cuda', but this process runs the 'cpu' plugin" in error.message


def test_a_custom_call_nobody_registered_is_refused_naming_it(
    program: cx.Program, tmp_path: Path
) -> None:
    """One verdict and one text from both doors: the core answers the custom-call
    question for Python's compile_program and the C loader alike."""
    f32 = jax.ShapeDtypeStruct((3,), jnp.float32)
    solver = cx.lower(scale_add("my_solver"), [f32], custom_calls=["my_solver"])
    path = save(solver, tmp_path / "custom.cyxla")
    status, _, error = load_from_c(path)
    assert status == INVALID_ARGUMENT
    native = error.message.decode()
    source = f"load_program: {path}"
    assert native.startswith(f"{source} calls the custom-call target 'my_solver', which no handler")
    assert "cyxla.register_ffi_target from Python, cyxla_register_ffi_handler from C" in native
    with pytest.raises(cx.UnsupportedProgramError) as python:
        cx.compile_program(cx.load_program(path))
    assert str(python.value) == native.replace(source, f"compile_program: {solver.name}")


@pytest.mark.parametrize(
    "target", ["no_such_target", "cu_threefry2x32", "lapack_sgetrf_ffi", "t" * 200]
)
def test_a_claimed_custom_call_the_program_never_makes_is_refused_by_both_doors(
    program: cx.Program, tmp_path: Path, target: str
) -> None:
    """Metadata that claims a target its StableHLO never names (found by fuzzing: such
    files once ran in Python and were refused in C) is refused by the one reader, with one
    text, whichever door opened the file."""
    path = tmp_path / "claims.cyxla"
    path.write_bytes(
        _with_metadata("cyxla_version", f"custom_call {target}\ncyxla_version")(program)
    )
    status, handle, error = load_from_c(path)
    assert (status, handle) == (PROGRAM_FILE, 0)
    with pytest.raises(cx.ProgramFileError) as python:
        cx.load_program(path)
    assert python.value.reason == "metadata"
    assert error.message.decode() == f"load_program: {python.value}"
    assert f"claims the custom-call target '{target[:80]}" in str(python.value)
    assert "which its StableHLO never names" in str(python.value)


def test_jaxlibs_lapack_targets_load_in_a_python_process(tmp_path: Path) -> None:
    # Python registered jaxlib's handlers with the plugin: the native loader sees them.
    cx.initialize(platform="cpu")

    def solve(a: jax.Array, b: jax.Array) -> jax.Array:
        return jnp.linalg.solve(a, b)

    f32 = jnp.float32
    program = cx.lower(solve, [jax.ShapeDtypeStruct((3, 3), f32), jax.ShapeDtypeStruct((3,), f32)])
    assert any(t.startswith("lapack_") for t in program.custom_calls), program.custom_calls
    status, handle, error = load_from_c(save(program, tmp_path / "solve.cyxla"))
    assert status == OK, error.message
    try:
        a = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]], np.float32)
        b = np.array([1, 2, 3], np.float32)
        (x,) = run_from_c(handle, [a, b])
        np.testing.assert_allclose(x, jax.jit(solve)(a, b), rtol=1e-5)
    finally:
        table().release_program(handle)


def test_a_jaxlib_target_cyxla_does_not_cover_without_python_is_refused_saying_how(
    tmp_path: Path,
) -> None:
    """cyxla's own handlers cover every LAPACK target (tests/test_lapack_handlers.py, and
    tests/test_standalone_examples.py runs one without Python); the perturbed tridiagonal
    solve, jaxlib's own algorithm, is still jaxlib's alone."""
    vector, column = (
        jax.ShapeDtypeStruct((4,), jnp.float32),
        jax.ShapeDtypeStruct((4, 1), jnp.float32),
    )
    perturbed = cx.lower(
        lambda dl, d, du, b: jax.lax.linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=True),
        [vector, vector, vector, column],
    )
    assert "tridiagonal_solve_perturbed_ffi" in perturbed.custom_calls
    path = save(perturbed, tmp_path / "jaxlib.cyxla")
    # A process where cyxla.initialize never ran (so jaxlib's handlers were never
    # registered): the C API through libcyxla's own export, as a C program calls it.
    code = f"""
import ctypes, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from support import Api, Error, RuntimeOptions
library = ctypes.CDLL({cx.get_library()!r})
library.cyxla_get_api.restype = ctypes.POINTER(Api)
api = library.cyxla_get_api().contents
options = RuntimeOptions(ctypes.sizeof(RuntimeOptions), {_plugin().encode()!r}, None, 0)
error = Error()
assert api.open_runtime(ctypes.byref(options), ctypes.byref(error)) == 0, error.message
handle = ctypes.c_uint64()
status = api.load_program({str(path).encode()!r}, ctypes.byref(handle), ctypes.byref(error))
print(status, error.message.decode())
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{INVALID_ARGUMENT} "), result.stdout
    assert "'tridiagonal_solve_perturbed_ffi', which no handler in this process" in result.stdout


def _plugin() -> str:
    from support import plugin_library

    return plugin_library()


def test_the_second_load_comes_from_the_disk_cache(
    program: cx.Program, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CYXLA_CACHE_DIR", str(tmp_path / "cache"))
    path = save(program, tmp_path / "mlp.cyxla")
    x, w = np.ones((4, 8), np.float32), np.full((8, 8), 0.5, np.float32)
    for attempt in ("compiled", "cached", "damaged entry, recompiled"):
        status, handle, error = load_from_c(path)
        assert status == OK, f"{attempt}: {error.message}"
        try:
            (out,) = run_from_c(handle, [x, w])
            np.testing.assert_allclose(out.reshape(4, 8), jax.jit(mlp)(x, w), rtol=1e-6)
        finally:
            table().release_program(handle)
        (entry,) = (tmp_path / "cache" / "executables").iterdir()  # Python's store
        assert entry.suffix == ".entry" and entry.stat().st_size > 0
        if attempt == "cached":
            entry.write_bytes(b"not an executable")
    assert entry.read_bytes() != b"not an executable"  # replaced by the recompiled one


def test_an_empty_cache_dir_turns_the_cache_off(
    program: cx.Program, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CYXLA_CACHE_DIR", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    status, handle, error = load_from_c(save(program, tmp_path / "mlp.cyxla"))
    assert status == OK, error.message
    table().release_program(handle)
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (ClientOption(None, OPTION_INT64, None, 1, 0.0), b"client option 0 has no name"),
        (
            ClientOption(b"platform_name", OPTION_STRING, None, 0, 0.0),
            b"client option 'platform_name' is a string, but string_value is NULL",
        ),
        (ClientOption(b"x", 9, None, 0, 0.0), b"client option 'x' has the unknown type 9"),
    ],
)
def test_bad_client_options_are_refused(option: ClientOption, expected: bytes) -> None:
    options, error = RuntimeOptions(), Error()
    options.struct_size = ctypes.sizeof(RuntimeOptions)
    options.client_options = ctypes.pointer(option)
    options.num_client_options = 1
    assert table().open_runtime(ctypes.byref(options), ctypes.byref(error)) == INVALID_ARGUMENT
    assert expected in error.message


def test_client_options_null_with_a_count_are_refused() -> None:
    options, error = RuntimeOptions(), Error()
    options.struct_size = ctypes.sizeof(RuntimeOptions)
    options.num_client_options = 2
    assert table().open_runtime(ctypes.byref(options), ctypes.byref(error)) == INVALID_ARGUMENT
    assert b"client_options is NULL, but num_client_options is 2" in error.message


_WITHOUT_PYTHONS_RUNTIME = """
import ctypes, json, sys
sys.path.insert(0, {tests!r})
from support import Api, ClientOption, Error, Input, ProgramSpec, RuntimeOptions
library = ctypes.CDLL({library!r})
library.cyxla_get_api.restype = ctypes.POINTER(Api)
api = library.cyxla_get_api().contents
handlers = ctypes.CDLL({handlers!r})
handler = ctypes.cast(handlers.CyxlaTestScaleAdd, ctypes.c_void_p)
report = {{}}
error, handle = Error(), ctypes.c_uint64()

def attempt(name, status):
    report[name] = [status, error.message.decode()]

attempt("register before open", api.register_ffi_handler(b"t", handler, b"cpu", 0, error))
attempt("load before open", api.load_program({program!r}, ctypes.byref(handle), error))
options = (ClientOption * 3)(
    ClientOption(b"cpu_device_count", 1, None, 1, 0.0),
    ClientOption(b"asynchronous", 3, None, 0, 0.0),
    ClientOption(b"not_an_option", 2, None, 0, 0.5),
)
runtime = RuntimeOptions(ctypes.sizeof(RuntimeOptions), {plugin!r}, options, 3)
attempt("unknown option", api.open_runtime(ctypes.byref(runtime), error))
runtime.num_client_options = 2
attempt("open", api.open_runtime(ctypes.byref(runtime), error))
attempt("platform", api.register_ffi_handler(b"t", handler, b"tpu", 0, error))
attempt("null target", api.register_ffi_handler(None, handler, b"cpu", 0, error))
attempt("unregistered", api.load_program({program!r}, ctypes.byref(handle), error))
attempt("register", api.register_ffi_handler({target!r}, handler, b"cpu", 0, error))
attempt("load", api.load_program({program!r}, ctypes.byref(handle), error))
spec = ProgramSpec()
spec.struct_size = ctypes.sizeof(ProgramSpec)
attempt("spec", api.get_spec(handle, ctypes.byref(spec), error))
x = (ctypes.c_float * 6)(*range(6))
y = (ctypes.c_float * 6)()
inputs = (Input * 1)(Input(ctypes.cast(x, ctypes.c_void_p), spec.input_types[0], 24))
outputs = (ctypes.c_void_p * 1)(ctypes.cast(y, ctypes.c_void_p))
attempt("execute", api.execute(ctypes.byref(spec), inputs, 1, outputs, 1, error))
report["y"] = list(y)
api.release_spec(ctypes.byref(spec))
api.release_program(handle.value)
api.close_runtime()
print(json.dumps(report))
"""


def test_a_handler_registered_from_c_runs_in_a_loaded_program(
    handler_library: Path, tmp_path: Path
) -> None:
    # The whole path of a process without Python's runtime: open with client options,
    # register a typed FFI handler from C, load a program that calls it, run it.
    target = "cyxla_c_scale_add"
    program = cx.lower(
        scale_add(target), [jax.ShapeDtypeStruct((2, 3), jnp.float32)], custom_calls=[target]
    )
    assert program.custom_calls == (target,)
    path = save(program, tmp_path / "scale_add.cyxla")
    code = _WITHOUT_PYTHONS_RUNTIME.format(
        tests=str(Path(__file__).parent),
        library=cx.get_library(),
        handlers=str(handler_library),
        program=str(path).encode(),
        plugin=_plugin().encode(),
        target=target.encode(),
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["register before open"][0] == INVALID_ARGUMENT
    assert "no runtime is open" in report["register before open"][1]
    assert "no runtime is open" in report["load before open"][1]
    assert report["unknown option"][0] == PJRT
    assert "not_an_option" in report["unknown option"][1]
    assert report["open"] == [OK, ""]
    assert 'use "cpu", "cuda" or "rocm"' in report["platform"][1]
    assert "target or platform is NULL" in report["null target"][1]
    assert f"calls the custom-call target '{target}'" in report["unregistered"][1]
    for step in ("register", "load", "spec", "execute"):
        assert report[step] == [OK, ""], (step, report[step])
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_allclose(report["y"], x * FACTOR + 1, rtol=1e-6)


def test_a_second_client_does_not_take_the_process_runtimes_place(
    program: cx.Program, tmp_path: Path
) -> None:
    # Only cyxla.initialize's runtime (or cyxla_open_runtime's) is the process's: another
    # client of the plugin, made and dropped, leaves the loader with Python's runtime.
    loaded = cx.initialize(platform="cpu")
    other = _core.Runtime.create(loaded.plugin, {"cpu_device_count": 1})
    del other
    status, handle, error = load_from_c(save(program, tmp_path / "mlp.cyxla"))
    assert status == OK, error.message
    table().release_program(handle)


# ------------------------------------ claims of a file checked against the compiled program


def _entries() -> set[Path]:
    return set(Path(os.environ["CYXLA_CACHE_DIR"]).glob("executables/*.entry"))


def _four_inputs(a: jax.Array, b: jax.Array, c: jax.Array, d: jax.Array) -> jax.Array:
    return a.sum() + b.sum() + c.sum().astype(jnp.float32) + d.sum()


_FOUR = [((2,), jnp.float32), ((3,), jnp.float32), ((4,), jnp.int32), ((5,), jnp.float32)]


@pytest.mark.parametrize(
    ("function", "specs", "old", "new", "expected"),
    [
        (
            lambda x, y: x * 2 + y,
            [((4,), jnp.float32)] * 2,
            "input F32 [4]\n",
            "input S32 [4]\n",
            b"input 0 is s32[4], but the program takes f32[4]",
        ),
        (
            _four_inputs,
            _FOUR,
            "input F32 [2]\ninput F32 [3]\n",
            "input F32 [3]\ninput F32 [2]\n",
            b"input 0 is f32[3], but the program takes f32[2]",
        ),
        (
            lambda x, y: x * 2 + y,
            [((4,), jnp.float32)] * 2,
            "input F32 [4]\n",
            "input S32 [65536,65536,65536]\n",
            b"input 0 is s32[65536,65536,65536], but the program takes f32[4]",
        ),
        (
            lambda x, y: x * 2 + y,
            [((4,), jnp.float32)] * 2,
            "input F32 [4]\ninput F32 [4]\n",
            "input F32 [4]\n",
            b"it takes 2 parameters (f32[4], f32[4]), the specs name 1 inputs (f32[4])",
        ),
    ],
    ids=["another-type", "swapped-lines", "absurd-dims", "one-dropped"],
)
def test_input_specs_edited_in_a_file_are_refused_and_never_cached(
    function: Callable[..., jax.Array],
    specs: list[tuple[tuple[int, ...], Any]],
    old: str,
    new: str,
    expected: bytes,
    tmp_path: Path,
) -> None:
    """The native loader took a file's input lines on trust, stored the executable under
    the program's key, and Python's compile_program of the same file then took that entry:
    int32 memory read as float32. Now both refuse the file, and nothing is stored."""
    cx.initialize(platform="cpu")
    program = cx.lower(function, [jax.ShapeDtypeStruct(s, t) for s, t in specs])
    path = tmp_path / "edited.cyxla"
    path.write_bytes(_with_metadata(old, new)(program))
    before = _entries()
    status, handle, error = load_from_c(path)
    assert (status, handle) == (PROGRAM_FILE, 0), error.message
    assert expected in error.message, error.message
    assert b"the input specs are not those of the compiled program" in error.message
    assert _entries() == before
    with pytest.raises(cx.InvalidArgumentError, match=re.escape(expected.decode())):
        cx.compile_program(cx.load_program(path))
    # The program itself compiles, is stored, and the entry refuses the edited file too.
    executable, _ = cx.compile_program(program)
    arrays = [np.arange(int(np.prod(s)), dtype=t).reshape(s) for s, t in specs]
    np.testing.assert_array_equal(executable.run(arrays)[0], jax.jit(function)(*arrays))
    assert cx.compile_program(program)[1].cache_hit  # stored
    status, _, error = load_from_c(path)
    assert status == PROGRAM_FILE and expected in error.message, error.message


def test_outputs_written_in_place_that_a_file_claims_wrongly_are_refused(tmp_path: Path) -> None:
    cx.initialize(platform="cpu")
    writes_in_place = cx.lower(jnp.sin, [jax.ShapeDtypeStruct((256, 256), jnp.float32)])
    dropped = tmp_path / "dropped.cyxla"
    dropped.write_bytes(
        _with_metadata("input F32 [256,256]\n", "input F32 [256,256]\n")(writes_in_place)
    )  # the writer's lines hold no donated_output line: the claim is "none"
    status, _, error = load_from_c(dropped)
    assert status == PROGRAM_FILE, error.message
    assert (
        b"the outputs written in place are listed as () (a program file's donated_output "
        b"lines, Program.donated_outputs), but the compiled program writes (0) in place"
    ) in error.message
    small = mlp_program()
    added = tmp_path / "added.cyxla"
    added.write_bytes(_with_metadata("cyxla_version", "donated_output 0\ncyxla_version")(small))
    status, _, error = load_from_c(added)
    assert status == PROGRAM_FILE, error.message
    assert (
        b"the outputs written in place are listed as (0) (a program file's donated_output "
        b"lines, Program.donated_outputs), but the compiled program writes () in place"
    ) in error.message
