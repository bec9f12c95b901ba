"""Calling a compiled program from numba's nopython mode: a bound call run by its handle.

    bound = executable.bind()            # the program bound to aligned NumPy arrays

    @numba.njit
    def loop(handle, x, y):
        ...                              # write x, then
        status = cyxla.numba.call_bound(handle)
        ...                              # read y, or return the status if it is not OK

    cyxla.numba.check(loop(bound.handle, *bound.inputs, *bound.outputs))

`call_bound` is a ctypes function pointer, which numba compiles into a plain C call (so
no numba import happens here: cyxla does not need numba). See docs/guide/numba.md.
"""

from __future__ import annotations

from cyxla._run.by_handle import OK, call_bound, check

__all__ = ["OK", "call_bound", "check"]
