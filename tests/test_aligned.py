"""`cyxla.empty` and `cyxla.zeros`: NumPy arrays at 64-byte boundaries, which the CPU
plugin reads and writes in place, checked against NumPy's own and against the core's
report of where the plugin wrote each result."""

from __future__ import annotations

from typing import Any

import jax
import ml_dtypes
import numpy as np
import pytest

import cyxla as cx
from cyxla._run.aligned import empty_at

from support import compile_fn, hooks, spec


@pytest.mark.parametrize("make", [cx.empty, cx.zeros], ids=["empty", "zeros"])
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [
        ((), np.float32),
        (0, np.float64),
        ((0, 3), np.int8),
        (1, np.bool_),
        (7, np.int16),
        ((3, 5), np.float32),
        ((2, 3, 4), np.complex64),
        ([1 << 18], np.float32),
        ((5,), ml_dtypes.bfloat16),
        (np.int64(9), "float16"),
    ],
)
def test_arrays_are_numpys_at_a_64_byte_boundary(make: Any, shape: Any, dtype: Any) -> None:
    array = make(shape, dtype)
    like = np.zeros(shape, dtype)
    assert type(array) is np.ndarray
    assert (array.shape, array.dtype) == (like.shape, like.dtype)
    assert array.flags.c_contiguous and array.flags.writeable
    assert array.ctypes.data % cx.HOST_ALIGNMENT == 0 and cx.is_aligned(array)
    if make is cx.zeros:
        np.testing.assert_array_equal(array, like)
    array[...] = 1  # its memory is its own: writing it touches nothing around it
    np.testing.assert_array_equal(array, np.ones(shape, dtype))


def test_many_arrays_are_each_aligned_and_apart() -> None:
    arrays = [cx.empty(n, np.float32) for n in range(1, 200)]
    for n, array in enumerate(arrays, 1):
        assert cx.is_aligned(array)
        array[...] = n
    for n, array in enumerate(arrays, 1):
        np.testing.assert_array_equal(array, n)


def test_the_default_dtype_is_numpys() -> None:
    assert cx.empty(3).dtype == np.empty(3).dtype == cx.zeros(3).dtype


@pytest.mark.parametrize(
    ("shape", "error", "message"),
    [
        (-1, ValueError, "negative dimensions are not allowed"),
        ((2, -3), ValueError, "negative dimensions are not allowed"),
        ((2.0, 3), TypeError, "shape must be an int or a sequence of ints"),
        ("ab", TypeError, "shape must be an int or a sequence of ints"),
    ],
)
def test_bad_shapes_are_refused_as_numpy_refuses_them(
    shape: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        cx.empty(shape, np.float32)


def test_is_aligned_sees_numpys_usual_placement() -> None:
    raw = cx.empty(64 + 64, np.uint8)
    assert cx.is_aligned(raw) and not cx.is_aligned(raw[16:])


@pytest.mark.parametrize("offset", [0, 4, 16, 63])
def test_the_tests_arrays_at_an_offset_start_there(offset: int) -> None:
    array = empty_at(offset, (3, 5), np.int8)
    assert array.ctypes.data % 64 == offset and array.shape == (3, 5)
    assert array.dtype == np.int8 and array.flags.c_contiguous and array.flags.writeable


def test_the_plugin_writes_into_them_in_place() -> None:
    # A large output gets a donated parameter; an aligned array receives the result with
    # no copy, an array 16 bytes off a boundary through one.
    executable = compile_fn(lambda x: x * 2 + 1, [spec((1 << 16,), np.float32)])
    x = cx.zeros(1 << 16, np.float32)
    x[...] = np.arange(1 << 16)
    aligned = cx.empty(1 << 16, np.float32)
    off = empty_at(16, (1 << 16,), np.float32)
    assert hooks.writes_in_place(executable._native, [x], [aligned]) == [True]
    assert hooks.writes_in_place(executable._native, [x], [off]) == [False]
    want = np.asarray(jax.jit(lambda v: v * 2 + 1)(x))
    np.testing.assert_array_equal(aligned, want)
    np.testing.assert_array_equal(off, want)
    for out in (aligned, off):
        out[...] = 0
        assert executable.run([x], out=[out])[0] is out
        np.testing.assert_array_equal(out, want)
