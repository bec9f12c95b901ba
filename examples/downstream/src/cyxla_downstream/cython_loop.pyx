# cython: language_level=3
"""A tight loop in Cython: x <- f(x), `steps` times, with no GIL and no copies."""

from cython.cimports.cyxla._runtime import (
    ABI_VERSION, OK, Error, Input, ProgramSpec, aligned_memory, execute, free_aligned,
    get_spec, import_runtime, release_spec,
)
from libc.string cimport memcpy

import numpy as np

import cyxla

cyxla.check_abi(ABI_VERSION)
import_runtime()


def iterate(executable, x, Py_ssize_t steps):
    """Applies `executable` (one input, one output of the same shape and dtype) `steps`
    times to `x` and returns the last result."""
    cdef ProgramSpec spec
    cdef Error error
    cdef Input input
    cdef void* output
    cdef void* state
    cdef Py_ssize_t step
    cdef size_t nbytes
    spec.struct_size = sizeof(ProgramSpec)
    spec.executable = 0  # holds nothing yet: get_spec refuses a spec that holds one
    if get_spec(executable.handle, &spec, &error) != OK:
        raise RuntimeError(error.message.decode())
    try:
        if spec.num_inputs != 1 or spec.num_outputs != 1 or spec.input_bytes[0] != spec.output_bytes[0]:
            raise ValueError("iterate needs a program from one array to one of the same size")
        start = np.ascontiguousarray(x, dtype=executable.inputs[0].dtype)
        nbytes = spec.input_bytes[0]
        if start.nbytes != nbytes:
            raise ValueError(f"x has {start.nbytes} bytes, the program takes {nbytes}")
        # Both buffers aligned, so that the CPU plugin reads the input in place.
        state = aligned_memory(nbytes)
        output = aligned_memory(nbytes)
        try:
            memcpy(state, <const void*><size_t>start.ctypes.data, nbytes)
            input.data = state
            input.type = spec.input_types[0]
            input.nbytes = nbytes
            error.status = OK
            with nogil:
                for step in range(steps):
                    if execute(&spec, &input, 1, &output, 1, &error) != OK:
                        break
                    memcpy(state, output, nbytes)
            if error.status != OK:
                raise RuntimeError(error.message.decode())
            result = np.empty_like(start)
            memcpy(<void*><size_t>result.ctypes.data, state, nbytes)
            return result
        finally:
            free_aligned(state)
            free_aligned(output)
    finally:
        release_spec(&spec)
