"""Exports the standalone examples' programs: a 20-layer MLP (16x64 input, 64x64 weights
baked in), with inputs and the outputs jax.jit computes for them, for the applications
to check every result against; and jnp.linalg.solve on a batch of systems, with NumPy's
solutions (solve.c runs it through cyxla's LAPACK handlers).

    python export.py DIRECTORY      writes mlp.cyxla, inputs.f32 and expected.f32, and
                                    solve.cyxla, solve_inputs.f32 and solve_expected.f32
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import cyxla as cx

LAYERS, BATCH, WIDTH = 20, 16, 64
#: The solve: SYSTEMS systems of ORDER equations each.
SYSTEMS, ORDER = 16, 8
#: Input sets the applications run, each checked against jax.jit.
SAMPLES = 64


def make_mlp() -> Callable[[jax.Array], jax.Array]:
    rng = np.random.default_rng(0)
    scale = 1.0 / np.sqrt(WIDTH)
    weights = [rng.standard_normal((WIDTH, WIDTH), np.float32) * scale for _ in range(LAYERS)]
    biases = [rng.standard_normal(WIDTH, np.float32) * 0.1 for _ in range(LAYERS)]

    def mlp(x: jax.Array) -> jax.Array:
        for w, b in zip(weights, biases, strict=True):
            x = jnp.tanh(x @ w + b)
        return x

    return mlp


def export(directory: Path, save: Callable[[cx.Program, Path], object]) -> cx.Program:
    """Lowers the MLP, saves it with `save(program, path)` and writes the test data."""
    directory.mkdir(parents=True, exist_ok=True)
    mlp = make_mlp()
    program = cx.lower(mlp, [jax.ShapeDtypeStruct((BATCH, WIDTH), jnp.float32)])
    save(program, directory / "mlp.cyxla")
    inputs = np.random.default_rng(1).standard_normal((SAMPLES, BATCH, WIDTH), np.float32)
    expected = np.stack([np.asarray(jax.jit(mlp)(x)) for x in inputs])
    inputs.tofile(directory / "inputs.f32")
    expected.tofile(directory / "expected.f32")
    export_solve(directory, save)
    return program


def solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """x with a @ x = b, for each system of the batch."""
    return jnp.linalg.solve(a, b[..., None])[..., 0]


def export_solve(directory: Path, save: Callable[[cx.Program, Path], object]) -> cx.Program:
    """Lowers jnp.linalg.solve for a batch of systems, saves it with `save(program, path)`
    and writes the systems (all A, then all b) and NumPy's solutions."""
    a_spec = jax.ShapeDtypeStruct((SYSTEMS, ORDER, ORDER), jnp.float32)
    b_spec = jax.ShapeDtypeStruct((SYSTEMS, ORDER), jnp.float32)
    program = cx.lower(solve, [a_spec, b_spec])
    save(program, directory / "solve.cyxla")
    rng = np.random.default_rng(2)
    a = rng.standard_normal((SYSTEMS, ORDER, ORDER)).astype(np.float32)
    a += ORDER * np.eye(ORDER, dtype=np.float32)  # well conditioned
    b = rng.standard_normal((SYSTEMS, ORDER)).astype(np.float32)
    expected = np.linalg.solve(a.astype(np.float64), b.astype(np.float64)[..., None])[..., 0]
    with open(directory / "solve_inputs.f32", "wb") as file:
        file.write(a.tobytes() + b.tobytes())
    expected.astype(np.float32).tofile(directory / "solve_expected.f32")
    return program


if __name__ == "__main__":
    export(Path(sys.argv[1]), lambda program, path: program.save(path))
