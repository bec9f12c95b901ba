"""Nanoseconds per call of a bound call from numba's nopython mode (cyxla.numba) against
the same loop in C++, and a loop of user work around it against Python.

    python benchmarks/numba_calls.py [--rounds 11] [--json]

The program is the bench's sin3, sin(x) * 2 on float32[3], bound to aligned arrays.
Paths, each a loop of n calls:

- c: `cyxla_call_bound(handle, &error)` in a C loop, one cyxla_Error for all calls (the
  loop is compiled here with `cc`, against libcyxla);
- cpp: cyxla::native::BoundCall::call() in a C++ loop (cyxla._benchmark.bound_loop, the
  loop of `python -m cyxla bench`'s bound path without its clock read per call; call()
  zero-initialises a cyxla_Error, 516 bytes, on every call);
- numba: cyxla.numba.call_bound(handle) in an @numba.njit loop, nothing else;
- numba_sum: the sum of f(x_i) over points x_i = (i, i + 1, i + 2) / n in an njit loop:
  write the input, call, add the output (per point);
- python_sum: the same loop in Python over the BoundCall (Executable.bind), per point.

Rounds are interleaved (every path once per round, shuffled). Prints, per path, the
median nanoseconds per call over the rounds with the first and third quartiles, and the
median of the per-round ratios to c.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import random
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import jax.numpy as jnp
import numba
import numpy as np

import cyxla
from cyxla import _benchmark
from cyxla.numba import OK, call_bound, check


@numba.njit(nogil=True)
def calls(handle: int, n: int) -> int:
    for _ in range(n):
        status = call_bound(handle)
        if status != OK:
            return status
    return OK


@numba.njit(nogil=True)
def sum_of_f(handle: int, x: np.ndarray, y: np.ndarray, n: int) -> tuple[int, float]:
    total = 0.0
    for i in range(n):
        for k in range(x.size):
            x[k] = (i + k) / n
        status = call_bound(handle)
        if status != OK:
            return status, total
        for k in range(y.size):
            total += y[k]
    return OK, total


C_LOOP = """
#include <cyxla/cyxla.h>
/* n calls of the bound call `bound`: the first status that is not CYXLA_OK, or CYXLA_OK. */
int calls(uint64_t bound, long n) {
  cyxla_Error error;
  for (long i = 0; i < n; ++i) {
    cyxla_Status status = cyxla_call_bound(bound, &error);
    if (status != CYXLA_OK) return status;
  }
  return CYXLA_OK;
}
"""


def c_calls() -> Callable[[int, int], int]:
    """The C loop of C_LOOP, compiled with cc against libcyxla (without Python.h)."""
    directory = Path(tempfile.mkdtemp(prefix="cyxla-numba-bench-"))
    (directory / "calls.c").write_text(C_LOOP)
    library = Path(cyxla.get_library())
    subprocess.run(
        [
            "cc",
            "-O2",
            "-shared",
            "-fPIC",
            f"-I{cyxla.get_include()[0]}",
            "calls.c",
            "-o",
            "libcalls.so",
            str(library),
            f"-Wl,-rpath,{library.parent}",
        ],
        cwd=directory,
        check=True,
    )
    function = ctypes.CDLL(str(directory / "libcalls.so")).calls
    function.argtypes, function.restype = [ctypes.c_uint64, ctypes.c_long], ctypes.c_int
    return function


def paths() -> dict[str, Callable[[int], float]]:
    """Per path, a function that times n calls and returns the seconds."""
    x = cyxla.zeros(3, np.float32)
    executable, _ = cyxla.compile_program(cyxla.lower(lambda x: jnp.sin(x) * 2, [x]))
    bound = executable.bind()
    x, (y,) = bound.inputs[0], bound.outputs
    c_y = cyxla.zeros(3, np.float32)

    def timed(run: Callable[[int], object]) -> Callable[[int], float]:
        def loop(n: int) -> float:
            start = time.perf_counter()
            run(n)
            return time.perf_counter() - start

        return loop

    def python_sum(n: int) -> float:
        total = 0.0
        for i in range(n):
            x[:] = (i / n, (i + 1) / n, (i + 2) / n)
            bound()
            total += float(y.sum())
        return total

    c_loop = c_calls()

    def c(n: int) -> None:
        check(c_loop(bound.handle, n))

    def numba_calls(n: int) -> None:
        check(calls(bound.handle, n))

    def numba_sum(n: int) -> None:
        status, _ = sum_of_f(bound.handle, x, y, n)
        check(status)

    return {
        "c": timed(c),
        "cpp": lambda n: _benchmark.bound_loop(executable.handle, [x], [c_y], n),
        "numba": timed(numba_calls),
        "numba_sum": timed(numba_sum),
        "python_sum": timed(python_sum),
    }


def per_call_ns(loop: Callable[[int], float], n: int) -> float:
    return loop(n) / n * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args()
    loops = paths()
    sizes = {name: 1_000_000 for name in loops} | {"python_sum": 50_000}
    for loop in loops.values():  # warm: compiles the njit loops
        loop(1000)
    samples: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(arguments.rounds):
        order = list(loops)
        random.shuffle(order)
        for name in order:
            samples[name].append(per_call_ns(loops[name], sizes[name]))
    results = {}
    for name, values in samples.items():
        q1, _, q3 = statistics.quantiles(values, n=4)
        ratios = [v / c for v, c in zip(values, samples["c"], strict=True)]
        results[name] = {
            "median_ns": statistics.median(values),
            "quartiles_ns": [q1, q3],
            "ratio_to_c": statistics.median(ratios),
        }
    if arguments.json:
        print(json.dumps(results, indent=2))
        return
    print(f"sin(x) * 2 on float32[3], ns per call: median (quartiles) of {arguments.rounds} rounds")
    for name, row in results.items():
        q1, q3 = row["quartiles_ns"]
        print(
            f"  {name:11s} {row['median_ns']:8.1f} ({q1:.1f}-{q3:.1f})"
            f"   {row['ratio_to_c']:6.2f}x c"
        )


if __name__ == "__main__":
    main()
