"""Arrays whose memory the CPU plugin reads and writes in place: NumPy's allocations, placed
at a multiple of HOST_ALIGNMENT (64 bytes), where NumPy promises 16."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from cyxla import _core

__all__ = ["empty", "is_aligned", "zeros"]


def _shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if not all(isinstance(d, numbers.Integral) for d in dims):
        raise TypeError(f"shape must be an int or a sequence of ints, given {shape!r}")
    if any(d < 0 for d in dims):
        raise ValueError(f"negative dimensions are not allowed, given {shape!r}")
    return tuple(int(d) for d in dims)


def _placed(shape: int | Sequence[int], dtype: Any, make: Any, offset: int = 0) -> np.ndarray:
    dims, kind = _shape(shape), np.dtype(dtype)
    nbytes = math.prod(dims) * kind.itemsize
    alignment = int(_core.HOST_ALIGNMENT)
    # An empty slice would point at the block's start: a zero-size array is the empty
    # head of a slice that is not.
    room = max(nbytes, alignment)
    raw = make(room + alignment + offset, np.uint8)
    start = -raw.ctypes.data % alignment + offset
    return raw[start : start + room][:nbytes].view(kind).reshape(dims)


def empty(shape: int | Sequence[int], dtype: Any = float) -> np.ndarray:
    """A new C-contiguous array of `shape` and `dtype` (anything `numpy.dtype` takes,
    bfloat16 too), not initialized, like `numpy.empty`, but starting at a multiple of
    `HOST_ALIGNMENT` (64) bytes: the CPU plugin reads such an input in place and writes
    such an output in place (`run(out=...)`), where an array that NumPy placed 16 or 32
    bytes past a boundary costs a copy per call. Its `base` is the block it lies in, so
    that NumPy's `resize` refuses it; otherwise it is an ordinary NumPy array.
    """
    return _placed(shape, dtype, np.empty)


def zeros(shape: int | Sequence[int], dtype: Any = float) -> np.ndarray:
    """`empty`, filled with zeros (as `numpy.zeros`: large ones are zero pages that the
    system maps on first touch)."""
    return _placed(shape, dtype, np.zeros)


def is_aligned(array: np.ndarray) -> bool:
    """Whether `array`'s data starts at a multiple of `HOST_ALIGNMENT`: what the CPU plugin
    needs to use it in place (it must also be C-contiguous)."""
    return array.ctypes.data % int(_core.HOST_ALIGNMENT) == 0


def empty_at(offset: int, shape: int | Sequence[int], dtype: Any = float) -> np.ndarray:
    """Like `empty`, but `offset` bytes past a multiple of HOST_ALIGNMENT: an array as
    NumPy may place one, for the tests and the benchmark (the memory back to the boundary
    is the same block's)."""
    return _placed(shape, dtype, np.empty, offset)
