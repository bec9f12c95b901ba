"""Bound calls: a program bound once to the caller's memory (cyxla_bind, Executable.bind),
against jax.jit from C, C++, Cython and Python: results, the thread rule, lifetimes and
bad arguments."""

from __future__ import annotations

import ctypes
import gc
import importlib.util
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla
from cyxla import _benchmark, _core

from support import (
    BUSY,
    INVALID_ARGUMENT,
    OK,
    PJRT,
    RELEASED,
    Error,
    Input,
    ProgramSpec,
    compile_c,
    runtime,
    table,
)

F32 = int(cyxla.ElementType.F32)


def sin2(x: jax.Array) -> jax.Array:
    return jnp.sin(x) * 2


def mlp(x: jax.Array, w: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
    h = jnp.tanh(x @ w + b)
    return h, h.sum()


def slow(x: jax.Array) -> jax.Array:
    """Long enough (about a second) for other threads to act while it runs."""
    return jax.lax.fori_loop(0, 600_000, lambda i, v: jnp.sin(v) + 1e-3, x)


def compiled(function, *shapes: tuple[int, ...]) -> cyxla.Executable:
    specs = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
    return cyxla.compile_program(cyxla.lower(function, specs))[0]


@pytest.fixture(scope="module")
def executable() -> cyxla.Executable:
    return compiled(sin2, (3,))


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    source = Path(__file__).parent / "native" / "bound_calls.c"
    output = tmp_path_factory.mktemp("bound") / "libbound_calls.so"
    return ctypes.CDLL(str(compile_c(source, output, shared=True)))


def api_address() -> ctypes.c_void_p:
    return ctypes.c_void_p(ctypes.addressof(table()))


def floats(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def try_bind(handle: int, x: np.ndarray, y: np.ndarray) -> tuple[int, Error, ProgramSpec]:
    """cyxla_bind of `handle` over `x` and `y` through the table: the bound call (0 when
    refused), the error and the spec it came from (the caller releases both)."""
    spec, error = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec)), Error()
    assert table().get_spec(handle, ctypes.byref(spec), ctypes.byref(error)) == OK
    bound = ctypes.c_uint64(12345)
    inputs = (Input * 1)(Input(x.ctypes.data, F32, x.nbytes))
    outputs = (ctypes.c_void_p * 1)(y.ctypes.data)
    status = table().bind(
        ctypes.byref(spec), inputs, 1, outputs, 1, ctypes.byref(bound), ctypes.byref(error)
    )
    assert status == error.status
    return bound.value, error, spec


def bind(handle: int, x: np.ndarray, y: np.ndarray) -> tuple[int, ProgramSpec]:
    """A bound call of `handle` over `x` and `y` through the table, and the spec it came
    from (the caller releases both)."""
    bound, error, spec = try_bind(handle, x, y)
    assert error.status == OK, error.message
    return bound, spec


def call_bound(bound: int) -> Error:
    error = Error()
    assert table().call_bound(bound, ctypes.byref(error)) == error.status
    return error


# ------------------------------------------------------------------------------ from C


def test_c_caller_follows_the_rules(executable: cyxla.Executable, library: ctypes.CDLL) -> None:
    x = np.array([[0.5, 1.0, -2.0], [3.0, -0.25, 7.5]], np.float32)
    expected = np.asarray(jax.jit(jax.vmap(sin2))(x))
    why = ctypes.create_string_buffer(512)
    line = library.bound_rules(
        api_address(), ctypes.c_uint64(executable.handle), floats(x), floats(expected),
        ctypes.c_size_t(3), why, ctypes.c_size_t(512),
    )  # fmt: skip
    assert line == 0, why.value


@pytest.mark.parametrize("rows_differ", [False, True])
def test_c_threads_each_with_a_bound_call(
    executable: cyxla.Executable, library: ctypes.CDLL, rows_differ: bool
) -> None:
    rows = np.random.default_rng(1).standard_normal((61, 3)).astype(np.float32)
    expected = np.asarray(jax.jit(jax.vmap(sin2))(rows))
    if rows_differ:  # the check can fail: a table of wrong results is counted as wrong
        expected = expected + 1
    library.bound_threads.restype = ctypes.c_long
    wrong = library.bound_threads(
        api_address(), ctypes.c_uint64(executable.handle), floats(rows), floats(expected),
        ctypes.c_size_t(61), ctypes.c_size_t(3), ctypes.c_size_t(2000), ctypes.c_size_t(4),
    )  # fmt: skip
    assert wrong == (4 * 2000 if rows_differ else 0)


@pytest.mark.alone
def test_a_second_thread_gets_busy_and_unbind_waits_for_the_call() -> None:
    executable = compiled(slow, (1024,))
    x = np.zeros(1024, np.float32)
    y = np.zeros(1024, np.float32)
    bound, spec = bind(executable.handle, x, y)
    table().release_spec(ctypes.byref(spec))
    seen: dict[str, object] = {}

    def run() -> None:
        seen["status"] = call_bound(bound).status  # ctypes releases the GIL
        seen["done"] = time.monotonic()

    caller = threading.Thread(target=run)
    caller.start()
    time.sleep(0.2)  # the call is in flight
    busy = call_bound(bound)
    assert busy.status == BUSY
    assert b"another thread is in a call" in busy.message
    error = Error()
    assert table().unbind(bound, ctypes.byref(error)) == OK, error.message
    unbound = time.monotonic()
    caller.join()
    assert seen["status"] == OK
    assert unbound >= seen["done"]  # unbind waited for the call in flight
    np.testing.assert_allclose(y, jax.jit(slow)(x), rtol=1e-5)
    assert call_bound(bound).status == RELEASED


def test_a_bound_call_holds_its_executable_alive() -> None:
    executable = compiled(sin2, (3,))
    handle = executable.handle
    x = np.array([1.0, 2.0, 3.0], np.float32)
    y = np.zeros(3, np.float32)
    bound, spec = bind(handle, x, y)
    table().release_spec(ctypes.byref(spec))
    del executable
    gc.collect()
    assert call_bound(bound).status == OK
    np.testing.assert_array_equal(y, jax.jit(sin2)(x))
    assert table().unbind(bound, None) == OK
    # The bound call was the last holder: the executable is freed with it.
    held = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec))
    assert table().get_spec(handle, ctypes.byref(held), None) == RELEASED


def test_a_spec_handle_is_not_a_bound_call(executable: cyxla.Executable) -> None:
    error = Error()
    assert table().call_bound(executable.handle, ctypes.byref(error)) == INVALID_ARGUMENT
    assert b"is an executable's, not a bound call's" in error.message


def test_a_batched_spec_is_not_bound() -> None:
    batched = cyxla.compile_batched(
        cyxla.lower_batched(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)], (2,))
    )[0]
    x, y = np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32)
    bound, error, spec = try_bind(batched.handle, x, y)
    table().release_spec(ctypes.byref(spec))
    assert (bound, error.status) == (0, INVALID_ARGUMENT)
    assert error.message == (
        b"bind: the spec is of a batched executable, which cannot be bound: call execute_batch"
    )


def test_bind_reports_a_failing_plugin(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    """On the CPU, bind makes the inputs' buffers once: the plugin refusing one is a
    status and a message, and no bound call."""
    executable = runtime(scripted, b"cpu").compile(b"x", b"", [(F32, [3])])
    handle = _core.NativeHandle(executable)
    x, y = cyxla.zeros((3,), np.float32), np.zeros(3, np.float32)
    x[...] = [1.0, 2.0, 3.0]
    control.fake_fail(b"PJRT_Client_BufferFromHostBuffer")
    bound, error, spec = try_bind(handle.value, x, y)
    control.fake_fail(b"")
    assert (bound, error.status) == (0, PJRT)
    assert error.message == (
        b"bind: PJRT_Client_BufferFromHostBuffer failed: "
        b"scripted failure of PJRT_Client_BufferFromHostBuffer"
    )
    bound, spec_again = bind(handle.value, x, y)  # once the plugin works, so does bind
    assert call_bound(bound).status == OK
    np.testing.assert_array_equal(y, x)  # the scripted programs copy input 0
    assert table().unbind(bound, None) == OK
    for held in (spec, spec_again):
        table().release_spec(ctypes.byref(held))


@pytest.mark.parametrize("platform", [b"cpu", b"fake"], ids=["host buffers", "device copies"])
def test_a_bound_call_reports_a_failing_plugin(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL, platform: bytes
) -> None:
    """A call that fails in the plugin is a status and a message; the bound call stays
    usable. On the CPU it runs on buffers made at bind, elsewhere it uploads each call."""
    executable = runtime(scripted, platform).compile(b"x", b"", [(F32, [3])])
    handle = _core.NativeHandle(executable)
    x, y = cyxla.zeros((3,), np.float32), np.zeros(3, np.float32)
    x[...] = [1.0, 2.0, 3.0]
    bound, spec = bind(handle.value, x, y)
    table().release_spec(ctypes.byref(spec))
    control.fake_fail(b"PJRT_LoadedExecutable_Execute")
    error = call_bound(bound)
    control.fake_fail(b"")
    assert error.status == PJRT
    assert error.message == (
        b"call_bound: PJRT_LoadedExecutable_Execute failed: "
        b"scripted failure of PJRT_LoadedExecutable_Execute"
    )
    np.testing.assert_array_equal(y, 0.0)
    assert call_bound(bound).status == OK
    np.testing.assert_array_equal(y, x)
    assert table().unbind(bound, None) == OK


# ------------------------------------------------------------------------------- C++


def test_cpp_bound_call_matches_jax() -> None:
    executable = compiled(mlp, (4, 8), (8, 8), (8,))
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s.shape).astype(np.float32) for s in executable.inputs]
    outputs = [np.zeros(s.shape, s.dtype) for s in executable.outputs]
    _benchmark.bound_loop(executable.handle, arrays, outputs, 3)
    for got, want in zip(outputs, jax.jit(mlp)(*arrays), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------- Python


def test_python_bound_call_reads_what_the_inputs_hold(executable: cyxla.Executable) -> None:
    bound = executable.bind()
    (x,), (y,) = bound.inputs, bound.outputs
    assert x.ctypes.data % cyxla.HOST_ALIGNMENT == 0
    for values in ([0.5, 1.0, -2.0], [3.0, 4.0, 5.0]):
        x[...] = values
        assert bound() is bound.outputs
        np.testing.assert_array_equal(y, jax.jit(sin2)(x))


def test_python_bound_call_of_several_inputs_and_outputs() -> None:
    executable = compiled(mlp, (4, 8), (8, 8), (8,))
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s.shape).astype(np.float32) for s in executable.inputs]
    # Plain NumPy arrays, aligned or not: unaligned ones are copied on every call.
    bound = executable.bind(arrays, [np.zeros(s.shape, s.dtype) for s in executable.outputs])
    for _ in range(2):
        for got, want in zip(bound(), jax.jit(mlp)(*arrays), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        arrays[0] += 1.0


def test_python_bound_call_in_place(executable: cyxla.Executable) -> None:
    x = np.array([0.1, 0.2, 0.3], np.float32)
    bound = executable.bind([x], [x])  # x <- sin2(x)
    want = x.copy()
    for _ in range(3):
        bound()
        want = np.asarray(jax.jit(sin2)(want))
        np.testing.assert_array_equal(x, want)


def test_python_bound_arrays_cannot_be_resized(executable: cyxla.Executable) -> None:
    x = np.zeros(3, np.float32)
    bound = executable.bind([x], None)
    with pytest.raises(ValueError, match="referenced"):
        x.resize(1_000_000)  # the bound call references x: NumPy refuses
    bound.close()


@pytest.mark.alone
def test_python_busy_and_closed() -> None:
    bound = compiled(slow, (1024,)).bind()
    caller = threading.Thread(target=bound)
    caller.start()
    time.sleep(0.2)
    with pytest.raises(cyxla.BusyError, match="another thread is in a call"):
        bound()
    caller.join()
    np.testing.assert_allclose(bound.outputs[0], jax.jit(slow)(bound.inputs[0]), rtol=1e-5)
    with bound:
        pass
    with pytest.raises(cyxla.InvalidArgumentError, match="closed"):
        bound()


@pytest.mark.parametrize(
    ("inputs", "outputs", "error", "message"),
    [
        ("two", None, cyxla.InvalidArgumentError, r"bind: inputs must hold 1 arrays"),
        ("f64", None, cyxla.DtypeError, r"bind: inputs\[0\]: expected float32\[3\]"),
        ("shape", None, cyxla.InvalidArgumentError, r"bind: inputs\[0\]: expected shape"),
        ("strided", None, cyxla.InvalidArgumentError, r"inputs\[0\]: expected a C-contiguous"),
        ("list", None, TypeError, r"bind: inputs\[0\] must be a numpy.ndarray"),
        ("array", None, TypeError, r"bind: inputs must be a sequence"),
        (None, "read-only", cyxla.InvalidArgumentError, r"outputs\[0\]: expected a writeable"),
        (None, "none", cyxla.InvalidArgumentError, r"bind: outputs must hold 1 arrays"),
    ],
)
def test_python_bind_refuses_bad_arrays(
    executable: cyxla.Executable, inputs: str | None, outputs: str | None, error: type, message: str
) -> None:
    good = np.zeros(3, np.float32)
    bad_inputs = {
        "two": [good, good],
        "f64": [np.zeros(3)],
        "shape": [np.zeros(4, np.float32)],
        "strided": [np.zeros(6, np.float32)[::2]],
        "list": [[0.0, 0.0, 0.0]],
        "array": good,
    }
    read_only = np.zeros(3, np.float32)
    read_only.flags.writeable = False
    bad_outputs = {"read-only": [read_only], "none": []}
    with pytest.raises(error, match=message):
        executable.bind(
            bad_inputs[inputs] if inputs else None, bad_outputs[outputs] if outputs else None
        )


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("two inputs", "bind: the program takes 1 inputs and 1 outputs, given 2 and 1"),
        ("strided input", r"bind: inputs\[0\] must be a C-contiguous array of f32\[3\]"),
        ("read-only output", r"bind: outputs\[0\] must be a writable C-contiguous array"),
        ("short input", r"bind: inputs\[0\] must be a C-contiguous array of f32\[3\]"),
    ],
)
def test_the_internal_bind_checks_its_arrays(
    executable: cyxla.Executable, case: str, message: str
) -> None:
    """Executable.bind checks first; the core's BoundCall behind it refuses bad arrays
    itself instead of binding memory it would read or write past."""
    x, y = np.zeros(3, np.float32), np.zeros(3, np.float32)
    inputs, outputs = [x], [y]
    if case == "two inputs":
        inputs = [x, x]
    elif case == "strided input":
        inputs = [np.zeros(6, np.float32)[::2]]
    elif case == "read-only output":
        y.flags.writeable = False
    elif case == "short input":
        inputs = [x[:2]]
    with pytest.raises(cyxla.InvalidArgumentError, match=message):
        _core.BoundCall(executable._native, inputs, outputs)


# ---------------------------------------------------------------------------- Cython


def test_cython_bound_call_matches_jax(tmp_path: Path) -> None:
    source = Path(__file__).parent / "native" / "bound_loop.pyx"
    headers, pxd = cyxla.get_include()
    c_file = tmp_path / "bound_loop.c"
    subprocess.run(
        [sys.executable, "-m", "cython", "-I", pxd, str(source), "-o", str(c_file)], check=True
    )
    module = tmp_path / f"bound_loop{sysconfig.get_config_var('EXT_SUFFIX')}"
    include = sysconfig.get_paths()["include"]
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-O1", f"-I{include}", f"-I{headers}", str(c_file), "-o",
         str(module)],
        check=True,
    )  # fmt: skip
    specification = importlib.util.spec_from_file_location("bound_loop", module)
    assert specification is not None and specification.loader is not None
    bound_loop = importlib.util.module_from_spec(specification)
    specification.loader.exec_module(bound_loop)
    executable = compiled(sin2, (3,))
    x = np.array([0.1, 0.2, 0.3], np.float32)
    expected = x.copy()
    for _ in range(3):
        expected = np.asarray(jax.jit(sin2)(expected))
    assert bound_loop.iterate(executable.handle, x, 3) == OK
    np.testing.assert_allclose(x, expected, rtol=1e-6)
    assert bound_loop.iterate(compiled(sin2, (4,)).handle, x, 1) == INVALID_ARGUMENT
