"""Per-call cost of bound calls against cyxla's execute and the naive PJRT floor.

    python benchmarks/bound_calls.py [--rounds 31] [--json]

Programs: sin3 (`sin(x) * 2` on f32[3]), mlp64 (two tanh layers on f32[64]) and ew1m
(`x * 2 + 1` on 1M f32). Paths, each a native loop without the GIL:

- raw: the naive PJRT loop (wrap the inputs, execute, read the outputs, destroy): the floor,
  on the program as JAX lowers it (without the donated parameters of ew1m's);
- raw_resident: the same with the inputs wrapped once, before the loop;
- native: cyxla_execute through the C++ header;
- bound: a bound call (cyxla_bind once, cyxla_call_bound per call);
- memcpy (ew1m only): one copy of the output's bytes, the machine's limit;
- native_copied, bound_copied (ew1m only): native and bound on the program lowered
  without its donated parameter, so that the result is copied out (cyxla before results
  were written in place).

Rounds are interleaved: every path once per round, in shuffled order, so that paths are
compared under the same load. Prints the median time per call of each path and, per round,
its ratio to raw (median and the 10th-90th percentile spread over rounds); for ew1m also
the median per-round ratio to memcpy.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import cyxla
from cyxla import _benchmark
from cyxla._lower import lowering as _lowering


def sin3(x: jax.Array) -> jax.Array:
    return jnp.sin(x) * 2


def mlp64(x: jax.Array, w1: jax.Array, b1: jax.Array, w2: jax.Array, b2: jax.Array) -> jax.Array:
    return jnp.tanh(jnp.tanh(x @ w1 + b1) @ w2 + b2)


def ew1m(x: jax.Array) -> jax.Array:
    return x * 2 + 1


PROGRAMS: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]], int]] = {
    # name: (function, input shapes, calls per measurement)
    "sin3": (sin3, [(3,)], 2000),
    "mlp64": (mlp64, [(64,), (64, 64), (64,), (64, 64), (64,)], 1000),
    "ew1m": (ew1m, [(1 << 20,)], 20),
}


def _without_donated_parameters(
    function: Callable[..., Any], specs: list[jax.ShapeDtypeStruct]
) -> cyxla.Executable:
    """`function` compiled as JAX lowers it, with no output written in place."""
    in_place_min = _lowering.IN_PLACE_MIN_BYTES
    _lowering.IN_PLACE_MIN_BYTES = 1 << 62
    try:
        return cyxla.compile_program(cyxla.lower(function, specs))[0]
    finally:
        _lowering.IN_PLACE_MIN_BYTES = in_place_min


def loops(name: str) -> tuple[dict[str, Callable[[], float]], list[cyxla.Executable]]:
    """Per path, a function that times one measurement and returns seconds per call; and
    the executables they run, which must stay alive while the functions are used (the
    raw loops hold only pointers into them)."""
    function, shapes, calls = PROGRAMS[name]
    specs = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
    executable = cyxla.compile_program(cyxla.lower(function, specs))[0]
    rng = np.random.default_rng(0)
    inputs = []
    for spec in executable.inputs:
        array = cyxla.zeros(spec.shape, spec.dtype)
        array[...] = rng.standard_normal(spec.shape) * 0.1
        inputs.append(array)
    outputs = [cyxla.zeros(s.shape, s.dtype) for s in executable.outputs]
    expected = jax.jit(function)(*inputs)
    types = [int(s.element_type) for s in executable.inputs]
    copied = _without_donated_parameters(function, specs) if name == "ew1m" else executable
    pointers = copied._native._pjrt_pointers()
    handle = executable.handle
    paths: dict[str, Callable[[int], float]] = {
        "raw": lambda n: _benchmark.raw_pjrt_loop(*pointers, inputs, types, outputs, n),
        "raw_resident": lambda n: _benchmark.raw_pjrt_resident_loop(
            *pointers, inputs, types, outputs, n
        ),
        "native": lambda n: _benchmark.execute_loop(handle, inputs, outputs, n),
        "bound": lambda n: _benchmark.bound_loop(handle, inputs, outputs, n),
    }
    if name == "ew1m":
        spec = executable.outputs[0]
        source = cyxla.zeros(spec.shape, spec.dtype)

        def copy(n: int) -> float:
            start = time.perf_counter()
            for _ in range(n):
                np.copyto(outputs[0], source)
            return time.perf_counter() - start

        paths["memcpy"] = copy
        assert copied._native.donated_outputs == [] and executable._native.donated_outputs
        paths["native_copied"] = lambda n: _benchmark.execute_loop(
            copied.handle, inputs, outputs, n
        )
        paths["bound_copied"] = lambda n: _benchmark.bound_loop(copied.handle, inputs, outputs, n)
    for path in paths.keys() - {"raw", "raw_resident", "memcpy"}:  # each computes jax.jit's
        paths[path](1)
        for got, want in zip(outputs, jax.tree.leaves(expected), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=path)
    timed = {path: (lambda loop=loop: loop(calls) / calls) for path, loop in paths.items()}
    return timed, [executable, copied]


def measure(rounds: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in PROGRAMS:
        paths, alive = loops(name)
        for loop in paths.values():
            loop()  # warm
        times: dict[str, list[float]] = {path: [] for path in paths}
        order = list(paths)
        for _ in range(rounds):
            random.shuffle(order)
            for path in order:
                times[path].append(paths[path]())
        table = {}
        for path, seconds in times.items():
            ratios = sorted(s / r for s, r in zip(seconds, times["raw"], strict=True))
            deciles = statistics.quantiles(ratios, n=10)
            table[path] = {
                "median_ns": statistics.median(seconds) * 1e9,
                "ratio_to_raw": statistics.median(ratios),
                "ratio_p10": deciles[0],
                "ratio_p90": deciles[-1],
            }
            if "memcpy" in times:  # the machine's limit for ew1m's output
                to_copy = [s / c for s, c in zip(seconds, times["memcpy"], strict=True)]
                table[path]["ratio_to_memcpy"] = statistics.median(to_copy)
        results[name] = table
        del alive
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    arguments = parser.parse_args()
    results = measure(arguments.rounds)
    if arguments.json:
        print(json.dumps(results, indent=2))
        return
    for name, table in results.items():
        print(f"{name} ({arguments.rounds} interleaved rounds)")
        print(f"  {'path':14} {'median/call':>12} {'vs raw':>8}   p10-p90 of per-round ratios")
        for path, row in table.items():
            memcpy = f"   {row['ratio_to_memcpy']:.2f}x memcpy" if "ratio_to_memcpy" in row else ""
            print(
                f"  {path:14} {row['median_ns'] / 1e3:9.2f} us {row['ratio_to_raw']:7.2f}x"
                f"   {row['ratio_p10']:.2f}-{row['ratio_p90']:.2f}{memcpy}"
            )


if __name__ == "__main__":
    main()
