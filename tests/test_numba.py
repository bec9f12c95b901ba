"""cyxla.numba: a bound call run by its handle from numba's nopython mode, against NumPy
and jax.jit (a fixed-point iteration, a sum over many points, threads), the statuses and
exceptions of its failures, and its lifetime."""

from __future__ import annotations

import gc
import threading
import time

import jax
import jax.numpy as jnp
import numba
import numpy as np
import pytest

import cyxla
import cyxla.numba
from cyxla.numba import OK, call_bound, check

from support import BUSY, INVALID_ARGUMENT, RELEASED, table

# float64 programs and references: x64 on for each test (conftest.py), never left on.
pytestmark = pytest.mark.usefixtures("x64")


@numba.njit(nogil=True)
def iterate(handle: int, x: np.ndarray, y: np.ndarray, steps: int) -> int:
    """x <- f(x), `steps` times, through the bound call of f over x and y."""
    for _ in range(steps):
        status = call_bound(handle)
        if status != OK:
            return status
        x[:] = y
    return OK


@numba.njit(nogil=True)
def sum_over(handle: int, x: np.ndarray, y: np.ndarray, points: np.ndarray) -> tuple[int, float]:
    """The sum of f(p) over the rows p of `points`."""
    total = 0.0
    for i in range(points.shape[0]):
        x[:] = points[i]
        status = call_bound(handle)
        if status != OK:
            return status, total
        total += y[()]
    return OK, total


@numba.njit(nogil=True)
def once(handle: int) -> int:
    return call_bound(handle)


def compiled(function, *specs: jax.ShapeDtypeStruct) -> cyxla.Executable:
    return cyxla.compile_program(cyxla.lower(function, list(specs)))[0]


def newton_cos(x: jax.Array) -> jax.Array:
    """One Newton step towards cos(x) = x."""
    return x - (jnp.cos(x) - x) / (-jnp.sin(x) - 1)


def energy(p: jax.Array) -> jax.Array:
    return jnp.sum(jnp.exp(-p * p)) + jnp.tanh(p[0] * p[1])


def test_a_fixed_point_iteration_matches_jax_and_numpy() -> None:
    start = np.linspace(-1.0, 1.0, 5)
    executable = compiled(newton_cos, jax.ShapeDtypeStruct((5,), jnp.float64))
    with executable.bind() as bound:
        (x,), (y,) = bound.inputs, bound.outputs
        x[:] = start
        check(iterate(bound.handle, x, y, 10))
        ours = y.copy()
    jitted, theirs = jax.jit(newton_cos), start
    expected = start
    for _ in range(10):
        theirs = np.asarray(jitted(theirs))
        expected = expected - (np.cos(expected) - expected) / (-np.sin(expected) - 1)
    np.testing.assert_allclose(ours, theirs, rtol=1e-15)
    np.testing.assert_allclose(ours, expected, rtol=1e-14)
    np.testing.assert_allclose(ours, 0.7390851332151607, rtol=1e-15)  # the Dottie number


def test_a_sum_over_many_points_matches_jax_vmap_and_numpy() -> None:
    points = np.random.default_rng(0).standard_normal((20_000, 2))
    executable = compiled(energy, jax.ShapeDtypeStruct((2,), jnp.float64))
    bound = executable.bind()
    status, total = sum_over(bound.handle, bound.inputs[0], bound.outputs[0], points)
    check(status)
    by_jax = float(np.sum(jax.vmap(energy)(points)))
    by_numpy = float(
        np.sum(np.exp(-points * points)) + np.sum(np.tanh(points[:, 0] * points[:, 1]))
    )
    assert total == pytest.approx(by_jax, rel=1e-12)
    assert total == pytest.approx(by_numpy, rel=1e-12)


def test_threads_each_with_a_bound_call_run_at_once() -> None:
    """nogil njit loops in two threads, each over its own bound call of one executable."""
    executable = compiled(newton_cos, jax.ShapeDtypeStruct((5,), jnp.float64))
    starts = [np.full(5, 0.1), np.full(5, 3.0)]
    bounds = [executable.bind() for _ in starts]
    statuses = [-1, -1]

    def work(k: int) -> None:
        bound = bounds[k]
        bound.inputs[0][:] = starts[k]
        statuses[k] = iterate(bound.handle, bound.inputs[0], bound.outputs[0], 2000)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [OK, OK]
    for bound in bounds:
        np.testing.assert_allclose(bound.outputs[0], 0.7390851332151607, rtol=1e-15)


@numba.njit(nogil=True)
def call_until(handle: int, stop: np.ndarray) -> int:
    """Calls, which may find the bound call busy, until stop[0] is set; the number that ran."""
    ran = 0
    while stop[0] == 0:
        if call_bound(handle) == OK:
            ran += 1
    return ran


def test_a_bound_call_in_use_returns_busy_and_check_raises_busy_error() -> None:
    executable = compiled(
        lambda x: jax.lax.fori_loop(0, 200, lambda i, v: jnp.sin(v) + 1e-3, x),
        jax.ShapeDtypeStruct((64,), jnp.float64),
    )
    bound = executable.bind()
    stop, ran = np.zeros(1, np.int64), []
    other = threading.Thread(target=lambda: ran.append(call_until(bound.handle, stop)))
    other.start()
    statuses, deadline = set(), time.monotonic() + 10
    while BUSY not in statuses and time.monotonic() < deadline:
        statuses.add(once(bound.handle))  # the other thread is in a call most of the time
    stop[0] = 1
    other.join()
    assert BUSY in statuses and ran[0] > 0
    with pytest.raises(cyxla.BusyError, match="another thread is in a call of the bound call"):
        check(BUSY)
    assert once(bound.handle) == OK  # free again


def test_python_and_numba_threads_are_never_in_one_bound_call_at_once() -> None:
    """Both doors count their calls of the handle in one place: a Python call made while a
    numba call is in the bound call is refused as busy, and the other way round."""
    function = jax.jit(lambda x: jax.lax.fori_loop(0, 200, lambda i, v: jnp.sin(v) + 1e-3, x))
    executable = compiled(function, jax.ShapeDtypeStruct((64,), jnp.float64))
    bound = executable.bind()
    stop = np.zeros(1, np.int64)
    other = threading.Thread(target=call_until, args=(bound.handle, stop))
    other.start()
    refused, deadline = 0, time.monotonic() + 10
    while refused == 0 and time.monotonic() < deadline:
        try:
            bound()  # the numba thread is in a call most of the time
        except cyxla.BusyError:
            refused += 1
    stop[0] = 1
    other.join()
    # A numba call may find a Python call in flight and be refused as well (two calls that
    # begin at once may both be): what cannot happen is two calls running together.
    assert refused > 0
    (out,) = bound()  # free again, and right
    np.testing.assert_array_equal(out, np.asarray(function(bound.inputs[0])))


def test_a_closed_or_collected_bound_call_returns_released() -> None:
    executable = compiled(jnp.sin, jax.ShapeDtypeStruct((3,), jnp.float64))
    bound = executable.bind()
    x, y, handle = bound.inputs[0], bound.outputs[0], bound.handle
    assert once(handle) == OK
    bound.close()
    status = iterate(handle, x, y, 3)
    assert status == RELEASED
    with pytest.raises(cyxla.InvalidArgumentError, match=f"no bound call has the handle {handle}"):
        check(status)
    collected = executable.bind()
    handle = collected.handle
    del collected
    gc.collect()
    assert once(handle) == RELEASED  # its arrays are gone; nothing touches them


def test_an_executable_handle_is_refused() -> None:
    executable = compiled(jnp.sin, jax.ShapeDtypeStruct((3,), jnp.float64))
    status = once(executable.handle)
    assert status == INVALID_ARGUMENT
    with pytest.raises(cyxla.InvalidArgumentError, match="is an executable's, not a bound call's"):
        check(status)


def test_wrong_arrays_are_refused_at_bind_naming_the_argument() -> None:
    executable = compiled(
        lambda p, w: jnp.sum(p * w),
        jax.ShapeDtypeStruct((2,), jnp.float64),
        jax.ShapeDtypeStruct((2,), jnp.float64),
    )
    right, wrong_shape = cyxla.zeros(2, np.float64), cyxla.zeros(3, np.float64)
    with pytest.raises(cyxla.InvalidArgumentError, match=r"inputs\[1\].*shape") as error:
        executable.bind([right, wrong_shape])
    assert str(error.value).endswith("expected shape float64[2], given float64[3]")
    with pytest.raises(cyxla.DtypeError, match=r"inputs\[0\].*float64.*float32"):
        executable.bind([cyxla.zeros(2, np.float32), right])
    with pytest.raises(cyxla.DtypeError, match=r"outputs\[0\]"):
        executable.bind([right, right], [cyxla.zeros((), np.float32)])


def test_check_maps_each_status() -> None:
    assert check(OK) is None
    # A status with no failure recorded on this thread says where its message went.
    with pytest.raises(cyxla.BusyError, match="recorded on the thread that called it"):
        check(BUSY)
    with pytest.raises(cyxla.DtypeError):
        check(2)
    with pytest.raises(cyxla.PjrtError):
        check(4)
    with pytest.raises(RuntimeError):
        check(5)
    with pytest.raises(cyxla.InvalidArgumentError, match="99 is not a status of a bound call"):
        check(99)


def test_a_python_bound_call_unbound_by_native_code_refuses_to_run() -> None:
    """A handle handed out can be unbound by C (cyxla_unbind); the Python BoundCall then
    raises instead of running freed state, and closing it later is harmless."""
    executable = compiled(jnp.sin, jax.ShapeDtypeStruct((3,), jnp.float64))
    bound = executable.bind()
    assert table().unbind(bound.handle, None) == OK
    with pytest.raises(cyxla.InvalidArgumentError, match="unbound"):
        bound()
    bound.close()


def test_the_function_pointer_is_one_c_function() -> None:
    """What numba compiles in: a ctypes pointer of int32_t (uint64_t), callable from
    Python too (ctypes releases the GIL)."""
    import ctypes

    assert call_bound.restype is ctypes.c_int32
    assert call_bound.argtypes == (ctypes.c_uint64,)
    assert ctypes.cast(call_bound, ctypes.c_void_p).value == cyxla._core._call_by_handle_address()
    executable = compiled(jnp.cos, jax.ShapeDtypeStruct((2,), jnp.float64))
    bound = executable.bind()
    bound.inputs[0][:] = [0.0, 1.0]
    assert call_bound(bound.handle) == OK
    np.testing.assert_array_equal(
        bound.outputs[0], np.asarray(jax.jit(jnp.cos)(np.array([0.0, 1.0])))
    )
    assert cyxla.numba.__all__ == ["OK", "call_bound", "check"]
