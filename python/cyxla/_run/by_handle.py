"""A bound call run by its handle from compiled code: the C function pointer that numba's
nopython mode calls (`cyxla.numba`), and the check of the status it returns."""

from __future__ import annotations

import ctypes

from cyxla import _core

__all__ = ["OK", "call_bound", "check"]

#: The status of a call that ran (CYXLA_OK).
OK = 0

#: `int32_t call_bound(uint64_t handle)`, a ctypes function pointer: runs the bound call
#: whose `BoundCall.handle` is `handle` and returns its `cyxla_Status` (OK, 0, when it
#: ran). numba's nopython mode calls a ctypes function pointer as a C call, with no Python
#: and no GIL; so do cffi and C, given its address (`ctypes.cast(call_bound,
#: ctypes.c_void_p).value`). A failure's message is kept, on the calling thread, for
#: `check`.
call_bound = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_uint64)(_core._call_by_handle_address())


def check(status: int) -> None:
    """Raises the error of `status`, a status that `call_bound` returned on this thread,
    with the message of that failure; returns for OK (0).

    Raises:
        InvalidArgumentError: the bound call was closed (CYXLA_ERROR_RELEASED), or the
            handle is not a bound call's (an `Executable.handle`, say).
        BusyError: another thread was in a call of the same bound call.
        PjrtError: the plugin reported an error.
        RuntimeError: out of memory, or a bug in cyxla.
    """
    _core._raise_bound_failure(int(status))
