"""What `lower_batched` produces: one program per batch size, and one point's specs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cyxla._errors import InvalidArgumentError
from cyxla._program.program import Program, TensorSpec

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

    def __post_init__(self) -> None:
        sizes = list(self.batch_sizes)
        if not sizes or len(sizes) != len(self.programs) or sizes != sorted(set(sizes)):
            raise InvalidArgumentError(
                "BatchedProgram: batch_sizes must be distinct and ascending, one per program, "
                f"given {sizes} for {len(self.programs)} programs"
            )

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
        """The lowered function's name, as each of `programs` records it."""
        return self.programs[0].name

    @property
    def platform(self) -> str:
        """The platform the programs were lowered for: cpu, cuda, rocm or tpu."""
        return self.programs[0].platform

    @property
    def output_tree(self) -> Any:
        """The structure of the function's result (`jax.tree.unflatten` of the outputs)."""
        return self.programs[0].output_tree
