"""Exports the standalone examples' program: a 20-layer MLP (16x64 input, 64x64 weights
baked in), with inputs and the outputs jax.jit computes for them, for the applications
to check every result against.

    python export.py DIRECTORY      writes mlp.cyxla, inputs.f32 and expected.f32
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
    return program


if __name__ == "__main__":
    export(Path(sys.argv[1]), lambda program, path: program.save(path))
