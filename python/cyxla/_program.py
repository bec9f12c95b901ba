"""What `lower` produces: a program's StableHLO and everything needed to run it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cyxla._dtypes import ElementType, dtype_of, element_type_of

__all__ = [
    "Program",
    "SpecRecords",
    "TensorSpec",
    "decode_specs",
    "encode_specs",
    "output_mismatch",
    "spec_records",
]


@dataclass(frozen=True)
class TensorSpec:
    """The shape and dtype of one input or output of a program."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def element_type(self) -> ElementType:
        """The PJRT element type, as native code names it (PJRT_Buffer_Type)."""
        element_type = element_type_of(self.dtype)
        assert element_type is not None, "lower admits supported dtypes only"
        return element_type

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def __str__(self) -> str:
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class Program:
    """A lowered JAX function, ready for `compile_program`.

    Inputs are the flattened leaves of the arguments given to `lower`, and outputs the
    flattened leaves of the function's result in `jax.tree` order; `output_tree`
    rebuilds the result's structure from them (`jax.tree.unflatten`).
    """

    #: A portable StableHLO artifact (VHLO bytecode) at `stablehlo_version`.
    stablehlo: bytes = field(repr=False)
    stablehlo_version: str
    platform: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    #: The custom-call targets the program calls.
    custom_calls: tuple[str, ...]
    name: str
    output_tree: Any = field(repr=False, compare=False)


#: The one encoding of specs: (PJRT element type, dimensions) per tensor, as the C++ core
#: takes and reports them and as cache entries store them (JSON makes the pairs lists).
SpecRecords = list[tuple[int, list[int]]]


def encode_specs(specs: Iterable[TensorSpec]) -> SpecRecords:
    """`specs` in the one encoding."""
    return [(int(s.element_type), list(s.shape)) for s in specs]


def spec_records(encoded: Iterable[Any]) -> SpecRecords:
    """Encoded specs as read back (the core's tuples, JSON's lists) in the one encoding;
    TypeError or ValueError for anything else."""
    return [(int(t), [int(d) for d in dims]) for t, dims in encoded]


def decode_specs(encoded: Iterable[Any]) -> tuple[TensorSpec, ...]:
    """The specs of an encoding; an element type may also be written by name ("F32"), as
    entries of cyxla's program cache were before. KeyError or ValueError if malformed."""
    return tuple(
        TensorSpec(
            tuple(int(d) for d in dims),
            dtype_of(ElementType[t] if isinstance(t, str) else ElementType(int(t))),
        )
        for t, dims in encoded
    )


def output_mismatch(native: Any, program: Program) -> str | None:
    """How the outputs of a compiled or loaded executable (`_core.Executable`) differ from
    those `program` was lowered with, or None when they are the same."""
    expected = encode_specs(program.outputs)
    actual = spec_records(native.outputs)
    return None if actual == expected else f"outputs {actual}, not {expected}"
