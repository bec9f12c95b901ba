"""Runs a saved cyxla program on the workers of a Dask cluster.

Exports a 20-layer MLP to a program file, starts a LocalCluster of two worker processes,
compiles the program once on each (the second worker's compile is a hit in the disk
cache the first one filled), splits a batch between them and checks the results against
jax.jit. Run it from this directory: `python mlp_on_dask.py`.

The workers only load and run: they never import JAX, and start in a fraction of the time
(docs/guide/standalone.md). Dask starts them by importing this script again, so it
imports JAX only inside the functions that lower the MLP or check the results.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import on_worker
from distributed import Client, LocalCluster

import cyxla as cx

if TYPE_CHECKING:
    import jax

LAYERS, WIDTH, ROWS = 20, 64, 16


def mlp(x: jax.Array, weights: list[jax.Array]) -> jax.Array:
    import jax.numpy as jnp

    for w in weights:
        x = jnp.tanh(x @ w)
    return x


def export(path: Path) -> None:
    """Lowers the MLP and saves it: the one step that needs the function's source."""
    import jax
    import jax.numpy as jnp

    x = jax.ShapeDtypeStruct((ROWS, WIDTH), jnp.float32)
    w = jax.ShapeDtypeStruct((WIDTH, WIDTH), jnp.float32)
    cx.lower(mlp, [x, [w] * LAYERS]).save(path)


def run_on_cluster(
    program: cx.Program, batch: np.ndarray, weights: list[np.ndarray], workers: int = 2
) -> tuple[np.ndarray, list[tuple[int, cx.CompileStatistics, bool]]]:
    """`program` run on every sample of `batch`, shared between the workers of a new
    LocalCluster; returns the results and each worker's (process id, compile statistics,
    whether it imported JAX)."""
    with (
        LocalCluster(
            n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        addresses = sorted(client.scheduler_info()["workers"])
        # One worker after the other, so that each later one finds the executable that the
        # first stored in the shared disk cache. A Program pickles as its file's bytes.
        compiles = [
            client.submit(on_worker.compile_here, program, workers=[a], pure=False).result()
            for a in addresses
        ]
        shares = np.array_split(batch, len(addresses))
        futures = [
            client.submit(on_worker.evaluate, program, share, *weights, workers=[a])
            for a, share in zip(addresses, shares, strict=True)
        ]
        return np.concatenate(client.gather(futures)), compiles


def main() -> None:
    path = Path("mlp.cyxla")
    export(path)
    program = cx.load_program(path)  # what a job that never saw `mlp` starts from
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal((WIDTH, WIDTH), np.float32) / 8 for _ in range(LAYERS)]
    batch = rng.standard_normal((8, ROWS, WIDTH), np.float32)
    results, compiles = run_on_cluster(program, batch, weights)
    for pid, statistics, imports_jax in compiles:
        how = "cache hit" if statistics.cache_hit else f"{statistics.compile_seconds:.2f} s"
        print(f"worker {pid}: compiled ({how}), {'with' if imports_jax else 'without'} JAX")
    import jax

    expected = np.stack([jax.jit(mlp)(x, weights) for x in batch])
    print(f"largest difference from jax.jit: {np.max(np.abs(results - expected)):.2e}")


if __name__ == "__main__":
    main()
