"""`compile_batched` and `BatchedExecutable`: a function compiled at a few batch sizes,
run on any number of points."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cyxla import _core
from cyxla._errors import DtypeError, InvalidArgumentError
from cyxla._program.batched import BatchedProgram
from cyxla._program.program import TensorSpec
from cyxla._run.executable import (
    CompileStatistics,
    Executable,
    LazyHandle,
    _carrier,
    compile_program,
)

__all__ = ["BatchedExecutable", "compile_batched"]


class BatchedExecutable:
    """A function compiled at a few batch sizes (`BatchedProgram`), one executable per
    size behind one native handle.

    `run` evaluates any number of points from Python; native code does the same with
    `cyxla_execute_batch` from the C API, with no Python and no GIL.
    """

    def __init__(
        self,
        native: _core.BatchedExecutable,
        program: BatchedProgram,
        executables: tuple[Executable, ...],
    ) -> None:
        self._native = native
        self.program = program
        """The `BatchedProgram` this executable was compiled from."""
        self.executables = executables
        """One `Executable` per batch size, in the order of `batch_sizes`."""
        self._handle = LazyHandle()
        self._inputs = program.inputs
        self._outputs = program.outputs

    @property
    def handle(self) -> int:
        """The handle native code passes to `cyxla_get_spec`: its spec describes one point
        and lists the batch sizes. Valid while this object lives (see Executable.handle)."""
        return self._handle.value_of(self._native)

    @property
    def platform(self) -> str:
        """The platform the program was lowered and compiled for: cpu, cuda, rocm or tpu."""
        return self.program.platform

    @property
    def batch_sizes(self) -> tuple[int, ...]:
        """The batch sizes it was compiled at, ascending."""
        return self.program.batch_sizes

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        """One point's inputs."""
        return self._inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        """One point's outputs."""
        return self._outputs

    def run(self, arrays: Sequence[Any]) -> tuple[np.ndarray, ...]:
        """Evaluates n points: `arrays` holds one array per input, each of n points along
        its leading dimension (shape `(n, *inputs[i].shape)`); returns one array per
        output, of shape `(n, *outputs[j].shape)`. n may be 0.

        Arguments are converted to the input dtypes where NumPy's `same_kind` casting
        allows it; a wrong count or shape, or arrays of different n, raise
        InvalidArgumentError (a ValueError) and an impossible cast DtypeError (a
        TypeError), naming the argument.
        """
        if isinstance(arrays, (np.ndarray, str, bytes)) or not isinstance(arrays, Sequence):
            raise TypeError(
                f"run: arrays must be a sequence (list or tuple) of arrays, one per input of "
                f"{self.program.name}, given {type(arrays).__name__}"
            )
        if len(arrays) != len(self._inputs):
            raise InvalidArgumentError(
                f"run: {self.program.name} takes {len(self._inputs)} arrays, given {len(arrays)}"
            )
        inputs = [
            _points(i, a, s) for i, (a, s) in enumerate(zip(arrays, self._inputs, strict=True))
        ]
        n = inputs[0].shape[0]
        for index, array in enumerate(inputs):
            if array.shape[0] != n:
                raise InvalidArgumentError(
                    f"run: argument {index} holds {array.shape[0]} points, argument 0 holds {n}"
                )
        outputs = [np.empty((n, *s.shape), _carrier(s.dtype) or s.dtype) for s in self._outputs]
        self._native._execute(n, [_carried(a) for a in inputs], outputs)
        return tuple(
            o.view(s.dtype) if _carrier(s.dtype) else o
            for o, s in zip(outputs, self._outputs, strict=True)
        )

    def __repr__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        outs = ", ".join(map(str, self.outputs))
        sizes = ", ".join(map(str, self.batch_sizes))
        return (
            f"<cyxla.BatchedExecutable {self.program.name}({ins}) -> ({outs}) at batch sizes "
            f"({sizes}) on {self.platform}>"
        )


def _points(index: int, value: Any, spec: TensorSpec) -> np.ndarray:
    """Argument `index` as a C-contiguous array of points of `spec` (shape (n, *spec))."""
    array = value if type(value) is np.ndarray else np.asarray(value)
    if array.ndim != len(spec.shape) + 1 or array.shape[1:] != spec.shape:
        raise InvalidArgumentError(
            f"run: argument {index}: expected shape (n, {', '.join(map(str, spec.shape))}) "
            f"({spec.dtype.name}), n points of {spec}, given shape {array.shape} "
            f"({array.dtype.name})"
        )
    if array.dtype != spec.dtype:
        if not np.can_cast(array.dtype, spec.dtype, casting="same_kind"):
            raise DtypeError(
                f"run: argument {index}: expected points of {spec}, given {array.dtype.name}, "
                f"which does not cast to {spec.dtype.name} under 'same_kind' casting"
            )
        return array.astype(spec.dtype, order="C")
    return np.ascontiguousarray(array)


def _carried(array: np.ndarray) -> np.ndarray:
    """`array` as the core reads it (bfloat16 as uint16)."""
    carrier = _carrier(array.dtype)
    return array.view(carrier) if carrier is not None else array


def compile_batched(
    program: BatchedProgram,
    *,
    options: Mapping[str, Any] | None = None,
    runner: str | None = None,
) -> tuple[BatchedExecutable, CompileStatistics]:
    """Compiles each program of `program` with `compile_program`, disk cache included,
    into one `BatchedExecutable`.

    Args:
        program: What `lower_batched` returns.
        options: `compile_program`'s, for every batch size.
        runner: `compile_program`'s, for every batch size.

    Returns:
        The batched executable, and statistics that add up the sizes' seconds
        (`cache_hit` is whether every size came from the disk cache).

    Raises:
        TypeError: `program` is not a BatchedProgram.
    """
    if not isinstance(program, BatchedProgram):
        raise TypeError(
            "compile_batched: program must be a cyxla.BatchedProgram (what "
            f"cyxla.lower_batched returns), given {type(program).__name__}"
        )
    compiled = [compile_program(p, options=options, runner=runner) for p in program.programs]
    executables = tuple(e for e, _ in compiled)
    statistics = [s for _, s in compiled]
    errors = [s.cache_error for s in statistics if s.cache_error]
    native = _core.BatchedExecutable.create(
        [e._native for e in executables], list(program.batch_sizes)
    )
    combined = CompileStatistics(
        sum(s.compile_seconds for s in statistics),
        cache_hit=all(s.cache_hit for s in statistics),
        load_seconds=sum(s.load_seconds for s in statistics),
        cache_error="; ".join(errors) or None,
    )
    return BatchedExecutable(native, program, executables), combined
