# cython: language_level=3
# A bound call from Cython, through cyxla/_runtime.pxd: iterate(handle, x, steps) runs
# x <- f(x) `steps` times in place on the float32 array x, without the GIL, and returns the
# status of the last call (or of bind). Built by tests/test_bound_calls.py.
from libc.stdint cimport uint64_t

from cyxla._runtime cimport (
    OK, Error, Input, ProgramSpec, Status, bind, call_bound, get_spec, import_runtime,
    release_spec, unbind,
)

import_runtime()


def iterate(uint64_t handle, float[::1] x, Py_ssize_t steps):
    cdef ProgramSpec spec
    cdef Error error
    cdef Input input
    cdef void* output = &x[0]
    cdef uint64_t bound = 0
    cdef Status status
    cdef Py_ssize_t step
    spec.struct_size = sizeof(ProgramSpec)
    spec.executable = 0
    status = get_spec(handle, &spec, &error)
    if status != OK:
        return status
    input.data = &x[0]
    input.type = spec.input_types[0]
    input.nbytes = x.shape[0] * sizeof(float)
    with nogil:
        status = bind(&spec, &input, 1, &output, 1, &bound, &error)
        release_spec(&spec)  # the bound call holds the executable on its own
        step = 0
        while status == OK and step < steps:
            status = call_bound(bound, &error)
            step += 1
        if bound != 0:
            unbind(bound, &error)
    return status
