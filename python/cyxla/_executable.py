"""`compile_program` and `Executable`: a program compiled by the plugin, run from Python."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from jax._src.lib import xla_client

from cyxla import _core, _plugins
from cyxla._errors import DtypeError, InvalidArgumentError
from cyxla._program import Program, TensorSpec

__all__ = ["CompileStatistics", "Executable", "compile_program"]


@dataclass(frozen=True)
class CompileStatistics:
    """What `compile_program` did and how long it took."""

    #: Seconds the plugin spent compiling (or loading) the executable.
    compile_seconds: float


def _compile_options(overrides: Mapping[str, Any] | None) -> bytes:
    """A serialized xla.CompileOptionsProto; `overrides` set XLA debug options by name."""
    options = xla_client.CompileOptions()
    if overrides:
        options.env_option_overrides = [
            (name, str(value).lower() if isinstance(value, bool) else str(value))
            for name, value in overrides.items()
        ]
    return options.SerializeAsString()


class Executable:
    """A program compiled for the loaded plugin.

    `run` is for tests and interactive use; native code runs the same executable with
    `execute` from the C API, with no Python and no GIL.
    """

    def __init__(self, native: _core.Executable, program: Program) -> None:
        self._native = native
        self.program = program
        #: Per input: (shape, dtype, the dtype handed to the core).
        self._in = [(s.shape, s.dtype, _carrier(s.dtype)) for s in program.inputs]
        self._out = [(s.shape, s.dtype, _carrier(s.dtype)) for s in program.outputs]

    @property
    def native(self) -> _core.Executable:
        """The C++ executable, for extension modules that execute it natively."""
        return self._native

    @property
    def platform(self) -> str:
        return self.program.platform

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return self.program.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return self.program.outputs

    @property
    def output_bytes(self) -> tuple[int, ...]:
        """The size in bytes of each output, as native callers allocate them."""
        return tuple(self._native.output_bytes)

    def run(self, arrays: Sequence[Any]) -> tuple[np.ndarray, ...]:
        """Runs the program on `arrays`, one per input, and returns its outputs.

        Arguments are converted to the input dtypes where NumPy's `same_kind` casting
        allows it; a wrong count or shape raises InvalidArgumentError (a ValueError) and
        an impossible cast DtypeError (a TypeError), naming the argument.
        """
        if len(arrays) != len(self._in):
            raise InvalidArgumentError(
                f"{self.program.name} takes {len(self._in)} arrays, given {len(arrays)}"
            )
        inputs = [_prepare(i, a, spec) for i, (a, spec) in enumerate(zip(arrays, self._in))]
        outputs = [np.empty(shape, dtype) for shape, dtype, _ in self._out]
        views = [o.view(carrier) if carrier is not None else o for o, (_, _, carrier) in
                 zip(outputs, self._out)]
        self._native.execute(inputs, views)
        return tuple(outputs)

    def __repr__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        outs = ", ".join(map(str, self.outputs))
        return f"<cyxla.Executable {self.program.name}({ins}) -> ({outs}) on {self.platform}>"


def _carrier(dtype: np.dtype) -> np.dtype | None:
    """The plain dtype that carries `dtype`'s bytes into the core (bfloat16 as uint16)."""
    return np.dtype(f"u{dtype.itemsize}") if dtype.kind == "V" else None


def _prepare(index: int, value: Any, spec: tuple[Any, np.dtype, np.dtype | None]) -> np.ndarray:
    shape, dtype, carrier = spec
    array = value if type(value) is np.ndarray else np.asarray(value)
    if array.shape != shape:
        raise InvalidArgumentError(
            f"argument {index}: expected shape {shape} ({dtype.name}), given shape "
            f"{array.shape} ({array.dtype.name})"
        )
    if array.dtype != dtype:
        if not np.can_cast(array.dtype, dtype, casting="same_kind"):
            raise DtypeError(
                f"argument {index}: expected {dtype.name}{list(shape)}, given "
                f"{array.dtype.name}{list(array.shape)}, which does not cast to "
                f"{dtype.name} under 'same_kind' casting"
            )
        array = array.astype(dtype)
    elif not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return array.view(carrier) if carrier is not None else array


def compile_program(
    program: Program, *, options: Mapping[str, Any] | None = None
) -> tuple[Executable, CompileStatistics]:
    """Compiles `program` with the plugin of its platform, loading the plugin if needed.

    `options` override XLA debug options by name (for example
    `{"xla_cpu_enable_fast_math": False}`). Returns the executable and statistics.
    """
    runtime = _plugins.runtime_for(program.platform)
    specs = [(int(s.element_type), list(s.shape)) for s in program.inputs]
    start = time.perf_counter()
    native = runtime.compile(program.stablehlo, _compile_options(options), specs)
    seconds = time.perf_counter() - start
    _check_outputs(native, program)
    return Executable(native, program), CompileStatistics(compile_seconds=seconds)


def _check_outputs(native: _core.Executable, program: Program) -> None:
    """The plugin's view of the outputs must be the program's: anything else is a bug."""
    expected = [(int(s.element_type), list(s.shape)) for s in program.outputs]
    actual = [(t, list(d)) for t, d in native.outputs]
    if actual != expected:
        raise InvalidArgumentError(
            f"the plugin compiled {program.name} to outputs {actual}, but it was lowered "
            f"with outputs {expected}"
        )
