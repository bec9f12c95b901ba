"""The dtypes a program may take and return, and their PJRT element types."""

from __future__ import annotations

import enum

import ml_dtypes
import numpy as np

__all__ = [
    "SUPPORTED_DTYPES",
    "SUPPORTED_NAMES",
    "ElementType",
    "dtype_of",
    "element_type_of",
]


class ElementType(enum.IntEnum):
    """PJRT_Buffer_Type: the plugin's numbering of element types."""

    PRED = 1
    S8 = 2
    S16 = 3
    S32 = 4
    S64 = 5
    U8 = 6
    U16 = 7
    U32 = 8
    U64 = 9
    F16 = 10
    F32 = 11
    F64 = 12
    BF16 = 13
    C64 = 14
    C128 = 15


#: The one table of the element types cyxla carries: NumPy dtype to PJRT element type.
#: Names, byte sizes (`dtype.itemsize`) and the lists in error messages derive from it.
_BY_DTYPE: dict[np.dtype, ElementType] = {
    np.dtype(np.bool_): ElementType.PRED,
    np.dtype(np.int8): ElementType.S8,
    np.dtype(np.int16): ElementType.S16,
    np.dtype(np.int32): ElementType.S32,
    np.dtype(np.int64): ElementType.S64,
    np.dtype(np.uint8): ElementType.U8,
    np.dtype(np.uint16): ElementType.U16,
    np.dtype(np.uint32): ElementType.U32,
    np.dtype(np.uint64): ElementType.U64,
    np.dtype(np.float16): ElementType.F16,
    np.dtype(np.float32): ElementType.F32,
    np.dtype(np.float64): ElementType.F64,
    np.dtype(ml_dtypes.bfloat16): ElementType.BF16,
    np.dtype(np.complex64): ElementType.C64,
    np.dtype(np.complex128): ElementType.C128,
}
_BY_TYPE = {t: d for d, t in _BY_DTYPE.items()}

#: The dtypes cyxla carries between NumPy and PJRT buffers.
SUPPORTED_DTYPES: tuple[np.dtype, ...] = tuple(_BY_DTYPE)
#: Their names, for messages: "bool, int8, ..., complex128".
SUPPORTED_NAMES = ", ".join(dtype.name for dtype in SUPPORTED_DTYPES)


def element_type_of(dtype: np.dtype) -> ElementType | None:
    """The PJRT element type of `dtype`, or None when cyxla does not support it."""
    return _BY_DTYPE.get(np.dtype(dtype))


def dtype_of(element_type: int) -> np.dtype:
    """The NumPy dtype of a PJRT element type that cyxla supports."""
    return _BY_TYPE[ElementType(element_type)]
