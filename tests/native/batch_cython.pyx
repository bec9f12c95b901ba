# cython: language_level=3
"""Batches from Cython, through the declarations of cyxla/_runtime.pxd: evaluate(handle,
xs, ys) evaluates the points in `xs` into `ys` with one execute_batch, without the GIL."""

from cython.cimports.cyxla._runtime import (
    ABI_VERSION, OK, Error, Input, ProgramSpec, execute_batch, get_spec, import_runtime,
    release_spec,
)

import cyxla

cyxla.check_abi(ABI_VERSION)
import_runtime()


def batch_sizes(unsigned long long handle):
    """The compiled batch sizes that the spec of `handle` lists."""
    cdef ProgramSpec spec
    cdef Error error
    spec.struct_size = sizeof(ProgramSpec)
    spec.executable = 0
    if get_spec(handle, &spec, &error) != OK:
        raise RuntimeError(error.message.decode())
    sizes = [spec.batch_sizes[k] for k in range(spec.num_batch_sizes)]
    release_spec(&spec)
    return sizes


def evaluate(unsigned long long handle, const unsigned char[::1] xs, unsigned char[::1] ys):
    """Evaluates the points in the bytes of `xs` (one input) into `ys` (one output)."""
    cdef ProgramSpec spec
    cdef Error error
    cdef Input input
    cdef void* output
    cdef size_t n
    cdef int status
    spec.struct_size = sizeof(ProgramSpec)
    spec.executable = 0
    if get_spec(handle, &spec, &error) != OK:
        raise RuntimeError(error.message.decode())
    try:
        n = xs.shape[0] // spec.input_bytes[0]
        input.data = &xs[0] if xs.shape[0] else NULL
        input.type = spec.input_types[0]
        input.nbytes = xs.shape[0]
        output = &ys[0] if ys.shape[0] else NULL
        with nogil:
            status = execute_batch(&spec, n, &input, 1, &output, 1, &error)
        if status != OK:
            raise ValueError(error.message.decode())
    finally:
        release_spec(&spec)
