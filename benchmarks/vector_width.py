"""What the CPU's compile default costs: loops vectorized 128 bits wide, against XLA's 256.

    python benchmarks/vector_width.py [--rounds 21]

cyxla compiles CPU programs that hold an atan2 with `xla_cpu_prefer_vector_width=128`
(runtime/platforms.hpp: at XLA's 256 the plugin's arctan is wrong), and others at XLA's
default. This times the bench's programs and a few elementwise ones on 1M float32s, each
compiled three ways (cyxla's defaults, 128 bits for every loop, XLA's 256 as before the
default) and called through a bound call (inputs bound once, so the program's own time is
what differs), in interleaved rounds as `python -m cyxla bench` takes them
(cyxla._bench.rounds). Prints, per program, the median time of a call each way and the
per-round ratios to 256 bits (median, first-third quartile). arctan at 256 is timed
although its numbers are wrong there.
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
from cyxla._bench.programs import PROGRAMS

WIDTHS = {
    "cyxla": {},
    "w128": {"xla_cpu_prefer_vector_width": 128},
    "w256": {"xla_cpu_prefer_vector_width": 256},
}
_MILLION = 1 << 20


def _elementwise(name: str, fn: Callable[[jax.Array], jax.Array]) -> tuple[str, Callable, list]:
    x = np.linspace(-3, 3, _MILLION, dtype=np.float32)
    return name, fn, [x]


def programs() -> list[tuple[str, Callable[..., jax.Array], list[np.ndarray]]]:
    rng = np.random.default_rng(0)
    found = [(p.key, p.function, p.make_inputs(rng)) for p in PROGRAMS]
    found += [
        _elementwise("sin1m", jnp.sin),
        _elementwise("exp1m", jnp.exp),
        _elementwise("tanh1m", jnp.tanh),
        _elementwise("arctan1m", jnp.arctan),
    ]
    return found


def loops() -> dict[str, Loop]:
    """Per program and width, a loop of n bound calls."""
    found: dict[str, Loop] = {}
    for key, fn, inputs in programs():
        program = cyxla.lower(fn, inputs)
        for width, options in WIDTHS.items():
            executable, _ = cyxla.compile_program(program, options=options)
            bound = executable.bind()
            for slot, value in zip(bound.inputs, inputs, strict=True):
                slot[...] = value

            def loop(n: int, call: Callable[[], object] = bound) -> float:
                start = time.perf_counter()
                for _ in range(n):
                    call()
                return time.perf_counter() - start

            found[f"{key}/{width}"] = loop
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--sample-ms", type=float, default=20.0)
    arguments = parser.parse_args()
    timings = {
        name: rounds.Timing(loop, rounds.calls_per_sample(loop, arguments.sample_ms / 1e3))
        for name, loop in loops().items()
    }
    samples = rounds.time_rounds(timings, arguments.rounds, random.Random(0))
    print(f"bound calls, {arguments.rounds} interleaved rounds; ratios to 256 bits per round")
    print(
        f"  {'program':10} {'cyxla':>10} {'128 bits':>10} {'256 bits':>10}   "
        "cyxla/256 (quartiles)  128/256 (quartiles)"
    )
    for key, _, _ in programs():
        wide = samples[f"{key}/w256"]
        medians, ratios = [], []
        for width in WIDTHS:
            times = samples[f"{key}/{width}"]
            medians.append(f"{rounds.spread(times).median / 1e3:7.2f} us")
            if width != "w256":
                r = rounds.spread([a / b for a, b in zip(times, wide, strict=True)])
                ratios.append(f"{r.median:.2f}x ({r.low:.2f}-{r.high:.2f})")
        print(f"  {key:10} {' '.join(medians)}   {'  '.join(ratios)}")


if __name__ == "__main__":
    main()
