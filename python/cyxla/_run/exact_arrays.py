"""Arrays that the core reads or writes as they are (`run(out=...)`, `bind`): checked to
be exactly a program's specs, since nothing converts them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cyxla._errors import DtypeError, InvalidArgumentError
from cyxla._program.program import TensorSpec

__all__ = ["carrier_view", "exact_arrays"]


def carrier_view(array: np.ndarray) -> np.ndarray:
    """`array` as the core reads and writes it: bfloat16 and other ml_dtypes types as
    unsigned integers of their size."""
    dtype = array.dtype
    return array.view(f"u{dtype.itemsize}") if dtype.kind == "V" else array


def exact_arrays(
    role: str,
    arrays: Any,
    specs: Sequence[TensorSpec],
    *,
    program: str,
    writeable: bool,
    cast_note: str = "nothing is cast",
) -> list[np.ndarray]:
    """`arrays`, a sequence of NumPy arrays of exactly `specs` (dtype, shape, C order,
    writeable if `writeable`); TypeError, DtypeError or InvalidArgumentError naming the
    argument otherwise. `role` names it in messages ("run: out", "bind: inputs"), and
    `program` the program whose inputs or outputs `specs` are."""
    item = "output" if writeable else "input"
    if isinstance(arrays, (np.ndarray, str, bytes)) or not isinstance(arrays, Sequence):
        raise TypeError(
            f"{role} must be a sequence (list or tuple) of arrays, one per {item} of "
            f"{program}, given {type(arrays).__name__}"
        )
    if len(arrays) != len(specs):
        raise InvalidArgumentError(
            f"{role} must hold {len(specs)} arrays, one per {item} of {program}, given "
            f"{len(arrays)}"
        )
    for index, (array, spec) in enumerate(zip(arrays, specs, strict=True)):
        # Checked in the order of the cheapest test first; messages are made on failure
        # only, since run(out=...) passes here on every call.
        if (
            isinstance(array, np.ndarray)
            and array.shape == spec.shape
            and array.dtype == spec.dtype
            and (array.flags.writeable or not writeable)
            and array.flags.c_contiguous
        ):
            continue
        _refuse(f"{role}[{index}]", array, spec, writeable, cast_note)
    return list(arrays)


def _refuse(where: str, array: Any, spec: TensorSpec, writeable: bool, cast_note: str) -> None:
    """Raises the error that says how `array` is not exactly `spec`."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{where} must be a numpy.ndarray of {spec}, given {type(array).__name__}")
    given = f"{array.dtype.name}[{','.join(map(str, array.shape))}]"
    if array.shape != spec.shape:
        raise InvalidArgumentError(f"{where}: expected shape {spec}, given {given}")
    if array.dtype != spec.dtype:
        raise DtypeError(f"{where}: expected {spec}, given {given} ({cast_note})")
    if writeable and not array.flags.writeable:
        raise InvalidArgumentError(f"{where}: expected a writeable array, given a read-only one")
    raise InvalidArgumentError(
        f"{where}: expected a C-contiguous array, given a {given} that is not"
    )
