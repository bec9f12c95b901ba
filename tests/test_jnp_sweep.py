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
import jax.numpy as jnp
import jax.scipy.special
import numpy as np
import pytest

import cyxla as cx

from support import x64_mode

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
#: Relative and absolute tolerance by dtype: a few ulps (complex64 a few more: jax.nn.gelu
#: of a complex number near 500 differs by 1.6e-5 between jaxlib 0.10.2 and the plugin).
TOLERANCE = {
    "float32": (1e-5, 1e-6),
    "complex64": (3e-5, 1e-6),
    "float64": (1e-12, 1e-14),
}

_FLOATS = [0.5, -1.5, 0.0, -0.0, 2.0, np.nan, np.inf, -np.inf, 3.25, -0.75, 1.0, 7.0]
_INTS = [3, -2, 0, 1, 5, -7, 2, 4, -1, 6, 1, -3]
#: Second operands: no zero, so that integer division is defined.
_INTS_NONZERO = [2, -3, 1, 5, -1, 4, 7, -2, 3, 1, -4, 6]


def _values(shape: tuple[int, ...], dtype: np.dtype, operand: int) -> np.ndarray:
    """Deterministic values of `shape` and `dtype`: first the pool's (NaN, infinities and
    -0.0 included for floats), then seeded random ones, so that no two lanes of a vector
    hold the same value; `operand` 1 takes other values (nonzero for integers)."""
    size = int(np.prod(shape, dtype=np.int64))
    roll = 5 * operand
    rng = np.random.default_rng(operand)
    if dtype.kind == "f":
        pool = np.roll(np.array(_FLOATS), roll)
        rest = rng.uniform(-4, 4, size)
    elif dtype.kind == "c":
        finite = np.array([v for v in _FLOATS if np.isfinite(v)])
        pool = np.roll(finite, roll) + 1j * np.roll(finite, roll + 3)
        rest = rng.uniform(-4, 4, size) + 1j * rng.uniform(-4, 4, size)
    else:
        pool = np.array(_INTS_NONZERO if operand else _INTS)
        rest = rng.integers(1, 8, size) * rng.choice([-1, 1], size)
    values = np.concatenate([pool, rest])[:size] if size > len(pool) else pool[:size]
    return values.reshape(shape).astype(dtype)


def _unary() -> dict[str, Callable[..., Any]]:
    return {
        "abs": jnp.abs,
        "sign": jnp.sign,
        "sqrt": jnp.sqrt,
        "exp": jnp.exp,
        "log": jnp.log,
        "sin": jnp.sin,
        "floor": jnp.floor,
        "reciprocal": jnp.reciprocal,
        "isfinite": jnp.isfinite,
        "isinf": jnp.isinf,
        "isnan": jnp.isnan,
        "signbit": jnp.signbit,
        "imag": jnp.imag,
        "real": jnp.real,
        "conj": jnp.conj,
        "logical_not": jnp.logical_not,
        "arctan": jnp.arctan,
        "arcsin": jnp.arcsin,
        "arccos": jnp.arccos,
        "arcsinh": jnp.arcsinh,
        "arccosh": jnp.arccosh,
        "arctanh": jnp.arctanh,
        "cos": jnp.cos,
        "tan": jnp.tan,
        "sinh": jnp.sinh,
        "cosh": jnp.cosh,
        "tanh": jnp.tanh,
        "expm1": jnp.expm1,
        "log1p": jnp.log1p,
        "log2": jnp.log2,
        "exp2": jnp.exp2,
        "cbrt": jnp.cbrt,
        "square": jnp.square,
        "rint": jnp.rint,
        "ceil": jnp.ceil,
        "trunc": jnp.trunc,
        "erf": jax.scipy.special.erf,
        "erfc": jax.scipy.special.erfc,
        "erf_inv": jax.scipy.special.erfinv,
        "gammaln": jax.scipy.special.gammaln,
        "digamma": jax.scipy.special.digamma,
        "sigmoid": jax.nn.sigmoid,
        "softplus": jax.nn.softplus,
        "gelu": jax.nn.gelu,
        "silu": jax.nn.silu,
        "nan_to_num": jnp.nan_to_num,
        "clip": lambda x: jnp.clip(x, -1, 2),
        "sum": jnp.sum,
        "mean": jnp.mean,
        "max": jnp.max,
        "argmax": jnp.argmax,
        "cumsum": jnp.cumsum,
        "sort": jnp.sort,
        "reshape": lambda x: jnp.reshape(x, (-1,)),
        "transpose": jnp.transpose,
    }


def _binary() -> dict[str, Callable[..., Any]]:
    return {
        "add": jnp.add,
        "multiply": jnp.multiply,
        "divide": jnp.divide,
        "floor_divide": jnp.floor_divide,
        "maximum": jnp.maximum,
        "fmax": jnp.fmax,
        "arctan2": jnp.arctan2,
        "power": jnp.power,
        "hypot": jnp.hypot,
        "logaddexp": jnp.logaddexp,
        "remainder": jnp.remainder,
        "copysign": jnp.copysign,
        "equal": jnp.equal,
        "less": jnp.less,
        "where": lambda x, y: jnp.where(jnp.abs(x) > jnp.abs(y), x, y),
        "matmul": lambda x, y: jnp.matmul(x, y.T),
        "dot": lambda x, y: jnp.dot(x, y),
        "concatenate": lambda x, y: jnp.concatenate([x, y]),
    }


FUNCTIONS: dict[str, tuple[Callable[..., Any], int]] = {
    **{name: (fn, 1) for name, fn in _unary().items()},
    **{name: (fn, 2) for name, fn in _binary().items()},
}


def _arguments_by_shape(
    fn: Callable[..., Any], arity: int, dtype: np.dtype
) -> dict[tuple[int, ...], list[np.ndarray]]:
    """The arguments of `fn` at each shape that jax.jit lowers it at (`jax.eval_shape`
    accepts more: jnp.argmax of complex numbers fails only in jit). Most functions lower at
    every shape, which one lowering of all of them shows; each shape is tried alone only
    when that fails."""
    every = {shape: [_values(shape, dtype, i) for i in range(arity)] for shape in SHAPES}
    with contextlib.suppress(TypeError, ValueError):
        jax.jit(_all_at_once(fn, arity, len(SHAPES))).lower(*itertools.chain(*every.values()))
        return every
    runnable = {}
    for shape, arguments in every.items():
        try:
            jax.jit(fn).lower(*arguments)
        except (TypeError, ValueError):
            continue
        runnable[shape] = arguments
    return runnable


def _all_at_once(fn: Callable[..., Any], arity: int, count: int) -> Callable[..., Any]:
    """`fn` applied to each of `count` groups of `arity` consecutive arguments."""

    def every(*flat: Any) -> tuple[Any, ...]:
        return tuple(fn(*flat[i * arity : (i + 1) * arity]) for i in range(count))

    return every


def _compare(ours: np.ndarray, theirs: np.ndarray, where: str) -> None:
    assert ours.dtype == theirs.dtype, f"{where}: dtype {ours.dtype}, jax.jit {theirs.dtype}"
    assert ours.shape == theirs.shape, f"{where}: shape {ours.shape}, jax.jit {theirs.shape}"
    if ours.dtype.kind in "fc":
        rtol, atol = TOLERANCE[ours.dtype.name]
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=where)
    else:
        np.testing.assert_array_equal(ours, theirs, err_msg=where)


def _cases() -> Iterator[Any]:
    for name in FUNCTIONS:
        for dtype, needs_x64 in DTYPES:
            yield pytest.param(name, dtype, needs_x64, id=f"{name}-{dtype}")


@pytest.mark.parametrize(("name", "dtype_name", "needs_x64"), list(_cases()))
def test_cyxla_runs_what_jax_jit_runs_and_agrees(
    name: str, dtype_name: str, needs_x64: bool
) -> None:
    fn, arity = FUNCTIONS[name]
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
        every = jax.jit(_all_at_once(fn, arity, len(shapes)))
        theirs = every(*flat)
        executable, _ = cx.compile_program(cx.lower(every, flat))
        ours = executable.run(flat)
    assert executable.inputs == tuple(cx.TensorSpec(a.shape, a.dtype) for a in flat)
    per_shape = [jax.tree.leaves(result) for result in theirs]
    outputs = iter(ours)
    for shape, references in zip(shapes, per_shape, strict=True):
        for index, reference in enumerate(references):
            where = f"{name}({dtype_name}{list(shape)}) output {index}"
            _compare(next(outputs), np.asarray(reference), where)
