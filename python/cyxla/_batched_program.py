"""What `lower_batched` produces: one program per batch size, and one point's specs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cyxla._program import Program, TensorSpec

__all__ = ["BatchedProgram"]


@dataclass(frozen=True)
class BatchedProgram:
    """A JAX function lowered at a few batch sizes, ready for `compile_batched`.

    `programs[k]` is the function's `jax.vmap` at `batch_sizes[k]` points: each of its
    inputs and outputs is one point's (`inputs`, `outputs`) with a leading dimension of
    that size.
    """

    #: The batch sizes, ascending.
    batch_sizes: tuple[int, ...]
    programs: tuple[Program, ...]

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        """One point's inputs."""
        return tuple(TensorSpec(s.shape[1:], s.dtype) for s in self.programs[0].inputs)

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        """One point's outputs."""
        return tuple(TensorSpec(s.shape[1:], s.dtype) for s in self.programs[0].outputs)

    @property
    def name(self) -> str:
        return self.programs[0].name

    @property
    def platform(self) -> str:
        return self.programs[0].platform

    @property
    def output_tree(self) -> Any:
        """The structure of the function's result (`jax.tree.unflatten` of the outputs)."""
        return self.programs[0].output_tree
