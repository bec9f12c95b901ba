"""`BoundCall`: a program bound once to NumPy arrays, then called with no arguments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cyxla import _core
from cyxla._abi import aligned_zeros
from cyxla._errors import BusyError, DtypeError, InvalidArgumentError
from cyxla._program import TensorSpec

__all__ = ["BoundCall"]


def _carrier(array: np.ndarray) -> np.ndarray:
    """`array` as the core reads it: bfloat16 and other ml_dtypes types as unsigned ints."""
    dtype = array.dtype
    return array.view(f"u{dtype.itemsize}") if dtype.kind == "V" else array


def _checked(role: str, arrays: Sequence[Any] | None, specs: tuple[TensorSpec, ...]) -> list[Any]:
    """The arrays of `role` ("inputs" or "outputs"), checked to be exactly `specs`; new
    aligned arrays where `arrays` is None."""
    if arrays is None:
        return [aligned_zeros(spec.shape, spec.dtype) for spec in specs]
    if isinstance(arrays, (np.ndarray, str, bytes)) or not isinstance(arrays, Sequence):
        raise TypeError(
            f"bind: {role} must be a sequence (list or tuple) of arrays, given "
            f"{type(arrays).__name__}"
        )
    if len(arrays) != len(specs):
        raise InvalidArgumentError(
            f"bind: {role} must hold {len(specs)} arrays, one per {role[:-1]}, given {len(arrays)}"
        )
    for index, (array, spec) in enumerate(zip(arrays, specs, strict=True)):
        where = f"bind: {role}[{index}]"
        if not isinstance(array, np.ndarray):
            raise TypeError(
                f"{where} must be a numpy.ndarray of {spec}, given {type(array).__name__}"
            )
        given = f"{array.dtype.name}[{','.join(map(str, array.shape))}]"
        if array.dtype != spec.dtype:
            raise DtypeError(f"{where}: expected {spec}, given {given} (nothing is cast)")
        if array.shape != spec.shape:
            raise InvalidArgumentError(f"{where}: expected shape {spec}, given {given}")
        if not array.flags.c_contiguous:
            raise InvalidArgumentError(
                f"{where}: expected a C-contiguous array, given one that is not"
            )
        if role == "outputs" and not array.flags.writeable:
            raise InvalidArgumentError(
                f"{where}: expected a writeable array, given a read-only one"
            )
    return list(arrays)


class BoundCall:
    """A program bound to input and output arrays: calling it (`bound()`) runs the program
    on what `inputs` hold and writes `outputs`, with no argument to convert or check.

    Made by `Executable.bind`. Write the inputs in place (`bound.inputs[0][...] = x`), call,
    read the outputs; the arrays are the same objects on every call. The bound call
    references them (and holds their buffers) while it lives, so NumPy's `resize` refuses
    them; do not free or reuse their memory otherwise.
    One thread at a time: a call while another thread is in one raises BusyError. The
    bound call holds its executable alive; `close()` (or leaving a `with` block) ends it.
    """

    def __init__(
        self,
        native: _core.Executable,
        specs: tuple[tuple[TensorSpec, ...], tuple[TensorSpec, ...]],
        inputs: Sequence[Any] | None,
        outputs: Sequence[Any] | None,
    ) -> None:
        ins = _checked("inputs", inputs, specs[0])
        outs = _checked("outputs", outputs, specs[1])
        #: The arrays the program reads, in the program's dtypes.
        self.inputs: tuple[np.ndarray, ...] = tuple(ins)
        #: The arrays the program writes; a call returns this tuple.
        self.outputs: tuple[np.ndarray, ...] = tuple(outs)
        self._native: _core.BoundCall | None = _core.BoundCall(
            native, [_carrier(a) for a in ins], [_carrier(a) for a in outs]
        )

    def __call__(self) -> tuple[np.ndarray, ...]:
        """Runs the program; returns `outputs` (the same arrays every time)."""
        native = self._native
        if native is None:
            raise InvalidArgumentError("the bound call is closed")
        if not native():
            raise BusyError(
                "another thread is in a call of this bound call: bind once per thread to "
                "call from several threads at once"
            )
        return self.outputs

    def close(self) -> None:
        """Ends the bound call (it ends when collected, too); later calls raise
        InvalidArgumentError. A call running in another thread finishes first."""
        self._native = None

    def __enter__(self) -> BoundCall:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
