"""A differential sweep of jax.numpy: wherever jax.jit runs a function on a dtype and a
shape, cyxla lowers, compiles and runs it too, and gives the same numbers.

Each test is one function on one dtype, over small shapes and the sizes where XLA
vectorizes a loop (64 and 1000 elements, an odd 33 x 31): the shapes that `jax.jit`
lowers it at are lowered together as one program (one compile per test keeps the sweep
fast), and a mismatch names its shape. At 64 elements and more, `jnp.arctan` came back
wrong until the CPU's loops were vectorized 128 bits wide (runtime/platforms.hpp).
Integers and booleans must be equal; floats and complex numbers equal within a few ulps
of their type (the plugin's XLA is a separate build of jaxlib's, whose transcendental
functions may round differently), with NaN where jax.jit has NaN.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.scipy.special
import numpy as np
import pytest

import cyxla as cx

from support import (
    SWEEP_FUNCTIONS,
    all_at_once,
    compare_with_jit,
    sweep_values,
    x64_mode,
)

SHAPES: tuple[tuple[int, ...], ...] = (
    (),
    (1,),
    (3,),
    (7,),
    (2, 3),
    (0, 3),
    (64,),
    (1000,),
    (33, 31),
)
#: (name, whether it needs 64-bit mode); float64 and int64 exist only with jax_enable_x64.
DTYPES = (
    ("bool", False),
    ("int32", False),
    ("float32", False),
    ("complex64", False),
    ("float64", True),
    ("int64", True),
)


def _arguments_by_shape(
    fn: Callable[..., Any], arity: int, dtype: np.dtype
) -> dict[tuple[int, ...], list[np.ndarray]]:
    """The arguments of `fn` at each shape that jax.jit lowers it at (`jax.eval_shape`
    accepts more: jnp.argmax of complex numbers fails only in jit). Most functions lower at
    every shape, which one lowering of all of them shows; each shape is tried alone only
    when that fails."""
    every = {shape: [sweep_values(shape, dtype, i) for i in range(arity)] for shape in SHAPES}
    with contextlib.suppress(TypeError, ValueError):
        jax.jit(all_at_once(fn, arity, len(SHAPES))).lower(*itertools.chain(*every.values()))
        return every
    runnable = {}
    for shape, arguments in every.items():
        try:
            jax.jit(fn).lower(*arguments)
        except (TypeError, ValueError):
            continue
        runnable[shape] = arguments
    return runnable


def _cases() -> Iterator[Any]:
    for name in SWEEP_FUNCTIONS:
        for dtype, needs_x64 in DTYPES:
            yield pytest.param(name, dtype, needs_x64, id=f"{name}-{dtype}")


@pytest.mark.parametrize(("name", "dtype_name", "needs_x64"), list(_cases()))
def test_cyxla_runs_what_jax_jit_runs_and_agrees(
    name: str, dtype_name: str, needs_x64: bool
) -> None:
    fn, arity = SWEEP_FUNCTIONS[name]
    dtype = np.dtype(dtype_name)
    with x64_mode(needs_x64):
        runnable = _arguments_by_shape(fn, arity, dtype)
        if not runnable:
            pytest.skip(f"JAX does not trace {name} on {dtype_name} at any shape")
        shapes = list(runnable)
        flat = [a for arguments in runnable.values() for a in arguments]
        # One jitted function for both, as users hand `lower` what they jit: jax.export
        # of a jitted function drops the arguments a result does not use (jnp.imag of a
        # real array) unless cyxla keeps them.
        every = jax.jit(all_at_once(fn, arity, len(shapes)))
        theirs = every(*flat)
        executable, _ = cx.compile_program(cx.lower(every, flat))
        ours = executable.run(flat)
    assert executable.inputs == tuple(cx.TensorSpec(a.shape, a.dtype) for a in flat)
    per_shape = [jax.tree.leaves(result) for result in theirs]
    outputs = iter(ours)
    for shape, references in zip(shapes, per_shape, strict=True):
        for index, reference in enumerate(references):
            where = f"{name}({dtype_name}{list(shape)}) output {index}"
            compare_with_jit(next(outputs), np.asarray(reference), where)
