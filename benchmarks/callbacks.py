"""What a Python callback that never fires costs per call: a program guarded by
`eqx.error_if` against the same program without the guard.

    python benchmarks/callbacks.py [--rounds 31] [--json]

Programs: `sin(x) * 2` on f32[3] and f32[4096], in four variants:

- plain: without a guard;
- eqx: guarded by `eqx.error_if(..., ~isfinite(x))`, which lowers to a `lax.cond` whose
  failing branch calls back into Python;
- cond: the guard's `lax.cond` with a failing branch that makes NaNs, no callback;
- callback: the same `lax.cond` with a failing branch that calls back into Python.

The inputs are finite, so no callback fires. eqx / plain is what the check costs (its
predicate and its conditional); callback / cond is what the callback itself adds.
Paths: a bound call (a native loop without the GIL, `cyxla_call_bound` per call) and
`Executable.run` (a Python loop). Rounds are interleaved: every (variant, path) once per
round, in shuffled order. Prints the median time per call of each, and per-round ratios
(median and the 10th-90th percentile spread over rounds).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import cyxla
from cyxla import _benchmark


def plain(x: jax.Array) -> jax.Array:
    return jnp.sin(x) * 2


def eqx_guard(x: jax.Array) -> jax.Array:
    return eqx.error_if(jnp.sin(x) * 2, ~jnp.isfinite(x), "x is not finite")


def _fail(y: np.ndarray) -> np.ndarray:
    raise FloatingPointError("x is not finite")


def cond(x: jax.Array) -> jax.Array:
    bad = jnp.any(~jnp.isfinite(x))
    return jax.lax.cond(bad, lambda y: y * jnp.nan, lambda y: y, jnp.sin(x) * 2)


def callback(x: jax.Array) -> jax.Array:
    bad = jnp.any(~jnp.isfinite(x))
    spec = jax.ShapeDtypeStruct(x.shape, x.dtype)
    fail = lambda y: jax.pure_callback(_fail, spec, y)  # noqa: E731
    return jax.lax.cond(bad, fail, lambda y: y, jnp.sin(x) * 2)


VARIANTS = {"plain": plain, "eqx": eqx_guard, "cond": cond, "callback": callback}
#: The ratios printed: (variant, baseline).
RATIOS = (("eqx", "plain"), ("callback", "cond"))


SIZES = {"sin3": (3, 2000), "sin4096": (4096, 1000)}  # name: (elements, calls per measurement)


def loops(size: int, calls: int) -> tuple[dict[str, Callable[[], float]], list[Any]]:
    """Per (variant, path), a function that times one measurement and returns seconds per
    call; and what must stay alive while they are used."""
    timed: dict[str, Callable[[], float]] = {}
    alive: list[Any] = []
    x = cyxla.zeros((size,), np.float32)
    x[...] = np.random.default_rng(0).standard_normal(size) * 0.1
    for variant, function in VARIANTS.items():
        program = cyxla.lower(function, [jax.ShapeDtypeStruct((size,), jnp.float32)])
        assert (cyxla._core.PYTHON_CALLBACK_TARGET in program.custom_calls) == (
            variant in ("eqx", "callback")
        )
        executable = cyxla.compile_program(program)[0]
        out = cyxla.zeros((size,), np.float32)
        handle = executable.handle
        _benchmark.bound_loop(handle, [x], [out], 1)
        np.testing.assert_allclose(out, jax.jit(function)(x), rtol=1e-6)
        outs = (cyxla.zeros((size,), np.float32),)

        def run(n: int, executable: cyxla.Executable = executable, outs: Any = outs) -> float:
            start = time.perf_counter()
            for _ in range(n):
                executable.run([x], out=outs)
            return time.perf_counter() - start

        paths: dict[str, Callable[[int], float]] = {
            "bound": lambda n, h=handle, o=out: _benchmark.bound_loop(h, [x], [o], n),
            "run": run,
        }
        for path, loop in paths.items():
            timed[f"{variant}/{path}"] = lambda loop=loop: loop(calls) / calls
        alive += [executable, out, outs]
    return timed, alive


def measure(rounds: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, (size, calls) in SIZES.items():
        paths, alive = loops(size, calls)
        for loop in paths.values():
            loop()  # warm
        times: dict[str, list[float]] = {path: [] for path in paths}
        order = list(paths)
        for _ in range(rounds):
            random.shuffle(order)
            for path in order:
                times[path].append(paths[path]())
        table: dict[str, Any] = {}
        for path in ("bound", "run"):
            row: dict[str, float] = {
                f"{v}_us": statistics.median(times[f"{v}/{path}"]) * 1e6 for v in VARIANTS
            }
            for variant, baseline in RATIOS:
                pairs = zip(times[f"{variant}/{path}"], times[f"{baseline}/{path}"], strict=True)
                ratios = sorted(v / b for v, b in pairs)
                deciles = statistics.quantiles(ratios, n=10)
                key = f"{variant}/{baseline}"
                row[key] = statistics.median(ratios)
                row[f"{key}_p10"], row[f"{key}_p90"] = deciles[0], deciles[-1]
            table[path] = row
        results[name] = table
        del alive
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    results = measure(args.rounds)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"median us per call, and ratios over {args.rounds} interleaved rounds (no callback fires)"
    )
    header = " ".join(f"{v:>9}" for v in VARIANTS)
    ratios = " ".join(f"{f'{v}/{b}':>14} {'p10-p90':>11}" for v, b in RATIOS)
    print(f"{'program':8} {'path':5} {header}  {ratios}")
    for name, table in results.items():
        for path, row in table.items():
            times = " ".join(f"{row[f'{v}_us']:9.2f}" for v in VARIANTS)
            spread = " ".join(
                f"{row[f'{v}/{b}']:14.3f} {row[f'{v}/{b}_p10']:5.3f}-{row[f'{v}/{b}_p90']:5.3f}"
                for v, b in RATIOS
            )
            print(f"{name:8} {path:5} {times}  {spread}")


if __name__ == "__main__":
    main()
