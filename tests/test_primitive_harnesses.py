"""JAX's own primitive harnesses, run by cyxla and by jax.jit on the same arguments.

The jax wheel ships the cases its own tests convert and export
(`jax._src.internal_test_util.test_harnesses`, about 5,500 that run on the CPU): every
primitive at many shapes and dtypes, at the sizes where XLA vectorizes a loop. Each case
is lowered, compiled and run by cyxla and compared with jax.jit. Every CI run takes a
seeded sample (SAMPLE cases, the same ones each run, CYXLA_HARNESS_SEED to draw others);
the whole set runs behind the `slow` marker (`pytest -m slow tests/test_primitive_harnesses.py`).

A case passes when cyxla's outputs are jax.jit's (within the tolerance of their dtype and
kind of operation), or when cyxla refuses the program with one of its own errors naming
what it cannot do; anything else (a wrong number, a crash, a foreign exception) fails.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
import pytest
from jax._src.internal_test_util import test_harnesses

import cyxla as cx

from support import x64_mode

#: How many cases every CI run takes.
SAMPLE = 240
SEED = int(os.environ.get("CYXLA_HARNESS_SEED", "20261204"))

#: Relative and absolute tolerance by float item size: a few ulps of single operations.
ELEMENTWISE = {2: (1e-2, 1e-3), 4: (2e-5, 1e-6), 8: (1e-12, 1e-14)}
#: Operations that add many terms (dot products, convolutions, reductions, FFTs, linear
#: algebra): the two XLA builds may sum in another order or block a product otherwise.
ACCUMULATING = {2: (2e-2, 2e-2), 4: (2e-4, 2e-4), 8: (1e-10, 1e-10)}
#: Harness groups whose results add many terms.
_ACCUMULATING_GROUPS = (
    "dot_general",
    "conv_general_dilated",
    "reduce",
    "reduce_window_add",
    "reduce_window_mul",
    "cumsum",
    "cumprod",
    "cumlogsumexp",
    "fft",
    "cholesky",
    "lu",
    "qr",
    "triangular_solve",
    "tridiagonal_solve",
    "eigh",
    "eig",
    "svd",
    "schur",
    "hessenberg",
    "tridiagonal",
    "select_and_scatter_add",
    "select_and_gather_add",
    "scatter_add",
    "scatter_mul",
    "logistic",
    "random_gamma",
)
#: Groups whose indices of tied values are in no defined order.
_TOP_K = ("approx_top_k", "top_k")


#: cyxla's errors for a program it cannot run, each naming why.
_REFUSALS = (cx.UnsupportedProgramError, cx.CompileError, cx.InvalidArgumentError, cx.DtypeError)


#: Groups of elementwise operations, which also run at the sizes of RESIZED.
_ELEMENTWISE_GROUPS = frozenset(
    """abs acos acosh add and asin asinh atan atan2 atanh bessel_i0e bessel_i1e cbrt ceil
    complex conj convert_element_type cos cosh digamma div eq erf erf_inv erfc exp expm1
    floor ge gt igamma igammac imag integer_pow is_finite le lgamma log log1p logistic lt
    max min mul ne neg nextafter or population_count pow real reduce_precision
    regularized_incomplete_beta rem round rsqrt shift_left shift_right_arithmetic
    shift_right_logical sign sin sinh sqrt sub tan tanh xor""".split()  # noqa: SIM905
)
#: Shapes the elementwise cases run at besides their own (20 x 20, mostly): one element, a
#: vector's remainder, the sizes where XLA's loops are vectorized, an odd 2-D shape.
RESIZED: tuple[tuple[int, ...], ...] = ((1,), (7,), (64,), (1000,), (33, 31))


@dataclass(frozen=True)
class Case:
    harness: Any
    #: The shape its arguments are resized to (their values repeated), or None for theirs.
    shape: tuple[int, ...] | None = None

    @property
    def name(self) -> str:
        suffix = "" if self.shape is None else "@" + "x".join(map(str, self.shape))
        return self.harness.fullname + suffix

    def arguments(self) -> list[Any]:
        args = list(self.harness.dyn_args_maker(np.random.RandomState(SEED)))
        if self.shape is None:
            return args
        size = int(np.prod(self.shape))
        return [np.resize(np.asarray(a).ravel(), size).reshape(self.shape) for a in args]


def _resizable(harness: Any) -> bool:
    """An elementwise case whose arguments are arrays of one shape."""
    if harness.group_name not in _ELEMENTWISE_GROUPS:
        return False
    args = [np.asarray(a) for a in harness.dyn_args_maker(np.random.RandomState(SEED))]
    return bool(args) and all(a.ndim > 0 and a.shape == args[0].shape for a in args)


def _cases() -> list[Case]:
    """Every case, by name: the harnesses' own order follows sets of dtypes, whose order
    changes from one process to the next (ml_dtypes' types hash by address), and the
    sample must be the same in every process, pytest-xdist's workers included."""
    harnesses = [
        h
        for h in test_harnesses.all_harnesses
        if h.filter(device_under_test="cpu", include_jax_unimpl=False)
    ]
    cases = [Case(h) for h in harnesses]
    cases += [Case(h, shape) for h in harnesses if _resizable(h) for shape in RESIZED]
    return sorted(cases, key=lambda case: case.name)


def _sample(cases: Sequence[Case]) -> list[Case]:
    chosen = random.Random(SEED).sample(range(len(cases)), min(SAMPLE, len(cases)))
    return [cases[i] for i in sorted(chosen)]


_ALL = _cases()


def _params(cases: Sequence[Case], *marks: Any) -> list[Any]:
    return [pytest.param(c, id=c.name, marks=marks) for c in cases]


_WIDE = {np.dtype(t) for t in (np.float64, np.int64, np.uint64, np.complex128)}


def _needs_x64(args: Sequence[Any]) -> bool:
    return any(np.asarray(a).dtype in _WIDE for a in jax.tree.leaves(list(args)))


def _tolerance(harness: Any, dtype: np.dtype) -> tuple[float, float]:
    size = dtype.itemsize // (2 if dtype.kind == "c" else 1)
    table = ACCUMULATING if harness.group_name in _ACCUMULATING_GROUPS else ELEMENTWISE
    return table.get(size, table[2])


def _compare_top_k(
    name: str, args: Sequence[Any], ours: Sequence[np.ndarray], theirs: Sequence[Any]
) -> None:
    """Top-k values are jax.jit's; of values that tie, either build may list any index
    first, so the indices must pick those values out of the operand, each once."""
    values, indices = ours
    np.testing.assert_array_equal(values, np.asarray(theirs[0]), err_msg=name)
    operand = np.asarray(args[0])
    picked = np.take_along_axis(operand, indices.astype(np.int64), axis=-1)
    np.testing.assert_array_equal(picked, values, err_msg=f"{name}: indices")
    for row in indices.reshape(-1, indices.shape[-1]):
        assert len(set(row.tolist())) == len(row), f"{name}: an index twice"


def _compare(case: Case, ours: Sequence[np.ndarray], theirs: Sequence[Any]) -> None:
    assert len(ours) == len(theirs), f"{len(ours)} outputs, jax.jit gives {len(theirs)}"
    for index, (mine, reference) in enumerate(zip(ours, theirs, strict=True)):
        reference = np.asarray(reference)
        where = f"{case.name} output {index}"
        assert mine.dtype == reference.dtype, f"{where}: dtype {mine.dtype}, {reference.dtype}"
        assert mine.shape == reference.shape, f"{where}: shape {mine.shape}, {reference.shape}"
        if (
            mine.dtype.kind in "fc"
            or mine.dtype.name in ("bfloat16",)
            or "float8" in str(mine.dtype)
        ):
            rtol, atol = _tolerance(case.harness, np.dtype(mine.dtype))
            np.testing.assert_allclose(
                mine.astype(np.complex128 if mine.dtype.kind == "c" else np.float64),
                reference.astype(np.complex128 if reference.dtype.kind == "c" else np.float64),
                rtol=rtol,
                atol=atol,
                err_msg=where,
            )
        else:
            np.testing.assert_array_equal(mine, reference, err_msg=where)


def _run(case: Case) -> None:
    harness = case.harness
    fn: Callable[..., Any] = harness.dyn_fun
    args = case.arguments()
    with x64_mode(_needs_x64(args)):
        theirs = jax.tree.leaves(jax.jit(fn)(*args))
        try:
            program = cx.lower(fn, args)
            executable, _ = cx.compile_program(program)
        except _REFUSALS as refusal:
            # A refusal is an answer, if it says what cyxla cannot do (printed for `-s`).
            assert str(refusal), f"{case.name}: refused without a message"
            print(f"refused: {case.name}: {type(refusal).__name__}: {refusal}")
            return
        ours = executable.run(jax.tree.leaves(args))
    if harness.group_name in _TOP_K:
        _compare_top_k(case.name, args, ours, theirs)
    else:
        _compare(case, ours, theirs)


@pytest.mark.parametrize("case", _params(_sample(_ALL)))
def test_sampled_harness_matches_jax_jit(case: Case) -> None:
    _run(case)


@pytest.mark.parametrize("case", _params(_ALL, pytest.mark.slow))
def test_every_harness_matches_jax_jit(case: Case) -> None:
    _run(case)
