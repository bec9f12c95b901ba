"""Which programs export_aot can compile into plain C: the functions of the jnp sweep
(tests/support.py's SWEEP_FUNCTIONS) on float32, int32, bool and complex64 at shapes (3,)
and (2, 3), small MLPs, and the constraint of the SCIP guide (docs/guide/solver.md) with
its gradient. Prints each refusal's reason and the fraction that qualifies.

    python benchmarks/aot_coverage.py          # needs the aot extra: pip install "cyxla[aot]"
"""

from __future__ import annotations

import collections
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import cyxla as cx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support import SWEEP_FUNCTIONS, all_at_once, sweep_values

F32 = jnp.float32


def _spec(*shape: int, dtype: Any = F32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def _mlp(width: int, layers: int) -> Callable[..., jax.Array]:
    def mlp(x: jax.Array, *weights: jax.Array) -> jax.Array:
        for w in weights[:-1]:
            x = jnp.tanh(x @ w)
        return x @ weights[-1]

    mlp.__name__ = f"mlp_{width}x{layers}"
    return mlp


def _constraint(x: jax.Array) -> jax.Array:
    """The SCIP guide's g, in float32."""
    center = jnp.array([1.3, -0.7, 2.2], F32)
    weights = jnp.array([0.5, -1.0, 0.3], F32)
    return 0.5 * jnp.sum((x - center) ** 2) + jax.nn.softplus(weights @ x) - 4.0


def programs() -> Iterator[tuple[str, str, Callable[..., Any], list[Any]]]:
    """(group, name, function, arguments) of every program tried."""
    for name, (function, arity) in SWEEP_FUNCTIONS.items():
        for dtype_name in ("float32", "int32", "bool", "complex64"):
            dtype = np.dtype(dtype_name)
            shapes = [(3,), (2, 3)]
            flat = [sweep_values(s, dtype, operand) for s in shapes for operand in range(arity)]
            every = all_at_once(function, arity, len(shapes))
            try:
                jax.jit(every).lower(*flat)
            except (TypeError, ValueError):
                continue  # jax.jit does not run it either
            yield "jnp sweep", f"{name}-{dtype_name}", every, flat
    for width, layers in [(16, 2), (64, 2), (64, 4), (128, 2), (256, 2)]:
        specs = [_spec(width)] + [_spec(width, width)] * layers
        yield "MLP", f"mlp {width} wide, {layers} layers", _mlp(width, layers), specs
    yield "SCIP guide", "g", _constraint, [_spec(3)]
    yield "SCIP guide", "value_and_grad(g)", jax.value_and_grad(_constraint), [_spec(3)]


def _reason(error: Exception) -> str:
    text = str(error)
    if found := re.search(r"\(([^()]*thunks?[^()]*)\)", text):
        return found.group(1)
    if found := re.search(r"Unsupported thunk type: [\w-]+", text):
        return found.group(0)
    if "complex numbers" in text:
        return "complex numbers"
    if re.search(r"calls ([\w, ]+), which", text):
        return "custom calls"
    return text.splitlines()[0][:80]


def main() -> int:
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    reasons: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as directory:
        for group, name, function, arguments in programs():
            try:
                cx.export_aot(cx.lower(function, arguments), directory, name="probe")
                counts[group]["qualifies"] += 1
            except cx.UnsupportedProgramError as error:
                counts[group]["refused"] += 1
                reasons[_reason(error)] += 1
                print(f"refused: {group}: {name}: {_reason(error)}")
    total = collections.Counter()
    for group, count in counts.items():
        total.update(count)
        tried = count["qualifies"] + count["refused"]
        print(f"{group}: {count['qualifies']} of {tried} qualify")
    tried = total["qualifies"] + total["refused"]
    print(f"all: {total['qualifies']} of {tried} qualify ({total['qualifies'] / tried:.0%})")
    for reason, count in reasons.most_common():
        print(f"  refused for {reason}: {count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
