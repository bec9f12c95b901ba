"""What runs on each Dask worker: a program compiled once per worker process, then run on
the worker's share of a batch. A module of its own, so that Dask sends these functions by
reference and `_EXECUTABLES` lives on in the worker between tasks."""

from __future__ import annotations

import os
import sys

import numpy as np

import cyxla as cx

#: The executables this worker process compiled, by program.
_EXECUTABLES: dict[cx.Program, cx.Executable] = {}


def compile_here(program: cx.Program) -> tuple[int, cx.CompileStatistics, bool]:
    """Compiles `program` in this worker (a disk cache hit when another worker compiled it
    first); returns the worker's process id, the compile's statistics and whether the
    worker imported JAX (it need not: it only loads and runs)."""
    executable, statistics = cx.compile_program(program)
    _EXECUTABLES[program] = executable
    return os.getpid(), statistics, "jax" in sys.modules


def evaluate(program: cx.Program, samples: np.ndarray, *weights: np.ndarray) -> np.ndarray:
    """`program` run on each of `samples` (stacked along the first axis) with `weights`."""
    executable = _EXECUTABLES.get(program)
    if executable is None:
        compile_here(program)
        executable = _EXECUTABLES[program]
    (out,) = executable.outputs
    results = np.empty((len(samples), *out.shape), out.dtype)
    for index, sample in enumerate(samples):
        executable.run([sample, *weights], out=[results[index]])
    return results
