"""Executable.low_level_callable: a program as a scipy.LowLevelCallable for quad's and
generic_filter's C signatures, against the same integrals and filters with Python
functions and jax.jit; the programs it refuses, the callable's lifetime, threads."""

from __future__ import annotations

import ctypes
import gc
import threading
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy
from scipy import integrate, ndimage

import cyxla as cx

from support import run_python, x64_mode


def compiled(fn, shape: tuple[int, ...], dtype) -> cx.Executable:
    """`fn` lowered for one input of `shape` and `dtype` (x64 on for float64) and compiled."""
    with x64_mode(np.dtype(dtype) == np.float64):
        program = cx.lower(fn, [jax.ShapeDtypeStruct(shape, dtype)])
    return cx.compile_program(program)[0]


def integrand(x: jax.Array) -> jax.Array:
    return jnp.exp(-(x[0] ** 2)) * jnp.cos(3 * x[0])


def python_integrand(t: float) -> float:
    return np.exp(-(t**2)) * np.cos(3 * t)


def surface(x: jax.Array) -> jax.Array:
    return jnp.exp(-(x[0] ** 2) - x[1] ** 2) * (1 + x[0] * x[1])


def python_surface(a: float, b: float) -> float:
    return np.exp(-(a**2) - b**2) * (1 + a * b)


WEIGHTS = np.linspace(-1.0, 2.0, 9)


def weighted_max(v: jax.Array) -> jax.Array:
    return jnp.max(v * jnp.asarray(WEIGHTS, v.dtype))


@pytest.fixture(scope="module")
def quad64() -> cx.Executable:
    return compiled(integrand, (1,), np.float64)


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((23, 31))


# ------------------------------------------------------------------ quad


def test_quad_matches_the_python_integrand(quad64: cx.Executable) -> None:
    callable_ = quad64.low_level_callable("quad")
    assert isinstance(callable_, scipy.LowLevelCallable)
    assert callable_.signature == "double (int, double *, void *)"
    ours = integrate.quad(callable_, -np.inf, np.inf, full_output=1)
    theirs = integrate.quad(python_integrand, -np.inf, np.inf, full_output=1)
    exact = np.sqrt(np.pi) * np.exp(-9 / 4)
    assert ours[0] == pytest.approx(theirs[0], abs=max(ours[1], theirs[1]))
    assert ours[0] == pytest.approx(exact, abs=1e-8)
    assert abs(ours[2]["neval"] - theirs[2]["neval"]) <= max(2, theirs[2]["neval"] // 50)


def test_quad_matches_jax_jit_called_from_python(quad64: cx.Executable) -> None:
    """The same program, the same doubles in: quad takes the same path to the same sum."""
    with x64_mode(True):
        jitted = jax.jit(integrand)
        ours = integrate.quad(quad64.low_level_callable("quad"), 0, 4, full_output=1)
        theirs = integrate.quad(lambda t: float(jitted(np.array([t]))), 0, 4, full_output=1)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-13)
    assert ours[2]["neval"] == theirs[2]["neval"]


def test_quad_passes_args_after_the_variable() -> None:
    """quad(f, a, b, args=(k,)) evaluates f at x = [t, k]: the program takes shape (2,)."""
    executable = compiled(lambda x: jnp.sin(x[1] * x[0]) / (1 + x[0]), (2,), np.float64)
    ours = integrate.quad(executable.low_level_callable("quad"), 0, 2, args=(3.0,))
    theirs = integrate.quad(lambda t, k: np.sin(k * t) / (1 + t), 0, 2, args=(3.0,))
    assert ours[0] == pytest.approx(theirs[0], rel=1e-12)


def test_nquad_and_dblquad_over_two_variables() -> None:
    executable = compiled(surface, (2,), np.float64)
    callable_ = executable.low_level_callable("quad")
    ranges = [(0, 1), (-1, 2)]
    ours = integrate.nquad(callable_, ranges, full_output=True)
    theirs = integrate.nquad(python_surface, ranges, full_output=True)
    assert ours[0] == pytest.approx(theirs[0], abs=max(ours[1], theirs[1]))
    assert abs(ours[2]["neval"] - theirs[2]["neval"]) <= max(2, theirs[2]["neval"] // 50)
    # dblquad integrates f(y, x): the program's x[0] is the inner variable.
    ours_dbl = integrate.dblquad(callable_, -1, 2, 0, 1)
    assert ours_dbl[0] == pytest.approx(theirs[0], rel=1e-10)


def test_a_float32_program_rounds_the_doubles() -> None:
    executable = compiled(integrand, (1,), np.float32)
    ours = integrate.quad(executable.low_level_callable("quad"), -6, 6, epsabs=1e-6)
    theirs = integrate.quad(python_integrand, -6, 6)
    assert ours[0] == pytest.approx(theirs[0], abs=1e-5)


def test_another_n_evaluates_to_nan(quad64: cx.Executable) -> None:
    """The program takes one value; quad with args hands it two, so every evaluation is
    NaN (the callback cannot raise), which quad returns."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, _ = integrate.quad(quad64.low_level_callable("quad"), 0, 1, args=(2.0,))
    assert np.isnan(value)


# ------------------------------------------------------------------ generic_filter


def test_generic_filter_matches_the_python_function(image: np.ndarray) -> None:
    executable = compiled(weighted_max, (9,), np.float64)
    callable_ = executable.low_level_callable("ndimage")
    assert callable_.signature == "int (double *, intptr_t, double *, void *)"
    ours = ndimage.generic_filter(image, callable_, size=3)
    theirs = ndimage.generic_filter(image, lambda v: np.max(v * WEIGHTS), size=3)
    np.testing.assert_array_equal(ours, theirs)


def test_generic_filter_with_a_footprint(image: np.ndarray) -> None:
    footprint = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], bool)
    executable = compiled(lambda v: jnp.sum(v * v) - v[2] * v[2], (5,), np.float64)
    ours = ndimage.generic_filter(
        image, executable.low_level_callable("ndimage"), footprint=footprint
    )
    theirs = ndimage.generic_filter(
        image, lambda v: np.sum(v * v) - v[2] * v[2], footprint=footprint
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-13)


def test_generic_filter_of_a_float32_program(image: np.ndarray) -> None:
    executable = compiled(weighted_max, (9,), np.float32)
    ours = ndimage.generic_filter(image, executable.low_level_callable("ndimage"), size=3)
    weights = WEIGHTS.astype(np.float32)
    theirs = ndimage.generic_filter(image, lambda v: np.max(v.astype(np.float32) * weights), size=3)
    np.testing.assert_array_equal(ours, theirs)


def test_another_filter_size_makes_scipy_raise(image: np.ndarray) -> None:
    executable = compiled(weighted_max, (9,), np.float64)
    with pytest.raises(RuntimeError):
        ndimage.generic_filter(image, executable.low_level_callable("ndimage"), size=2)


# ------------------------------------------------------------------ refusals


def _refusal(fn, shapes, kind: str = "quad", dtype=np.float32) -> str:
    program = cx.lower(fn, [jax.ShapeDtypeStruct(s, dtype) for s in shapes])
    executable = cx.compile_program(program)[0]
    with pytest.raises(cx.InvalidArgumentError) as caught:
        executable.low_level_callable(kind)
    return str(caught.value)


def test_two_inputs_are_refused() -> None:
    message = _refusal(lambda x, y: jnp.sum(x * y), [(2,), (2,)])
    assert "low_level_callable('quad')" in message
    assert (
        "expected one input, a 1-D float32 or float64 array of the integration variables" in message
    )
    assert "given (float32[2], float32[2])" in message


def test_a_2d_input_is_refused() -> None:
    message = _refusal(jnp.sum, [(3, 3)], kind="ndimage")
    assert "of the footprint's values (shape (n,)), given (float32[3,3])" in message


def test_a_scalar_input_is_refused() -> None:
    assert "given (float32[])" in _refusal(jnp.sin, [()])


def test_an_integer_input_is_refused() -> None:
    assert "given (int32[3])" in _refusal(jnp.sum, [(3,)], dtype=np.int32)


def test_an_output_that_is_not_a_scalar_is_refused() -> None:
    message = _refusal(jnp.sin, [(3,)], kind="ndimage")
    assert (
        "expected one output, a float32 or float64 scalar (shape ()), given (float32[3])" in message
    )


def test_two_outputs_are_refused() -> None:
    message = _refusal(lambda x: (x.sum(), x.max()), [(3,)])
    assert "given (float32[], float32[])" in message


def test_an_unknown_kind_is_refused(quad64: cx.Executable) -> None:
    with pytest.raises(
        cx.InvalidArgumentError, match="kind must be 'quad' or 'ndimage', given 'nquad'"
    ):
        quad64.low_level_callable("nquad")  # type: ignore[arg-type]


def test_the_core_refuses_what_does_not_fit() -> None:
    """The core's own check, under the Python one: the trampoline relies on it."""
    from cyxla import _core

    executable = compiled(jnp.sin, (3,), np.float32)
    with pytest.raises(
        cx.InvalidArgumentError, match=r"it takes \(f32\[3\]\) and returns \(f32\[3\]\)"
    ):
        _core._low_level_callable(executable._native, "quad")
    with pytest.raises(cx.InvalidArgumentError, match="kind must be"):
        _core._low_level_callable(executable._native, "other")


def test_a_program_that_calls_back_into_python_is_refused() -> None:
    def with_callback(x: jax.Array) -> jax.Array:
        spec = jax.ShapeDtypeStruct((), x.dtype)
        return jax.pure_callback(lambda v: np.sum(v).astype(v.dtype), spec, x)

    executable = compiled(with_callback, (2,), np.float32)
    with pytest.raises(cx.UnsupportedProgramError, match="calls back into Python"):
        executable.low_level_callable("quad")


# ------------------------------------------------------------------ lifetime and threads


def test_the_callable_outlives_the_executable() -> None:
    executable = compiled(integrand, (1,), np.float64)
    callable_ = executable.low_level_callable("quad")
    del executable
    gc.collect()
    value, _ = integrate.quad(callable_, -np.inf, np.inf)
    assert value == pytest.approx(np.sqrt(np.pi) * np.exp(-9 / 4), abs=1e-8)
    del callable_
    gc.collect()  # frees the bound call and, with it, the compiled program


def test_many_callables_of_one_executable_are_independent(quad64: cx.Executable) -> None:
    callables = [quad64.low_level_callable("quad") for _ in range(4)]
    values = [integrate.quad(c, 0, 1)[0] for c in callables]
    assert len(set(values)) == 1


def test_threads_share_one_callable(quad64: cx.Executable) -> None:
    """Evaluations from several threads wait for each other: every integral is right."""
    callable_ = quad64.low_level_callable("quad")
    expected = integrate.quad(python_integrand, 0, 3)[0]
    results: list[float] = []

    def integrate_many() -> None:
        for _ in range(20):
            results.append(integrate.quad(callable_, 0, 3)[0])

    threads = [threading.Thread(target=integrate_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 80
    assert results == pytest.approx([expected] * 80, rel=1e-12)


def _pointer(capsule: object, name: bytes) -> int:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get(capsule, name)


QUAD = ctypes.CFUNCTYPE(
    ctypes.c_double, ctypes.c_int, ctypes.POINTER(ctypes.c_double), ctypes.c_void_p
)
NDIMAGE = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.POINTER(ctypes.c_double),
    ctypes.c_ssize_t,
    ctypes.POINTER(ctypes.c_double),
    ctypes.c_void_p,
)


def test_the_c_functions_called_directly(quad64: cx.Executable) -> None:
    """The trampolines as SciPy calls them: a value, NaN or 0 for another n, and the
    result left alone on failure."""
    callable_ = quad64.low_level_callable("quad")
    quad = QUAD(_pointer(callable_.function, b"double (int, double *, void *)"))
    user_data = _pointer(callable_.user_data, b"cyxla.ScalarCall")
    x = (ctypes.c_double * 2)(0.5, 7.0)
    assert quad(1, x, user_data) == pytest.approx(python_integrand(0.5), rel=1e-14)
    assert np.isnan(quad(2, x, user_data))
    assert np.isnan(quad(0, x, user_data))

    executable = compiled(weighted_max, (9,), np.float64)
    callable_ = executable.low_level_callable("ndimage")
    function = NDIMAGE(_pointer(callable_.function, b"int (double *, intptr_t, double *, void *)"))
    user_data = _pointer(callable_.user_data, b"cyxla.ScalarCall")
    values = np.arange(9.0)
    buffer = values.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
    result = ctypes.c_double(-1.0)
    assert function(buffer, 9, ctypes.byref(result), user_data) == 1
    assert result.value == np.max(values * WEIGHTS)
    result.value = -1.0
    assert function(buffer, 8, ctypes.byref(result), user_data) == 0
    assert result.value == -1.0


def slow_square(x: jax.Array) -> jax.Array:
    """x[0] squared after some 100 microseconds of work, so that calls overlap."""
    y = jax.lax.fori_loop(0, 20_000, lambda i, v: jnp.sin(v) + x[0], x[0])
    return y * 0 + x[0] ** 2


def test_threads_without_the_gil_wait_for_each_other() -> None:
    """ctypes releases the GIL around a C call, so these evaluations do meet in the
    trampoline: each thread gets the value of its own point on every call."""
    executable = compiled(slow_square, (1,), np.float64)
    callable_ = executable.low_level_callable("quad")
    quad = QUAD(_pointer(callable_.function, b"double (int, double *, void *)"))
    user_data = _pointer(callable_.user_data, b"cyxla.ScalarCall")
    wrong: list[tuple[float, float]] = []

    def evaluate(t: float) -> None:
        x = (ctypes.c_double * 1)(t)
        for _ in range(100):
            got = quad(1, x, user_data)
            if got != t * t:
                wrong.append((t, got))

    threads = [threading.Thread(target=evaluate, args=(k + 1.0,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not wrong


def test_importing_cyxla_imports_no_scipy() -> None:
    result = run_python("import sys, cyxla; print('scipy' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
