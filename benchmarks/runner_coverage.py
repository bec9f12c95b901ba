"""Which programs take the kernel runner, and why the others keep PJRT: the functions of
the jnp sweep (tests/support.py's SWEEP_FUNCTIONS) on float32, int32, complex64 and bool
at the kernel runner tests' small shapes, the bench programs, and programs of the kinds our
users run (MLPs, a solver's value and gradient, loops, an ODE step, a sort, a solve).
Prints, per group, the share on kernels and each reason for PJRT with its count.

    python benchmarks/runner_coverage.py [--group sweep|bench|workloads] [--json]

The verdicts are read from the compiled form (`Executable.runner`); nothing is timed.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import cyxla as cx
from cyxla._bench.programs import PROGRAMS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support import SWEEP_FUNCTIONS, all_at_once, sweep_values

F32 = jnp.float32
SMALL_SHAPES = ((), (1,), (3,), (7,), (2, 3), (0, 3), (16,))


def _spec(*shape: int, dtype: Any = F32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def _sweep() -> Iterator[tuple[str, Callable[..., Any], list[Any]]]:
    for name, (fn, arity) in SWEEP_FUNCTIONS.items():
        for dtype_name in ("float32", "int32", "complex64", "bool"):
            dtype = np.dtype(dtype_name)
            shapes = []
            for shape in SMALL_SHAPES:  # the shapes JAX traces it at, as the tests take them
                with contextlib.suppress(TypeError, ValueError):
                    jax.jit(fn).lower(*[sweep_values(shape, dtype, i) for i in range(arity)])
                    shapes.append(shape)
            if shapes:
                flat = [sweep_values(s, dtype, i) for s in shapes for i in range(arity)]
                yield f"{name}-{dtype_name}", all_at_once(fn, arity, len(shapes)), flat


def _bench() -> Iterator[tuple[str, Callable[..., Any], list[Any]]]:
    for program in PROGRAMS:
        yield program.key, program.function, program.make_inputs(np.random.default_rng(0))


def _mlp(x: jax.Array, *weights: jax.Array) -> jax.Array:
    for w in weights[:-1]:
        x = jnp.tanh(x @ w)
    return x @ weights[-1]


def _rosenbrock(x: jax.Array) -> jax.Array:
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _constraint(x: jax.Array) -> jax.Array:
    """The SCIP guide's g (docs/guide/solver.md), in float32."""
    center = jnp.array([1.3, -0.7, 2.2], F32)
    weights = jnp.array([0.5, -1.0, 0.3], F32)
    return 0.5 * jnp.sum((x - center) ** 2) + jax.nn.softplus(weights @ x) - 4.0


def _rk4(y: jax.Array, dt: jax.Array) -> jax.Array:
    """Ten RK4 steps of a damped pendulum."""

    def field(v: jax.Array) -> jax.Array:
        return jnp.stack([v[1], -jnp.sin(v[0]) - 0.1 * v[1]])

    def step(_: Any, v: jax.Array) -> jax.Array:
        k1 = field(v)
        k2 = field(v + dt / 2 * k1)
        k3 = field(v + dt / 2 * k2)
        k4 = field(v + dt * k3)
        return v + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    return jax.lax.fori_loop(0, 10, step, y)


def _workloads() -> Iterator[tuple[str, Callable[..., Any], list[Any]]]:
    for width in (8, 32, 64, 128):
        yield f"mlp {width} wide, 3 layers", _mlp, [_spec(width)] + [_spec(width, width)] * 3
    yield "mlp 16 wide, batch of 32 rows", _mlp, [_spec(32, 16), _spec(16, 16), _spec(16, 4)]
    yield (
        "Rosenbrock value and gradient, f32[10]",
        jax.value_and_grad(_rosenbrock),
        [_spec(10, dtype=jnp.float32)],
    )
    yield "SCIP guide constraint value and gradient", jax.value_and_grad(_constraint), [_spec(3)]
    yield "RK4, ten steps in a fori_loop", _rk4, [_spec(2), _spec()]
    yield "logsumexp and softmax", lambda x: (jax.nn.logsumexp(x), jax.nn.softmax(x)), [_spec(64)]
    yield "cumulative sum", jnp.cumsum, [_spec(100)]
    yield "argmax", jnp.argmax, [_spec(100)]
    yield "sort", jnp.sort, [_spec(100)]
    yield "linear solve (LAPACK)", jnp.linalg.solve, [_spec(4, 4), _spec(4)]


GROUPS: dict[str, Callable[[], Iterator[tuple[str, Callable[..., Any], list[Any]]]]] = {
    "sweep": _sweep,
    "bench": _bench,
    "workloads": _workloads,
}


def _why(reason: str) -> str:
    """A PJRT reason without the program's own names: what stops the kernel runner."""
    thunk = re.search(r"a '([\w-]+)' thunk", reason)
    if thunk:
        return f"its thunk sequence holds a '{thunk.group(1)}' thunk"
    return re.sub(r"'[^']*'", "'...'", reason)


def survey(group: str) -> dict[str, Any]:
    """Per program of `group`, its runner and reason; and the counts."""
    verdicts: dict[str, tuple[str, str]] = {}
    for name, function, arguments in GROUPS[group]():
        executable, _ = cx.compile_program(cx.lower(function, arguments))
        verdicts[name] = (executable.runner.name, executable.runner.reason)
    on_kernels = sum(runner == "kernels" for runner, _ in verdicts.values())
    why = collections.Counter(_why(r) for runner, r in verdicts.values() if runner != "kernels")
    return {
        "programs": len(verdicts),
        "on_kernels": on_kernels,
        "pjrt_reasons": dict(why.most_common()),
        "verdicts": {k: {"runner": v[0], "reason": v[1]} for k, v in verdicts.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--group", choices=sorted(GROUPS), action="append")
    parser.add_argument("--json", action="store_true", help="print the survey as JSON")
    args = parser.parse_args()
    results = {g: survey(g) for g in args.group or GROUPS}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for group, result in results.items():
        share = result["on_kernels"] / result["programs"]
        print(f"{group}: {result['on_kernels']} of {result['programs']} on kernels ({share:.0%})")
        for reason, count in result["pjrt_reasons"].items():
            print(f"  {count:4d}  pjrt: {reason}")
        if group != "sweep":
            for name, verdict in result["verdicts"].items():
                print(f"        {verdict['runner']:8s} {name}")


if __name__ == "__main__":
    main()
