"""Interleaved rounds: every path once per round, in a shuffled order, so that all paths
see the same machine; figures are medians over rounds, ratios are taken within a round."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from cyxla._bench.paths import Loop

__all__ = ["Spread", "Timing", "calls_per_sample", "on_cpu_clock", "spread", "time_rounds"]

#: A pause before each sample, so that threads the previous path left spinning (JAX's
#: CPU client) go idle before the next path is timed.
SETTLE_SECONDS = 0.002


@dataclass(frozen=True)
class Timing:
    loop: Loop
    #: Calls per sample, and evaluations of the program per call.
    calls: int
    evaluations: int = 1


def on_cpu_clock(loop: Loop) -> Loop:
    """`loop` timed by the CPU time of the process (all its threads) instead of the wall
    clock: what other processes on a busy machine take does not count."""

    def timed(n: int) -> float:
        start = time.process_time()
        loop(n)
        return time.process_time() - start

    return timed


def calls_per_sample(loop: Loop, seconds: float) -> int:
    """How many calls of `loop` take about `seconds`, once it is warm."""
    loop(1)  # the first call of a path may compile (jax.jit) or allocate
    n = 1
    while True:
        took = loop(n)
        if took >= seconds / 8 or n >= 1 << 24:
            return max(1, round(n * seconds / max(took, 1e-9)))
        n *= 8


def time_rounds(
    timings: Mapping[str, Timing],
    rounds: int,
    rng: random.Random,
    on_round: Callable[[int], None] | None = None,
) -> dict[str, list[float]]:
    """Nanoseconds per evaluation of each path in each round; `on_round(done)` is called
    after each round."""
    samples: dict[str, list[float]] = {name: [] for name in timings}
    order = list(timings)
    for done in range(1, rounds + 1):
        rng.shuffle(order)
        for name in order:
            timing = timings[name]
            time.sleep(SETTLE_SECONDS)
            seconds = timing.loop(timing.calls)
            samples[name].append(seconds / (timing.calls * timing.evaluations) * 1e9)
        if on_round is not None:
            on_round(done)
    return samples


@dataclass(frozen=True)
class Spread:
    """The median of some values and their interquartile range."""

    median: float
    low: float  # first quartile
    high: float  # third quartile


def spread(values: Sequence[float]) -> Spread:
    if len(values) < 2:
        return Spread(values[0], values[0], values[0])
    low, _, high = statistics.quantiles(values, n=4, method="inclusive")
    return Spread(statistics.median(values), low, high)
