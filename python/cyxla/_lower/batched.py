"""`lower_batched`: a JAX function lowered as its `jax.vmap` at a few batch sizes."""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax

from cyxla._errors import InvalidArgumentError
from cyxla._lower.lowering import _argument_specs, lower
from cyxla._program.batched import BatchedProgram

__all__ = ["lower_batched"]


def _batch_sizes(batch_sizes: Any) -> tuple[int, ...]:
    """`batch_sizes` ascending, without repeats; TypeError or InvalidArgumentError unless
    it is a non-empty sequence of ints >= 1."""
    if isinstance(batch_sizes, (str, bytes)) or not isinstance(batch_sizes, Sequence):
        raise TypeError(
            "lower_batched: batch_sizes must be a sequence of ints (e.g. (16, 256)), given "
            f"{type(batch_sizes).__name__} {batch_sizes!r}"
        )
    try:
        sizes = [operator.index(s) for s in batch_sizes]
    except TypeError as error:
        raise TypeError(
            f"lower_batched: batch_sizes must be ints, given {batch_sizes!r}"
        ) from error
    if not sizes or min(sizes) < 1:
        raise InvalidArgumentError(
            f"lower_batched: batch_sizes must hold at least one size, each >= 1, given {sizes}"
        )
    return tuple(sorted(set(sizes)))


def lower_batched(
    fn: Callable[..., Any],
    args: Sequence[Any],
    batch_sizes: Sequence[int] = (16, 256),
    *,
    custom_calls: Sequence[str] = (),
) -> BatchedProgram:
    """Lowers `jax.vmap(fn)` at each of `batch_sizes` points, for `compile_batched`.

    Every input and output of the programs gains a leading batch dimension. The compiled
    executable evaluates any number of points with them: the smallest size that holds
    the points, padded, and more points than the largest size in several calls.

    Args:
        fn: A JAX function of one point.
        args: One point, as `lower` takes it: a `jax.ShapeDtypeStruct`, an array or a
            pytree of them per positional argument of `fn`.
        batch_sizes: The sizes to lower at, in any order; repeats are dropped.
        custom_calls: As for `lower`.

    Returns:
        The programs, one per size, ascending.

    Raises:
        TypeError: `batch_sizes` is not a sequence of ints.
        InvalidArgumentError: `batch_sizes` is empty or holds a size below 1, or `fn`
            takes no input (nothing to batch).
    """
    sizes = _batch_sizes(batch_sizes)
    _, tree, specs = _argument_specs(args)
    if not specs:
        raise InvalidArgumentError(
            "lower_batched: the function must take at least one array: the points come in "
            "along a leading dimension of its inputs"
        )
    batched = jax.vmap(fn)
    programs = []
    for index, size in enumerate(sizes):
        stacked = [jax.ShapeDtypeStruct((size, *s.shape), s.dtype) for s in specs]
        with warnings.catch_warnings():
            if index != 0:  # `lower` warns of narrowed dtypes once, at the first size
                warnings.simplefilter("ignore", UserWarning)
            programs.append(
                lower(batched, jax.tree.unflatten(tree, stacked), custom_calls=custom_calls)
            )
    return BatchedProgram(batch_sizes=sizes, programs=tuple(programs))
