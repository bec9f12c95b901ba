"""ctypes mirrors of cyxla/cyxla.h, to call the native API from tests as C code would."""

from __future__ import annotations

import ctypes

from cyxla import _core

OK, INVALID_ARGUMENT, TYPE_MISMATCH, RELEASED, PJRT, INTERNAL, PROGRAM_FILE = range(7)
OPTION_STRING, OPTION_INT64, OPTION_FLOAT, OPTION_BOOL = range(4)


class Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char * 512)]


class Input(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("type", ctypes.c_int), ("nbytes", ctypes.c_size_t)]


class ProgramSpec(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("executable", ctypes.c_uint64),
        ("num_inputs", ctypes.c_size_t),
        ("num_outputs", ctypes.c_size_t),
        ("input_types", ctypes.POINTER(ctypes.c_int)),
        ("input_ranks", ctypes.POINTER(ctypes.c_size_t)),
        ("input_dims", ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))),
        ("input_bytes", ctypes.POINTER(ctypes.c_size_t)),
        ("output_types", ctypes.POINTER(ctypes.c_int)),
        ("output_ranks", ctypes.POINTER(ctypes.c_size_t)),
        ("output_dims", ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))),
        ("output_bytes", ctypes.POINTER(ctypes.c_size_t)),
    ]


class ClientOption(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("type", ctypes.c_int),
        ("string_value", ctypes.c_char_p),
        ("int64_value", ctypes.c_int64),
        ("float_value", ctypes.c_double),
    ]


class RuntimeOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("plugin_path", ctypes.c_char_p),
        ("client_options", ctypes.POINTER(ClientOption)),
        ("num_client_options", ctypes.c_size_t),
    ]


GetSpec = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_uint64, ctypes.POINTER(ProgramSpec), ctypes.POINTER(Error)
)
ReleaseSpec = ctypes.CFUNCTYPE(None, ctypes.POINTER(ProgramSpec))
Execute = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.POINTER(ProgramSpec),
    ctypes.POINTER(Input),
    ctypes.c_size_t,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_size_t,
    ctypes.POINTER(Error),
)
AlignedMemory = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t)
FreeAligned = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
OpenRuntime = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(RuntimeOptions), ctypes.POINTER(Error))
CloseRuntime = ctypes.CFUNCTYPE(None)
LoadProgram = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(Error)
)
ReleaseProgram = ctypes.CFUNCTYPE(None, ctypes.c_uint64)
RegisterFfiHandler = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_char_p,
    ctypes.c_void_p,
    ctypes.c_char_p,
    ctypes.c_uint32,
    ctypes.POINTER(Error),
)


class Api(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("abi_version", ctypes.c_int),
        ("oldest_compatible", ctypes.c_int),
        ("get_spec", GetSpec),
        ("release_spec", ReleaseSpec),
        ("execute", Execute),
        ("aligned_memory", AlignedMemory),
        ("free_aligned", FreeAligned),
        # ABI 2
        ("open_runtime", OpenRuntime),
        ("close_runtime", CloseRuntime),
        ("load_program", LoadProgram),
        ("release_program", ReleaseProgram),
        ("register_ffi_handler", RegisterFfiHandler),
    ]


def table() -> Api:
    """The function table, from the capsule that extension modules import."""
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    address = get_pointer(_core._C_API, b"cyxla._core._C_API")
    return Api.from_address(address)
