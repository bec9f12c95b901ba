"""The downstream package against jax.jit: same numbers, from Cython and from C++ threads."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla
import cyxla_downstream


def step(x: jax.Array) -> jax.Array:
    return jnp.cos(x) * 0.9 + 0.1 * x


@pytest.fixture(scope="module")
def executable() -> cyxla.Executable:
    program = cyxla.lower(step, [jax.ShapeDtypeStruct((16,), jnp.float32)])
    return cyxla.compile_program(program)[0]


def test_cython_loop_matches_jax(executable: cyxla.Executable) -> None:
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    expected = x
    jitted = jax.jit(step)
    for _ in range(100):
        expected = jitted(expected)
    np.testing.assert_array_equal(cyxla_downstream.iterate(executable, x, 100), expected)


def test_cython_loop_zero_steps_returns_input(executable: cyxla.Executable) -> None:
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(cyxla_downstream.iterate(executable, x, 0), x)


def test_cython_loop_rejects_wrong_size(executable: cyxla.Executable) -> None:
    with pytest.raises(ValueError, match="x has 32 bytes, the program takes 64"):
        cyxla_downstream.iterate(executable, np.zeros(8, np.float32), 1)


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_thread_pool_matches_jax(executable: cyxla.Executable, threads: int) -> None:
    rows = np.random.default_rng(threads).standard_normal((1000, 16)).astype(np.float32)
    expected = np.asarray(jax.jit(jax.vmap(step))(rows))
    np.testing.assert_array_equal(cyxla_downstream.map_rows(executable, rows, threads), expected)


def test_thread_pool_rejects_ragged_rows(executable: cyxla.Executable) -> None:
    with pytest.raises(ValueError, match="whole inputs of 64 bytes"):
        cyxla_downstream.thread_pool.map_rows_into(
            executable, np.zeros(10, np.float32), np.zeros(10, np.float32), 2
        )
