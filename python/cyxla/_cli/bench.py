"""`python -m cyxla bench`: per-call time of small programs through every path.

Paths, for each program: (1) cyxla's native `execute` from C++, (2) the same from N
threads (time per call from the throughput), (3) `Executable.run` from Python, (4) a
minimal loop written directly against the PJRT C API (the floor), (5) `jax.jit`. Rounds
of paths (1) to (4) are interleaved and each figure is the median over rounds, so that
the ratios compare times measured under the same machine load; `jax.jit`'s rounds come
after them, because JAX's own CPU thread pool keeps spinning for a while after each call
and would take a core from the paths measured next.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

import cyxla
from cyxla import _backend, _benchmark
from cyxla._abi import HOST_ALIGNMENT

__all__ = ["add_arguments", "main"]

PATHS = ("native", "threads", "run", "pjrt_floor", "jax_jit")


@dataclass
class Case:
    name: str
    function: Callable[..., jax.Array]
    inputs: list[np.ndarray]
    calls: int


def _aligned(array: np.ndarray) -> np.ndarray:
    """A copy of `array` in 64-byte aligned memory, which the CPU plugin reads in place."""
    raw = np.empty(array.nbytes + HOST_ALIGNMENT, np.uint8)
    offset = -raw.ctypes.data % HOST_ALIGNMENT
    aligned = raw[offset : offset + array.nbytes].view(array.dtype).reshape(array.shape)
    aligned[...] = array
    return aligned


def _cases() -> list[Case]:
    rng = np.random.default_rng(0)
    x3 = np.array([0.0, 1.0, 2.0], np.float32)
    x = rng.standard_normal((100, 100), dtype=np.float32)
    w = rng.standard_normal((100, 100), dtype=np.float32) / 10
    return [
        Case("sin(x) * 2, f32[3]", lambda x: jnp.sin(x) * 2, [x3], 2000),
        Case("tanh(x @ w), f32[100,100]", lambda x, w: jnp.tanh(x @ w), [x, w], 200),
    ]


def _per_call(loop: Callable[[int], float], calls: int) -> float:
    """Seconds per call of one timed batch; `loop(n)` runs n calls and returns seconds."""
    return loop(calls) / calls


def _timed(call: Callable[[], object]) -> Callable[[int], float]:
    def loop(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            call()
        return time.perf_counter() - start

    return loop


PHASES = ("buffers_in", "execute", "await", "outputs_out", "destroy")


def measure(case: Case, threads: int, rounds: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median nanoseconds per call of `case` on each path, and where the floor's time goes
    (nanoseconds per call in each step of the raw PJRT loop)."""
    program = cyxla.lower(case.function, case.inputs)
    executable, _ = cyxla.compile_program(program)
    inputs = [_aligned(a) for a in case.inputs]
    outputs = [_aligned(np.empty(s.shape, s.dtype)) for s in executable.outputs]
    types = [int(s.element_type) for s in executable.inputs]
    pointers = executable._native._pjrt_pointers()
    jitted = jax.jit(case.function)
    on_device = [jnp.asarray(a) for a in case.inputs]
    handle = executable.handle

    loops: dict[str, Callable[[int], float]] = {
        "native": lambda n: _benchmark.execute_loop(handle, inputs, outputs, n),
        # n calls in each thread: the wall time per call of all threads together.
        "threads": lambda n: (
            _benchmark.execute_threads(handle, inputs, outputs, n, threads) / threads
        ),
        "run": _timed(lambda: executable.run(inputs)),
        "pjrt_floor": lambda n: _benchmark.raw_pjrt_loop(*pointers, inputs, types, outputs, n),
        "jax_jit": _timed(lambda: jitted(*on_device).block_until_ready()),
    }
    samples: dict[str, list[float]] = {path: [] for path in PATHS}
    cyxla_paths = [path for path in PATHS if path != "jax_jit"]
    for paths in (cyxla_paths, ["jax_jit"]):
        for path in paths:  # warm
            loops[path](max(1, case.calls // 10))
        for _ in range(rounds):
            for path in paths:
                samples[path].append(_per_call(loops[path], case.calls) * 1e9)
    phases = _benchmark.raw_pjrt_phases(*pointers, inputs, types, outputs, case.calls * 5)
    return (
        {path: statistics.median(values) for path, values in samples.items()},
        {
            name: seconds / (case.calls * 5) * 1e9
            for name, seconds in zip(PHASES, phases, strict=True)
        },
    )


def _report(
    results: dict[str, tuple[dict[str, float], dict[str, float]]], threads: int
) -> dict[str, object]:
    programs: dict[str, dict[str, object]] = {}
    for name, (medians, phases) in results.items():
        floor, jit = medians["pjrt_floor"], medians["jax_jit"]
        programs[name] = {
            path: {
                "median_ns": round(value, 1),
                "ratio_to_pjrt_floor": round(value / floor, 3),
                "ratio_to_jax_jit": round(value / jit, 3),
            }
            for path, value in medians.items()
        }
        programs[name]["threads_speedup"] = round(medians["native"] / medians["threads"], 3)
        programs[name]["pjrt_floor_phases_ns"] = {k: round(v, 1) for k, v in phases.items()}
    return {
        "threads": threads,
        "platform": loaded.platform if (loaded := _backend.loaded()) else None,
        "programs": programs,
    }


def _print_table(report: dict[str, object]) -> None:
    threads = report["threads"]
    labels = {
        "native": "(1) native execute, C++",
        "threads": f"(2) native execute, {threads} threads",
        "run": "(3) Executable.run, Python",
        "pjrt_floor": "(4) raw PJRT C API loop",
        "jax_jit": "(5) jax.jit",
    }
    for name, paths in report["programs"].items():  # type: ignore[union-attr]
        print(f"\n{name}")
        print(f"  {'path':38} {'median/call':>12} {'vs floor':>9} {'vs jit':>8}")
        for path in PATHS:
            row = paths[path]
            print(
                f"  {labels[path]:38} {row['median_ns'] / 1e3:>9.2f} us "
                f"{row['ratio_to_pjrt_floor']:>8.2f}x {row['ratio_to_jax_jit']:>7.2f}x"
            )
        print(f"  throughput of {threads} threads over 1: {paths['threads_speedup']:.2f}x")
        phases = ", ".join(f"{k} {v / 1e3:.2f}" for k, v in paths["pjrt_floor_phases_ns"].items())
        print(f"  the floor's steps, us per call: {phases}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds per path (9)")
    parser.add_argument(
        "--threads", type=int, default=os.cpu_count() or 1, help="threads of path (2)"
    )


def main(args: argparse.Namespace) -> int:
    threads = max(1, args.threads)
    results = {case.name: measure(case, threads, max(1, args.rounds)) for case in _cases()}
    report = _report(results, threads)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_table(report)
    return 0
