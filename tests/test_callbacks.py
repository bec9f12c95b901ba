"""Python host callbacks (jax.pure_callback, io_callback, jax.debug.callback and print, and
Equinox's runtime checks through them) in programs that cyxla lowers, against jax.jit:
the Equinox ecosystem's solvers, errors that reach Python and C callers, vmap, loops,
native threads, and the refusals where the callbacks' process is not there."""

from __future__ import annotations

import ctypes
import dataclasses
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx
import pytest
import scipy.special

import cyxla as cx
from cyxla import _core
from cyxla._ffi import callbacks as _callbacks

from program_file_writer import replace_metadata
from support import PJRT, Error, Input, ProgramSpec, compile_c, table

TARGET = _core.PYTHON_CALLBACK_TARGET
NATIVE = Path(__file__).parent / "native"
F32 = int(cx.ElementType.F32)
RNG = np.random.default_rng(21)
Y0 = RNG.normal(size=3).astype(np.float32)
MATRIX = (RNG.normal(size=(4, 4)) + 4 * np.eye(4)).astype(np.float32)
VECTOR = RNG.normal(size=4).astype(np.float32)


@pytest.fixture(scope="module")
def native_library(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """tests/native/execute_threads.c, called through ctypes (which releases the GIL, as a
    C caller of a program with callbacks must not hold it)."""
    output = tmp_path_factory.mktemp("callbacks") / "libexecute_threads.so"
    return ctypes.CDLL(str(compile_c(NATIVE / "execute_threads.c", output, shared=True)))


def compiled(fn: Callable[..., Any], *args: Any) -> tuple[cx.Program, cx.Executable]:
    program = cx.lower(fn, list(args))
    return program, cx.compile_program(program)[0]


# ------------------------------------------------------- the Equinox ecosystem's solvers


def ode(y0: jax.Array) -> jax.Array:
    term = diffrax.ODETerm(lambda t, y, args: -0.5 * y + jnp.sin(t))
    solution = diffrax.diffeqsolve(
        term,
        diffrax.Tsit5(),
        t0=0.0,
        t1=5.0,
        dt0=0.1,
        y0=y0,
        stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5),
        saveat=diffrax.SaveAt(t1=True),
    )
    return solution.ys[-1]


def ode_gradient(y0: jax.Array) -> jax.Array:
    return jax.grad(lambda y: jnp.sum(ode(y) ** 2))(y0)


def lu_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    return lx.linear_solve(lx.MatrixLinearOperator(a), b, lx.LU()).value


def cg_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    spd = a @ a.T + 4 * jnp.eye(a.shape[0])
    operator = lx.MatrixLinearOperator(spd, lx.positive_semidefinite_tag)
    return lx.linear_solve(operator, b, lx.CG(rtol=1e-6, atol=1e-6)).value


def bfgs(x0: jax.Array) -> jax.Array:
    def loss(x: jax.Array, _: Any) -> jax.Array:
        return jnp.sum((x - 1.0) ** 2) + 0.1 * jnp.sum(x**4)

    return optx.minimise(loss, optx.BFGS(rtol=1e-6, atol=1e-6), x0).value


def newton(x0: jax.Array) -> jax.Array:
    return optx.root_find(lambda x, _: x**3 - 2.0, optx.Newton(rtol=1e-6, atol=1e-6), x0).value


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (ode, (Y0,)),
        (ode_gradient, (Y0,)),
        (lu_solve, (MATRIX, VECTOR)),
        (cg_solve, (MATRIX, VECTOR)),
        (bfgs, (Y0,)),
        (newton, (Y0 + 2.0,)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_equinox_solvers_match_jax(fn: Callable[..., Any], args: tuple[np.ndarray, ...]) -> None:
    program, executable = compiled(fn, *args)
    # Equinox's runtime checks are in the program, as cyxla's callbacks.
    assert TARGET in program.custom_calls
    assert any(name.startswith("equinox.") for name in program.callbacks)
    (got,) = executable.run(list(args))
    np.testing.assert_allclose(got, jax.jit(fn)(*args), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------- an error_if that fires


def guarded(x: jax.Array) -> jax.Array:
    return eqx.error_if(jnp.sin(x) * 2, x > 10.0, "x is too large")


@pytest.fixture(scope="module")
def guard() -> cx.Executable:
    return compiled(guarded, jax.ShapeDtypeStruct((3,), jnp.float32))[1]


def test_an_error_if_that_does_not_fire_costs_nothing_of_the_result(guard: cx.Executable) -> None:
    (got,) = guard.run([Y0])
    np.testing.assert_array_equal(got, jax.jit(guarded)(Y0))


def test_an_error_if_that_fires_reaches_run_with_its_message(guard: cx.Executable) -> None:
    with pytest.raises(cx.PjrtError, match=r"_EquinoxRuntimeError: x is too large"):
        guard.run([Y0 + 100.0])
    with pytest.raises(Exception, match="x is too large"):  # as JAX's own runtime fails
        jax.block_until_ready(jax.jit(guarded)(Y0 + 100.0))
    (again,) = guard.run([Y0])  # the executable runs on after an error
    np.testing.assert_array_equal(again, jax.jit(guarded)(Y0))


def test_an_error_if_that_fires_reaches_a_bound_call(guard: cx.Executable) -> None:
    bound = guard.bind()
    bound.inputs[0][:] = Y0 + 100.0
    with pytest.raises(cx.PjrtError, match="x is too large"):
        bound()
    bound.inputs[0][:] = Y0
    np.testing.assert_array_equal(bound()[0], jax.jit(guarded)(Y0))


def test_an_error_if_that_fires_reaches_c_execute_and_bound_calls(guard: cx.Executable) -> None:
    spec, error = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec)), Error()
    assert table().get_spec(guard.handle, ctypes.byref(spec), ctypes.byref(error)) == 0
    x = Y0 + 100.0
    out = np.zeros(3, np.float32)
    inputs = (Input * 1)(Input(x.ctypes.data, F32, x.nbytes))
    outputs = (ctypes.c_void_p * 1)(out.ctypes.data)
    status = table().execute(ctypes.byref(spec), inputs, 1, outputs, 1, ctypes.byref(error))
    assert status == PJRT
    assert "x is too large" in error.message.decode()
    bound = ctypes.c_uint64(0)
    assert table().bind(ctypes.byref(spec), inputs, 1, outputs, 1, ctypes.byref(bound), None) == 0
    error = Error()
    assert table().call_bound(bound, ctypes.byref(error)) == PJRT
    assert "x is too large" in error.message.decode()
    x[:] = Y0  # the bound input: the next call does not fire
    assert table().call_bound(bound, ctypes.byref(error)) == 0
    np.testing.assert_array_equal(out, jax.jit(guarded)(Y0))
    table().unbind(bound, None)
    table().release_spec(ctypes.byref(spec))


def test_an_error_if_that_fires_reaches_a_compiled_c_caller(
    guard: cx.Executable, native_library: ctypes.CDLL
) -> None:
    message = ctypes.create_string_buffer(512)
    out = np.zeros(3, np.float32)

    def execute(x: np.ndarray) -> int:
        return native_library.execute_once(
            ctypes.c_void_p(ctypes.addressof(table())), ctypes.c_uint64(guard.handle),
            ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_size_t(3),
            message, ctypes.c_size_t(512),
        )  # fmt: skip

    assert execute(Y0 + 100.0) == PJRT
    assert "_EquinoxRuntimeError: x is too large" in message.value.decode()
    assert execute(Y0) == 0
    np.testing.assert_array_equal(out, jax.jit(guarded)(Y0))


def test_an_error_if_that_fires_in_a_batch_reaches_the_caller() -> None:
    executable, _ = cx.compile_batched(
        cx.lower_batched(guarded, [jax.ShapeDtypeStruct((3,), jnp.float32)], batch_sizes=(4,))
    )
    points = np.stack([Y0, Y0 + 1.0, Y0 - 1.0])
    (got,) = executable.run([points])
    np.testing.assert_array_equal(got, jax.jit(jax.vmap(guarded))(points))
    points[1, 0] = 100.0
    with pytest.raises(cx.PjrtError, match="x is too large"):
        executable.run([points])


# ------------------------------------------------------ the callbacks of JAX's own API


def test_debug_print_prints(capsys: pytest.CaptureFixture[str]) -> None:
    def printed(x: jax.Array) -> jax.Array:
        jax.debug.print("x = {x}, sum = {s}", x=x, s=x.sum())
        return x * 2

    x = np.array([1.0, 2.5, -3.0], np.float32)
    jax.block_until_ready(jax.jit(printed)(x))
    expected = capsys.readouterr().out
    (got,) = compiled(printed, x)[1].run([x])
    assert capsys.readouterr().out == expected == "x = [ 1.   2.5 -3. ], sum = 0.5\n"
    np.testing.assert_array_equal(got, x * 2)


def test_pure_callback_calls_scipy() -> None:
    def gammaln(x: jax.Array) -> jax.Array:
        spec = jax.ShapeDtypeStruct(x.shape, x.dtype)
        y = jax.pure_callback(lambda a: scipy.special.gammaln(a).astype(a.dtype), spec, x)
        return y + jnp.cos(x)

    x = np.linspace(0.5, 7.0, 11, dtype=np.float32)
    (got,) = compiled(gammaln, x)[1].run([x])
    np.testing.assert_allclose(got, jax.jit(gammaln)(x), rtol=1e-6)


@pytest.mark.parametrize("vmap_method", ["sequential", "broadcast_all", "expand_dims"])
def test_callbacks_under_vmap(vmap_method: str) -> None:
    calls: list[tuple[int, ...]] = []

    def host(a: np.ndarray) -> np.ndarray:
        calls.append(a.shape)
        return np.tanh(a) * 3

    def fn(x: jax.Array) -> jax.Array:
        spec = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return jax.pure_callback(host, spec, x, vmap_method=vmap_method) + 1

    batched = jax.vmap(fn)
    x = RNG.normal(size=(5, 3)).astype(np.float32)
    expected = np.asarray(jax.jit(batched)(x))
    jax_calls, calls[:] = list(calls), []
    (got,) = compiled(batched, x)[1].run([x])
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert calls == jax_calls


def test_callbacks_in_a_while_loop_run_each_iteration() -> None:
    seen: list[float] = []

    def fn(x: jax.Array) -> jax.Array:
        def body(carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
            i, v = carry
            jax.debug.callback(lambda value: seen.append(float(value)), v)
            step = jax.pure_callback(
                lambda a: np.float32(np.sqrt(a + 1.0)), jax.ShapeDtypeStruct((), jnp.float32), v
            )
            return i + 1, v + step

        return jax.lax.while_loop(lambda c: c[1] < 20.0, body, (0, x))[1]

    x = np.float32(0.5)
    expected = float(jax.jit(fn)(x))
    jax_seen, seen[:] = list(seen), []
    (got,) = compiled(fn, x)[1].run([x])
    assert float(got) == expected
    assert seen == jax_seen and len(seen) > 3


def test_callbacks_in_a_scan_and_under_a_custom_derivative() -> None:
    @jax.custom_jvp
    def host_sin(x: jax.Array) -> jax.Array:
        return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    @host_sin.defjvp
    def host_sin_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return host_sin(x), jnp.cos(x) * t

    def fn(x: jax.Array) -> tuple[jax.Array, jax.Array]:
        def step(carry: jax.Array, _: Any) -> tuple[jax.Array, jax.Array]:
            return carry + host_sin(carry), carry

        last, history = jax.lax.scan(step, x, None, length=4)
        return last, jax.grad(lambda v: jnp.sum(host_sin(v) ** 2))(x) + history.sum(0)

    x = np.array([0.3, -1.2, 2.0], np.float32)
    got = compiled(fn, x)[1].run([x])
    for ours, theirs in zip(got, jax.jit(fn)(x), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_arguments_a_callback_keeps_stay_as_they_were() -> None:
    """The program reuses its buffers after a callback returns: what the callback kept
    (JAX places aligned arrays on its CPU device without copying) must not change."""
    kept: list[jax.Array] = []

    def fn(x: jax.Array) -> jax.Array:
        y = jnp.sin(x) * 2
        jax.debug.callback(kept.append, y)
        return y + 1

    executable = compiled(fn, jax.ShapeDtypeStruct((4096,), jnp.float32))[1]
    points = [np.full(4096, i, np.float32) for i in range(4)]
    for x in points:
        executable.run([x])
    expected = [jax.jit(lambda v: jnp.sin(v) * 2)(x) for x in points]
    for ours, theirs in zip(kept, expected, strict=True):
        np.testing.assert_array_equal(np.asarray(ours), theirs)


def test_io_callback_runs_for_its_effect() -> None:
    from jax.experimental import io_callback

    log: list[float] = []

    def fn(x: jax.Array) -> jax.Array:
        io_callback(lambda a: log.append(float(a.sum())), None, x)
        return x + 1

    x = np.arange(3, dtype=np.float32)
    (got,) = compiled(fn, x)[1].run([x])
    np.testing.assert_array_equal(got, x + 1)
    assert log == [3.0]


def test_checkify_checks_outside_checkify_raise_at_run() -> None:
    from jax.experimental import checkify

    def positive_log(x: jax.Array) -> jax.Array:
        checkify.check(jnp.all(x > 0), "x must be positive, got {v}", v=x[0])
        return jnp.log(x)

    def fn(x: jax.Array) -> jax.Array:
        error, y = checkify.checkify(positive_log)(x)
        checkify.check_error(error)
        return y

    x = np.array([1.0, 2.0, 3.0], np.float32)
    jax.config.update("jax_experimental_unsafe_xla_runtime_errors", True)
    try:
        executable = compiled(fn, x)[1]
        expected = jax.jit(fn)(x)
    finally:
        jax.config.update("jax_experimental_unsafe_xla_runtime_errors", False)
    np.testing.assert_allclose(executable.run([x])[0], expected, rtol=1e-6)
    with pytest.raises(cx.PjrtError, match=r"x must be positive, got -1.0"):
        executable.run([-x])


def test_ordered_callbacks_are_refused_at_lower() -> None:
    from jax.experimental import io_callback

    def fn(x: jax.Array) -> jax.Array:
        io_callback(print, None, x, ordered=True)
        return x + 1

    with pytest.raises(cx.UnsupportedProgramError, match=r"in order .*ordered=False"):
        cx.lower(fn, [np.zeros(3, np.float32)])


# --------------------------------------------------------------------- failing callbacks


def test_a_callback_that_raises_fails_the_call_with_its_type_and_message() -> None:
    def bad(a: np.ndarray) -> np.ndarray:
        raise KeyError(f"no entry {a[0]:g}")

    def fn(x: jax.Array) -> jax.Array:
        return jax.pure_callback(bad, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    executable = compiled(fn, np.zeros(2, np.float32))[1]
    with pytest.raises(cx.PjrtError, match=r"bad raised KeyError: 'no entry 7'"):
        executable.run([np.full(2, 7.0, np.float32)])


def test_an_unknown_callback_id_fails_the_call() -> None:
    """A program whose callback id no lower of this process made (a hand-made one)."""
    message = _callbacks.dispatch(2**63, [], [])
    assert message is not None and "runs only in the process that lowered it" in message


def test_a_callback_with_a_wrong_result_fails_the_call() -> None:
    def fn(x: jax.Array) -> jax.Array:
        return jax.pure_callback(lambda a: a[:1], jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    executable = compiled(fn, np.zeros(2, np.float32))[1]
    with pytest.raises(cx.PjrtError, match=r"result 0 of the callback is float32\[1\]"):
        executable.run([np.ones(2, np.float32)])


# ------------------------------------------------------------------------ native threads


def sin_on_the_host(x: jax.Array) -> jax.Array:
    """A callback that fires on every call: each takes the GIL."""
    spec = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.pure_callback(np.sin, spec, x, vmap_method="sequential") * 2


@pytest.mark.parametrize("kind", ["bound", "execute"])
def test_eight_native_threads_call_back_at_once(
    kind: str, tmp_path_factory: pytest.TempPathFactory, native_library: ctypes.CDLL
) -> None:
    if kind == "bound":
        output = tmp_path_factory.mktemp("callbacks") / "libbound_calls.so"
        library = ctypes.CDLL(str(compile_c(NATIVE / "bound_calls.c", output, shared=True)))
        function = library.bound_threads
    else:
        function = native_library.execute_threads
    function.restype = ctypes.c_long
    executable = compiled(sin_on_the_host, np.zeros(3, np.float32))[1]
    rows = RNG.normal(size=(37, 3)).astype(np.float32)
    expected = np.asarray(jax.jit(jax.vmap(sin_on_the_host))(rows))
    wrong = function(
        ctypes.c_void_p(ctypes.addressof(table())), ctypes.c_uint64(executable.handle),
        ctypes.c_void_p(rows.ctypes.data), ctypes.c_void_p(expected.ctypes.data),
        ctypes.c_size_t(37), ctypes.c_size_t(3), ctypes.c_size_t(200), ctypes.c_size_t(8),
    )  # fmt: skip
    assert wrong == 0


# ------------------------------------------------------ only in the process that lowered


def test_jax_jit_lowers_callbacks_its_own_way_meanwhile() -> None:
    """cyxla's lowering rules are its exports' own: jax.jit in another thread, while cyxla
    lowers, and after, still lowers JAX's host callback."""
    x = jax.ShapeDtypeStruct((3,), jnp.float32)
    texts: list[str] = []
    start = threading.Barrier(2)

    def jit_lowering() -> None:
        start.wait()
        for _ in range(5):
            texts.append(jax.jit(sin_on_the_host).lower(x).as_text())

    thread = threading.Thread(target=jit_lowering)
    thread.start()
    start.wait()
    programs = [cx.lower(sin_on_the_host, [x]) for _ in range(5)]
    thread.join()
    texts.append(jax.jit(sin_on_the_host).lower(x).as_text())
    assert all("xla_ffi_python_cpu_callback" in t and TARGET not in t for t in texts)
    assert all(TARGET in p.custom_calls for p in programs)


@pytest.fixture(scope="module")
def guarded_program() -> cx.Program:
    return cx.lower(guarded, [jax.ShapeDtypeStruct((3,), jnp.float32)])


def test_save_and_pickle_refuse_a_program_with_callbacks(
    guarded_program: cx.Program, tmp_path: Path
) -> None:
    with pytest.raises(cx.UnsupportedProgramError, match=r"equinox\..*raises.*EQX_ON_ERROR=nan"):
        guarded_program.save(tmp_path / "guarded.cyxla")
    assert not list(tmp_path.iterdir())
    with pytest.raises(cx.UnsupportedProgramError, match="calls back into Python"):
        pickle.dumps(guarded_program)
    with pytest.raises(cx.UnsupportedProgramError, match="store_lowered: guarded calls back"):
        cx.store_lowered(cx.cache_key("guarded", [Y0]), guarded_program)
    unnamed = dataclasses.replace(guarded_program, callbacks=())
    with pytest.raises(cx.UnsupportedProgramError, match="a Python function"):
        unnamed.save(tmp_path / "unnamed.cyxla")


def test_export_refuses_a_function_with_callbacks(tmp_path: Path) -> None:
    (tmp_path / "printing.py").write_text(
        "import jax\n\ndef f(x):\n    jax.debug.print('x = {}', x)\n    return x + 1\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "cyxla", "export", "printing:f", "--arg", "f32[3]", "-o", "f.cyxla"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 1
    assert "calls back into Python (jax.debug.print('x = {}'))" in result.stderr
    assert not (tmp_path / "f.cyxla").exists()


def test_the_native_loader_refuses_a_file_that_calls_back(tmp_path: Path) -> None:
    program = cx.lower(jnp.sin, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    path = tmp_path / "sin.cyxla"
    program.save(path)
    path.write_bytes(
        replace_metadata(path.read_bytes(), "cyxla_version", f"custom_call {TARGET}\ncyxla_version")
    )
    cx.initialize(platform="cpu")  # the runtime that the C caller's open_runtime shares
    handle, error = ctypes.c_uint64(0), Error()
    assert table().open_runtime(None, ctypes.byref(error)) == 0, error.message
    try:
        status = table().load_program(str(path).encode(), ctypes.byref(handle), ctypes.byref(error))
    finally:
        table().close_runtime()
    assert status != 0 and handle.value == 0
    assert f"calls back into Python (the custom-call target '{TARGET}')" in error.message.decode()


def test_the_disk_cache_keeps_no_executable_with_callbacks(
    guarded_program: cx.Program, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(cx.CACHE_ENVIRONMENT_VARIABLE, str(cache))
    for _ in range(2):
        executable, statistics = cx.compile_program(guarded_program)
        assert not statistics.cache_hit and statistics.cache_error is None
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_file()]
    (got,) = executable.run([Y0])
    np.testing.assert_array_equal(got, jax.jit(guarded)(Y0))
    # The same function without callbacks is stored, and found the second time.
    plain = cx.lower(jnp.sin, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    hits = [cx.compile_program(plain)[1].cache_hit for _ in range(2)]
    assert hits == [False, True]
