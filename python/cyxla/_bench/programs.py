"""The programs the benchmark times, keyed as in its JSON (`programs/<key>`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["PROGRAMS", "BenchProgram"]


@dataclass(frozen=True)
class BenchProgram:
    #: The program's name in the JSON and on the command line.
    key: str
    #: What it computes, on what shapes (the JSON's `description`).
    description: str
    function: Callable[..., jax.Array]
    #: Its inputs as a user has them: plain NumPy arrays (the paths place them: `paths.plain`).
    make_inputs: Callable[[np.random.Generator], list[np.ndarray]]
    #: The same expression written with NumPy's own functions (the `numpy` path).
    numpy: Callable[..., np.ndarray]


def _mlp(x: jax.Array, w1: jax.Array, b1: jax.Array, w2: jax.Array, b2: jax.Array) -> jax.Array:
    return jnp.tanh(x @ w1 + b1) @ w2 + b2


def _mlp_numpy(
    x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray
) -> np.ndarray:
    return np.tanh(x @ w1 + b1) @ w2 + b2


def _mlp_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    def normal(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32) / 8

    return [normal(64), normal(64, 64), normal(64), normal(64, 64), normal(64)]


PROGRAMS: tuple[BenchProgram, ...] = (
    BenchProgram(
        "sin3",
        "sin(x) * 2, x: f32[3]",
        lambda x: jnp.sin(x) * 2,
        lambda rng: [np.array([0.0, 1.0, 2.0], np.float32)],
        lambda x: np.sin(x) * 2,
    ),
    BenchProgram(
        "matmul100",
        "tanh(x @ w), x and w: f32[100,100]",
        lambda x, w: jnp.tanh(x @ w),
        lambda rng: [
            rng.standard_normal((100, 100), dtype=np.float32),
            rng.standard_normal((100, 100), dtype=np.float32) / 10,
        ],
        lambda x, w: np.tanh(x @ w),
    ),
    BenchProgram(
        "mlp64",
        "a small MLP, tanh(x @ w1 + b1) @ w2 + b2, x and b: f32[64], w: f32[64,64] (5 inputs)",
        _mlp,
        _mlp_inputs,
        _mlp_numpy,
    ),
    BenchProgram(
        "ew1m",
        "2 * x + 1, x: f32[1048576] (4 MiB in, 4 MiB out)",
        lambda x: 2 * x + 1,
        lambda rng: [rng.standard_normal(1 << 20, dtype=np.float32)],
        lambda x: 2 * x + 1,
    ),
)
