"""An example downstream package: compiled JAX programs run from Cython and from C++."""

from __future__ import annotations

import numpy as np

import cyxla
from cyxla_downstream import thread_pool
from cyxla_downstream.cython_loop import iterate

__all__ = ["iterate", "map_rows"]


def map_rows(executable: cyxla.Executable, rows: np.ndarray, threads: int = 2) -> np.ndarray:
    """Runs `executable` (one input, one output) on each row of `rows` from a C++ thread
    pool; rows[r] has the program's input shape."""
    spec_in, spec_out = executable.inputs[0], executable.outputs[0]
    rows = np.ascontiguousarray(rows, dtype=spec_in.dtype)
    out = np.empty((rows.shape[0], *spec_out.shape), spec_out.dtype)
    thread_pool.map_rows_into(executable, rows, out, threads)
    return out
