"""The dtypes a program may take and return, and their PJRT element types."""

from __future__ import annotations

import enum
import functools
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

__all__ = [
    "SUPPORTED_DTYPES",
    "SUPPORTED_NAMES",
    "ElementType",
    "as_dtype",
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


#: The one table of the element types cyxla carries, by NumPy dtype name: bfloat16 is
#: ml_dtypes', which is imported (about half a second) only when a program or an array
#: has one. Names, byte sizes (`dtype.itemsize`) and the lists in error messages derive
#: from it.
_BY_NAME: dict[str, ElementType] = {
    "bool": ElementType.PRED,
    "int8": ElementType.S8,
    "int16": ElementType.S16,
    "int32": ElementType.S32,
    "int64": ElementType.S64,
    "uint8": ElementType.U8,
    "uint16": ElementType.U16,
    "uint32": ElementType.U32,
    "uint64": ElementType.U64,
    "float16": ElementType.F16,
    "float32": ElementType.F32,
    "float64": ElementType.F64,
    "bfloat16": ElementType.BF16,
    "complex64": ElementType.C64,
    "complex128": ElementType.C128,
}
_BY_TYPE = {t: n for n, t in _BY_NAME.items()}

#: Their names, for messages: "bool, int8, ..., complex128".
SUPPORTED_NAMES = ", ".join(_BY_NAME)

if TYPE_CHECKING:
    #: The dtypes cyxla carries between NumPy and PJRT buffers (made on first use).
    SUPPORTED_DTYPES: tuple[np.dtype, ...]


def __getattr__(name: str) -> Any:
    if name == "SUPPORTED_DTYPES":
        return tuple(dtype_of(t) for t in _BY_NAME.values())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def as_dtype(value: Any) -> np.dtype:
    """`np.dtype(value)`, where the names of ml_dtypes' types ("bfloat16") are known
    too; TypeError if it is no dtype."""
    try:
        return np.dtype(value)
    except TypeError:
        if "ml_dtypes" in sys.modules:
            raise
    import ml_dtypes  # noqa: F401  (registers its names with NumPy)

    return np.dtype(value)


def element_type_of(dtype: Any) -> ElementType | None:
    """The PJRT element type of `dtype`, or None when cyxla does not support it."""
    normalized = as_dtype(dtype)
    element_type = _BY_NAME.get(normalized.name)
    # The name alone does not tell native byte order from another, or NumPy's types from
    # a foreign one of the same name.
    if element_type is None or dtype_of(element_type) != normalized:
        return None
    return element_type


@functools.cache
def dtype_of(element_type: int) -> np.dtype:
    """The NumPy dtype of a PJRT element type that cyxla supports."""
    name = _BY_TYPE[ElementType(element_type)]
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)
