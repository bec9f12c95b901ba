"""Evaluations per second of SciPy's C loops over a JAX function: a LowLevelCallable
(Executable.low_level_callable) against Python callbacks.

    python benchmarks/scipy_callbacks.py [--rounds 7] [--json]

quad: `scipy.integrate.quad` of exp(-x^2) cos(3x) over the real line (float64, 390
evaluations a quad). generic_filter: `scipy.ndimage.generic_filter` of a weighted maximum
over a 3x3 window on a 200x200 float64 image (40,000 evaluations a filter). Paths:

- low_level: the program as a scipy.LowLevelCallable, no Python per evaluation;
- bound: a Python callback that writes the bound call's input, calls it and reads the
  output (Executable.bind, cyxla's cheapest call from Python);
- run: a Python callback calling Executable.run;
- jit: a Python callback calling the jax.jit of the same function;
- numpy: a Python callback written with NumPy (the usual SciPy callback);
- math (quad only): a Python callback written with the math module's float functions.

Rounds are interleaved (every path once per round, shuffled); each measurement repeats the
quad or filter until it has taken 0.2 s. Prints the median evaluations per second of each
path over the rounds, and its ratio to low_level.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy import integrate, ndimage

import cyxla

jax.config.update("jax_enable_x64", True)

WEIGHTS = np.linspace(-1.0, 2.0, 9)


def integrand(x: jax.Array) -> jax.Array:
    return jnp.exp(-(x[0] ** 2)) * jnp.cos(3 * x[0])


def weighted_max(v: jax.Array) -> jax.Array:
    return jnp.max(v * jnp.asarray(WEIGHTS, v.dtype))


def compiled(fn: Callable[..., Any], n: int) -> cyxla.Executable:
    program = cyxla.lower(fn, [jax.ShapeDtypeStruct((n,), jnp.float64)])
    return cyxla.compile_program(program)[0]


def quad_paths() -> dict[str, Callable[[], int]]:
    """Per path, a function that runs one quad and returns its evaluations."""
    executable = compiled(integrand, 1)
    bound = executable.bind()
    x, (y,) = bound.inputs[0], bound.outputs
    jitted = jax.jit(integrand)

    def via_bound(t: float) -> float:
        x[0] = t
        bound()
        return float(y)

    callbacks: dict[str, Any] = {
        "low_level": executable.low_level_callable("quad"),
        "bound": via_bound,
        "run": lambda t: float(executable.run([np.array([t])])[0]),
        "jit": lambda t: float(jitted(np.array([t]))),
        "numpy": lambda t: np.exp(-(t**2)) * np.cos(3 * t),
        "math": lambda t: math.exp(-(t**2)) * math.cos(3 * t),
    }

    def one(f: Any) -> Callable[[], int]:
        return lambda: integrate.quad(f, -np.inf, np.inf, full_output=1)[2]["neval"]

    return {name: one(f) for name, f in callbacks.items()}


def filter_paths() -> dict[str, Callable[[], int]]:
    image = np.random.default_rng(0).standard_normal((200, 200))
    executable = compiled(weighted_max, 9)
    bound = executable.bind()
    x, (y,) = bound.inputs[0], bound.outputs
    jitted = jax.jit(weighted_max)

    def via_bound(v: np.ndarray) -> float:
        x[...] = v
        bound()
        return float(y)

    callbacks: dict[str, Any] = {
        "low_level": executable.low_level_callable("ndimage"),
        "bound": via_bound,
        "run": lambda v: float(executable.run([v])[0]),
        "jit": lambda v: float(jitted(v)),
        "numpy": lambda v: np.max(v * WEIGHTS),
    }

    def one(f: Any) -> Callable[[], int]:
        return lambda: (ndimage.generic_filter(image, f, size=3), image.size)[1]

    return {name: one(f) for name, f in callbacks.items()}


def evaluations_per_second(run: Callable[[], int], seconds: float = 0.2) -> float:
    evaluations, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        evaluations += run()
    return evaluations / elapsed


def measure(paths: dict[str, Callable[[], int]], rounds: int) -> dict[str, float]:
    for run in paths.values():  # warm: compiles jax.jit, fills caches
        run()
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(rounds):
        order = list(paths)
        random.shuffle(order)
        for name in order:
            samples[name].append(evaluations_per_second(paths[name]))
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args()
    results = {
        "quad": measure(quad_paths(), arguments.rounds),
        "generic_filter": measure(filter_paths(), arguments.rounds),
    }
    if arguments.json:
        print(json.dumps(results, indent=2))
        return
    for loop, medians in results.items():
        print(f"{loop}: evaluations per second (median of {arguments.rounds} rounds)")
        base = medians["low_level"]
        for name, value in medians.items():
            print(f"  {name:10s} {value:14,.0f}   {value / base:8.3f}x low_level")


if __name__ == "__main__":
    main()
