"""Per-evaluation time of batches against single calls, on sin3 (`sin(x) * 2` on f32[3]).

    python benchmarks/batches.py [--rounds 41] [--json out.json]

Paths, each timed natively without the GIL: `native` (one `cyxla_execute` per point),
`pjrt_floor` (a minimal loop against the PJRT C API, one point per call), and `batch_N`
(one `cyxla_execute_batch` of N points; N = 16 and 256 are compiled sizes, 1000 is split
into three calls of 256 and a rest of 232 padded to 256). Rounds run every path once, in a
shuffled order; figures are medians over rounds of the time per evaluation (per point),
and the speedups are per-round ratios (evaluations per second of a batch over those of
single calls), given with their spread (minimum, quartiles, maximum).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

import cyxla
from cyxla import _benchmark
from cyxla._bench.paths import aligned

BATCH_SIZES = (16, 256)
POINTS = (16, 256, 1000)


def sin3(x: jax.Array) -> jax.Array:
    return jnp.sin(x) * 2


def batch_loop(
    batched: cyxla.BatchedExecutable, point_inputs: list[np.ndarray], points: int
) -> Callable[[int], float]:
    """`loop(n)`: seconds for n calls of `points` points each (the inputs' one point,
    repeated), divided by `points`: seconds per evaluation times n. The callable
    `python -m cyxla bench` times as its `batch_N` path."""
    inputs = [aligned(np.repeat(a[None], points, axis=0)) for a in point_inputs]
    outputs = [aligned(np.empty((points, *s.shape), s.dtype)) for s in batched.outputs]
    # `batched` itself is kept by the loop: its handle lives as long as it does.
    return lambda n: (
        _benchmark.execute_batch_loop(batched.handle, inputs, outputs, points, n) / points
    )


def paths() -> dict[str, tuple[Callable[[int], float], int]]:
    """Each path's loop (seconds per evaluation times n for n calls) and calls per sample."""
    spec = [jax.ShapeDtypeStruct((3,), jnp.float32)]
    x = [aligned(np.array([0.0, 1.0, 2.0], np.float32))]
    executable, _ = cyxla.compile_program(cyxla.lower(sin3, spec))
    y = [aligned(np.empty(3, np.float32))]
    batched, _ = cyxla.compile_batched(cyxla.lower_batched(sin3, spec, BATCH_SIZES))
    pointers = executable._native._pjrt_pointers()
    types = [int(cyxla.ElementType.F32)]
    loops: dict[str, tuple[Callable[[int], float], int]] = {
        "native": (lambda n: _benchmark.execute_loop(executable.handle, x, y, n), 2000),
        "pjrt_floor": (lambda n: _benchmark.raw_pjrt_loop(*pointers, x, types, y, n), 2000),
    }
    for points in POINTS:
        loops[f"batch_{points}"] = (batch_loop(batched, x, points), max(20, 16_000 // points))
    return loops


def spread(values: list[float]) -> dict[str, float]:
    quartiles = statistics.quantiles(values, n=4)
    return {
        "min": min(values),
        "q1": quartiles[0],
        "median": statistics.median(values),
        "q3": quartiles[2],
        "max": max(values),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=41, help="interleaved rounds (41)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    loops = paths()
    for loop, calls in loops.values():  # warm: the first calls grow scratch memory
        loop(max(1, calls // 10))
    samples: dict[str, list[float]] = {name: [] for name in loops}
    order = list(loops)
    shuffle = random.Random(0)
    for _ in range(max(3, args.rounds)):
        shuffle.shuffle(order)
        for name in order:
            loop, calls = loops[name]
            samples[name].append(loop(calls) / calls * 1e9)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    speedups = {
        f"{batch}_over_{single}": spread(
            [s / b for s, b in zip(samples[single], samples[batch], strict=True)]
        )
        for batch in loops
        if batch.startswith("batch_")
        for single in ("native", "pjrt_floor")
    }
    print(f"sin3, ns per evaluation (median of {len(samples['native'])} interleaved rounds)")
    for name, value in medians.items():
        print(f"  {name:<12} {value:10.1f}")
    print("evaluations per second of a batch over single calls, per round")
    print(f"  {'':<30} {'min':>7} {'q1':>7} {'median':>7} {'q3':>7} {'max':>7}")
    for name, figures in speedups.items():
        row = " ".join(f"{figures[k]:7.1f}" for k in ("min", "q1", "median", "q3", "max"))
        print(f"  {name:<30} {row}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"median_ns": medians, "speedups": speedups}, file, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
