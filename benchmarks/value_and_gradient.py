"""A solver's callback from Python: the value and gradient of a small function per call.

    python benchmarks/value_and_gradient.py [--rounds 31] [--size 10]

What a branch-and-bound solver's nonlinear callback (SCIP through PySCIPOpt) does many
times a second: evaluate f(x) and its gradient at a new point of `--size` float64s. f is
the Rosenbrock function; cyxla runs `jax.value_and_grad(f)` lowered once. Paths, each
timed over the same points:

- numpy: the value and gradient written by hand in NumPy (what the user would otherwise
  write);
- run: `Executable.run([x])`, a new output array per call;
- run_out: `Executable.run([x], out=...)` into the same two arrays every call;
- bound: `np.copyto` of x into a bound call's input, then the call (`Executable.bind`);
- jax_jit: `jax.jit(jax.value_and_grad(f))(x)` and the results as NumPy arrays.

Rounds are interleaved as `python -m cyxla bench` interleaves them (cyxla._bench.rounds:
every path once per round, shuffled). Prints the median time per evaluation of each path
and its ratio to numpy per round (median, first-third quartile).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

import cyxla
from cyxla._bench import rounds
from cyxla._bench.paths import Loop

jax.config.update("jax_enable_x64", True)  # a solver's points are float64


def rosenbrock(x: jax.Array) -> jax.Array:
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_numpy(x: np.ndarray) -> tuple[float, np.ndarray]:
    """The value and gradient, by hand."""
    head = x[:-1]
    step = x[1:] - head * head
    value = float(np.sum(100.0 * step * step + (1.0 - head) ** 2))
    gradient = np.zeros_like(x)
    gradient[:-1] = -400.0 * head * step - 2.0 * (1.0 - head)
    gradient[1:] += 200.0 * step
    return value, gradient


def paths(size: int, points: list[np.ndarray]) -> dict[str, Loop]:
    """Per path, a loop that evaluates n points (the same points in every path)."""
    spec = jax.ShapeDtypeStruct((size,), jnp.float64)
    executable, _ = cyxla.compile_program(cyxla.lower(jax.value_and_grad(rosenbrock), [spec]))
    jitted = jax.jit(jax.value_and_grad(rosenbrock))
    out = [np.empty(s.shape, s.dtype) for s in executable.outputs]
    bound = executable.bind()
    for x in points[:3]:  # every path computes the same numbers
        value, gradient = rosenbrock_numpy(x)
        bound.inputs[0][...] = x
        bound()
        for got in (executable.run([x]), bound.outputs, jitted(x)):
            np.testing.assert_allclose(got[0], value, rtol=1e-12)
            np.testing.assert_allclose(got[1], gradient, rtol=1e-12, atol=1e-12)

    def each(evaluate: Callable[[np.ndarray], object]) -> Loop:
        def loop(n: int) -> float:
            start = time.perf_counter()
            for k in range(n):
                evaluate(points[k % len(points)])
            return time.perf_counter() - start

        return loop

    def bound_call(x: np.ndarray) -> None:
        np.copyto(bound.inputs[0], x)
        bound()

    return {
        "numpy": each(rosenbrock_numpy),
        "run": each(lambda x: executable.run([x])),
        "run_out": each(lambda x: executable.run([x], out=out)),
        "bound": each(bound_call),
        "jax_jit": each(lambda x: [np.asarray(r) for r in jitted(x)]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--size", type=int, default=10, help="variables of the point")
    parser.add_argument("--points", type=int, default=2000, help="evaluations per round")
    arguments = parser.parse_args()
    rng = np.random.default_rng(0)
    points = [rng.standard_normal(arguments.size) for _ in range(arguments.points)]
    timings = {
        name: rounds.Timing(loop, arguments.points)
        for name, loop in paths(arguments.size, points).items()
    }
    for timing in timings.values():
        timing.loop(timing.calls)  # warm
    samples = rounds.time_rounds(timings, arguments.rounds, random.Random(0))
    print(
        f"value and gradient of Rosenbrock on f64[{arguments.size}], "
        f"{arguments.rounds} interleaved rounds of {arguments.points} points"
    )
    print(f"  {'path':8} {'median':>10}   vs numpy (first-third quartile of per-round ratios)")
    for name, nanoseconds in samples.items():
        ratio = rounds.spread([s / n for s, n in zip(nanoseconds, samples["numpy"], strict=True)])
        median = rounds.spread(nanoseconds).median / 1e3
        print(
            f"  {name:8} {median:7.2f} us   {ratio.median:.2f}x ({ratio.low:.2f}-{ratio.high:.2f})"
        )


if __name__ == "__main__":
    main()
