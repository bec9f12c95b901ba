"""`BoundCall`: a program bound once to NumPy arrays, then called with no arguments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cyxla import _core
from cyxla._errors import BusyError, InvalidArgumentError
from cyxla._program.program import TensorSpec
from cyxla._run.aligned import zeros
from cyxla._run.exact_arrays import carrier_view, exact_arrays

__all__ = ["BoundCall"]


def _checked(
    role: str, arrays: Sequence[Any] | None, specs: tuple[TensorSpec, ...], program: str
) -> list[Any]:
    """The arrays of `role` ("inputs" or "outputs"), checked to be exactly `specs`; new
    aligned arrays where `arrays` is None."""
    if arrays is None:
        return [zeros(spec.shape, spec.dtype) for spec in specs]
    return exact_arrays(
        f"bind: {role}", arrays, specs, program=program, writeable=role == "outputs"
    )


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
        program: str,
    ) -> None:
        ins = _checked("inputs", inputs, specs[0], program)
        outs = _checked("outputs", outputs, specs[1], program)
        self.inputs: tuple[np.ndarray, ...] = tuple(ins)
        """The arrays the program reads, in the program's dtypes."""
        self.outputs: tuple[np.ndarray, ...] = tuple(outs)
        """The arrays the program writes; a call returns this tuple."""
        self._native: _core.BoundCall | None = _core.BoundCall(
            native, [carrier_view(a) for a in ins], [carrier_view(a) for a in outs]
        )
        self._handle: int = self._native.handle

    @property
    def handle(self) -> int:
        """The bound call's handle in the C API: what `cyxla_call_bound` takes (a
        `uint64_t`), and `cyxla.numba.call_bound` in numba's nopython mode.

        Compiled code that calls it runs the program on `inputs` and writes `outputs`,
        with no Python in the call; the rules of a Python call hold (one thread at a time,
        the arrays' memory held by this object). Once the bound call is closed or
        collected, a call with the handle runs nothing and returns CYXLA_ERROR_RELEASED
        (3): it never reaches freed memory. End it with `close()`, not `cyxla_unbind`.
        """
        return self._handle

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
