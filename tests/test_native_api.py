"""The native API (cyxla/cyxla.h): versions, error codes, handles (the registry), lifetimes,
threads, the native loops, allocations."""

from __future__ import annotations

import ctypes
import gc
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla
from cyxla import _benchmark, _core

from support import (
    F32,
    F64,
    INTERNAL,
    INVALID_ARGUMENT,
    OK,
    PJRT,
    RELEASED,
    TYPE_MISMATCH,
    Api,
    Error,
    Input,
    ProgramSpec,
    compile_c,
    runtime,
    set_outputs,
    table,
)


def sin2(x: jax.Array) -> jax.Array:
    return jnp.sin(x) * 2


@pytest.fixture(scope="module")
def executable() -> cyxla.Executable:
    program = cyxla.lower(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    return cyxla.compile_program(program)[0]


def get_spec(handle: int) -> tuple[int, ProgramSpec, Error]:
    spec, error = ProgramSpec(), Error()
    spec.struct_size = ctypes.sizeof(ProgramSpec)
    status = table().get_spec(handle, ctypes.byref(spec), ctypes.byref(error))
    return status, spec, error


def execute(spec: ProgramSpec | None, inputs: list[Input], outputs: list[int | None]) -> Error:
    error = Error()
    in_array = (Input * max(1, len(inputs)))(*inputs)
    out_array = (ctypes.c_void_p * max(1, len(outputs)))(*outputs)
    status = table().execute(
        ctypes.byref(spec) if spec is not None else None,
        in_array,
        len(inputs),
        out_array,
        len(outputs),
        ctypes.byref(error),
    )
    assert status == error.status
    return error


def as_input(array: np.ndarray, element_type: int = F32) -> Input:
    return Input(array.ctypes.data, element_type, array.nbytes)


# ---------------------------------------------------------------- versions and headers


def test_abi_version_is_the_headers() -> None:
    header = Path(cyxla.get_include()[0], "cyxla", "cyxla.h").read_text()
    assert f"#define CYXLA_ABI_VERSION {cyxla.ABI_VERSION}\n" in header
    assert cyxla.abi_version() == cyxla.ABI_VERSION == table().abi_version
    assert table().struct_size == ctypes.sizeof(Api)


def test_check_abi_accepts_this_version() -> None:
    cyxla.check_abi(cyxla.ABI_VERSION)


@pytest.mark.parametrize("version", [0, cyxla.ABI_VERSION + 1])
def test_check_abi_names_both_versions(version: int) -> None:
    with pytest.raises(cyxla.AbiVersionError) as raised:
        cyxla.check_abi(version)
    message = str(raised.value)
    assert f"ABI version {version}" in message
    assert f"provides ABI version {cyxla.ABI_VERSION}" in message
    assert isinstance(raised.value, ImportError)


def test_get_include_has_the_headers_and_pxd_files() -> None:
    headers, pxd = (Path(p) for p in cyxla.get_include())
    for name in ("cyxla.h", "cyxla.hpp", "element_type.h"):
        assert (headers / "cyxla" / name).is_file()
    # cyxla's PJRT declarations are private: XLA's own header may sit beside cyxla.h.
    assert not (headers / "cyxla" / "pjrt_c_api.h").exists()
    for name in ("_runtime.pxd", "_pjrt.pxd"):
        assert (pxd / "cyxla" / name).is_file()


# ---------------------------------------------------------------------- the spec


def test_spec_describes_the_program(executable: cyxla.Executable) -> None:
    status, spec, error = get_spec(executable.handle)
    assert status == OK, error.message
    try:
        assert (spec.num_inputs, spec.num_outputs) == (1, 1)
        assert spec.input_types[0] == spec.output_types[0] == F32
        assert spec.input_ranks[0] == 1 and spec.input_dims[0][0] == 3
        assert spec.input_bytes[0] == 12
        assert spec.output_bytes[0] == executable.output_bytes[0] == 12
    finally:
        table().release_spec(ctypes.byref(spec))
    assert spec.executable == 0


def test_spec_with_a_short_struct_size_is_refused(executable: cyxla.Executable) -> None:
    spec, error = ProgramSpec(), Error()
    spec.struct_size = 16
    assert table().get_spec(executable.handle, ctypes.byref(spec), ctypes.byref(error)) == (
        INVALID_ARGUMENT
    )
    assert b"struct_size is 16" in error.message


def test_spec_with_a_larger_struct_size_is_accepted_and_only_its_prefix_used(
    executable: cyxla.Executable,
) -> None:
    # A caller built against a newer header, with fields this runtime does not know.
    class NewerSpec(ctypes.Structure):
        _fields_ = [("spec", ProgramSpec), ("future", ctypes.c_uint64)]

    newer, error = NewerSpec(), Error()
    newer.spec.struct_size = ctypes.sizeof(NewerSpec)
    newer.future = 0xFEEDFACE
    assert table().get_spec(executable.handle, ctypes.byref(newer.spec), ctypes.byref(error)) == OK
    try:
        assert newer.spec.struct_size == ctypes.sizeof(NewerSpec)
        assert newer.future == 0xFEEDFACE  # past the known prefix: untouched
        assert newer.spec.num_inputs == 1 and newer.spec.output_bytes[0] == 12
        x, y = np.array([1.0, 2.0, 3.0], np.float32), np.empty(3, np.float32)
        assert execute(newer.spec, [as_input(x)], [y.ctypes.data]).status == OK
        np.testing.assert_array_equal(y, jax.jit(sin2)(x))
    finally:
        table().release_spec(ctypes.byref(newer.spec))


def test_execute_with_a_short_struct_size_is_refused(executable: cyxla.Executable) -> None:
    _, spec, _ = get_spec(executable.handle)
    x, y = np.zeros(3, np.float32), np.full(3, 7.0, np.float32)
    try:
        spec.struct_size = 16
        error = execute(spec, [as_input(x)], [y.ctypes.data])
    finally:
        table().release_spec(ctypes.byref(spec))
    assert error.status == INVALID_ARGUMENT
    assert b"execute: spec->struct_size is 16" in error.message
    np.testing.assert_array_equal(y, 7.0)  # nothing ran


def test_get_spec_into_a_held_spec_is_refused_and_leaks_nothing() -> None:
    program = cyxla.lower(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    executable = cyxla.compile_program(program)[0]
    handle = executable.handle
    status, spec, _ = get_spec(handle)
    assert status == OK
    held = spec.executable
    error = Error()
    assert table().get_spec(handle, ctypes.byref(spec), ctypes.byref(error)) == INVALID_ARGUMENT
    assert b"spec->executable is" in error.message and b"release the spec first" in error.message
    assert spec.executable == held  # left as it was
    table().release_spec(ctypes.byref(spec))
    del executable
    gc.collect()
    # The refused call took no second hold: the executable is freed with its last one.
    assert get_spec(handle)[0] == RELEASED


def test_get_spec_into_an_uninitialised_spec_is_refused(executable: cyxla.Executable) -> None:
    spec, error = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec)), Error()
    spec.executable = (7 << 32) | 1  # garbage, as an uninitialised struct may hold
    assert table().get_spec(executable.handle, ctypes.byref(spec), ctypes.byref(error)) == (
        INVALID_ARGUMENT
    )
    assert b"zero-initialise" in error.message
    assert spec.executable == (7 << 32) | 1


def test_releasing_a_spec_and_its_copy_keeps_a_third_holder(tmp_path: Path) -> None:
    source = Path(__file__).parent / "native" / "spec_holds.c"
    library = ctypes.CDLL(str(compile_c(source, tmp_path / "libspec_holds.so", shared=True)))
    program = cyxla.lower(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    executable = cyxla.compile_program(program)[0]
    handle = executable.handle
    api = ctypes.c_void_p(ctypes.addressof(table()))
    third, why = ProgramSpec(), ctypes.create_string_buffer(512)
    line = library.copy_release_twice(
        api, ctypes.c_uint64(handle), ctypes.byref(third), why, ctypes.c_size_t(512)
    )
    assert line == 0, why.value
    del executable
    gc.collect()
    # The third spec is now the executable's only holder, and it still runs.
    error = Error()
    assert library.run_zeros(api, ctypes.byref(third), ctypes.byref(error)) == OK, error.message
    table().release_spec(ctypes.byref(third))
    assert get_spec(handle)[0] == RELEASED


# The last: slot 0 with a generation no session reaches (earlier tests reuse slot 0 and
# raise its generation, one per executable freed).
@pytest.mark.parametrize("handle", [0, 12345, (0xFFFF_FFFF << 32) | 1])
def test_unknown_handles_are_refused(handle: int) -> None:
    status, _, error = get_spec(handle)
    assert status == RELEASED
    assert f"handle {handle}".encode() in error.message


# ---------------------------------------------------------------------- execute


def test_execute_matches_jax(executable: cyxla.Executable) -> None:
    x = np.array([0.5, 1.0, -2.0], np.float32)
    y = np.empty(3, np.float32)
    _, spec, _ = get_spec(executable.handle)
    error = execute(spec, [as_input(x)], [y.ctypes.data])
    table().release_spec(ctypes.byref(spec))
    assert error.status == OK, error.message
    np.testing.assert_array_equal(y, jax.jit(sin2)(x))


def _execute_raw(
    spec: ProgramSpec,
    inputs: ctypes.Array | None,
    num_inputs: int,
    outputs: ctypes.Array | None,
    num_outputs: int,
) -> Error:
    """execute with the caller's own arrays, NULL included; the error struct starts dirty so
    that a success must overwrite it."""
    error = Error(status=99, message=b"left over")
    status = table().execute(
        ctypes.byref(spec), inputs, num_inputs, outputs, num_outputs, ctypes.byref(error)
    )
    assert status == error.status
    return error


def test_a_program_without_inputs_takes_null_inputs() -> None:
    executable = cyxla.compile_program(cyxla.lower(lambda: jnp.arange(3.0) * 2, []))[0]
    _, spec, _ = get_spec(executable.handle)
    y = np.zeros(3, np.float32)
    error = _execute_raw(spec, None, 0, (ctypes.c_void_p * 1)(y.ctypes.data), 1)
    table().release_spec(ctypes.byref(spec))
    # On success the error struct is written: status OK, an empty message.
    assert (error.status, error.message) == (OK, b"")
    np.testing.assert_array_equal(y, np.arange(3.0, dtype=np.float32) * 2)


def test_a_program_without_outputs_takes_null_outputs() -> None:
    program = cyxla.lower(lambda x: (), [jax.ShapeDtypeStruct((3,), jnp.float32)])
    assert program.outputs == ()
    executable = cyxla.compile_program(program)[0]
    _, spec, _ = get_spec(executable.handle)
    x = np.ones(3, np.float32)
    error = _execute_raw(spec, (Input * 1)(as_input(x)), 1, None, 0)
    table().release_spec(ctypes.byref(spec))
    assert (error.status, error.message) == (OK, b"")


@pytest.mark.parametrize("offset", [0, 4], ids=["aligned", "unaligned"])
def test_an_output_may_alias_an_input(executable: cyxla.Executable, offset: int) -> None:
    """x <- f(x) in one array: every input is read before any output is written."""
    raw = np.zeros(64 + 64, np.uint8)
    start = -raw.ctypes.data % 64 + offset
    x = raw[start : start + 12].view(np.float32)
    assert (x.ctypes.data % 64 == 0) == (offset == 0)
    x[:] = [0.5, 1.0, -2.0]
    expected = np.asarray(jax.jit(sin2)(x.copy()))
    _, spec, _ = get_spec(executable.handle)
    for _ in range(3):
        error = execute(spec, [as_input(x)], [x.ctypes.data])
        assert error.status == OK, error.message
        np.testing.assert_array_equal(x, expected)
        expected = np.asarray(jax.jit(sin2)(expected))
    table().release_spec(ctypes.byref(spec))


@pytest.mark.parametrize(
    ("case", "status", "message"),
    [
        ("null spec", INVALID_ARGUMENT, b"spec is NULL"),
        ("two inputs", INVALID_ARGUMENT, b"takes 1 inputs and 1 outputs, given 2 and 1"),
        ("no outputs", INVALID_ARGUMENT, b"given 1 and 0"),
        ("f64 input", TYPE_MISMATCH, b"input 0 has element type f64, the program takes f32"),
        ("no such type", TYPE_MISMATCH, b"input 0 has element type unsupported, the program"),
        ("short input", INVALID_ARGUMENT, b"input 0 has 8 bytes, the program takes 12"),
        ("null data", INVALID_ARGUMENT, b"input 0 has NULL data"),
        ("null output", INVALID_ARGUMENT, b"output 0 is NULL"),
    ],
)
def test_execute_refuses_bad_arguments(
    executable: cyxla.Executable, case: str, status: int, message: bytes
) -> None:
    x = np.zeros(3, np.float32)
    y = np.full(3, 7.0, np.float32)
    good = as_input(x)
    inputs, outputs = [good], [y.ctypes.data]
    _, spec, _ = get_spec(executable.handle)
    if case == "two inputs":
        inputs = [good, good]
    elif case == "no outputs":
        outputs = []
    elif case == "f64 input":
        inputs = [Input(x.ctypes.data, F64, 12)]
    elif case == "no such type":
        inputs = [Input(x.ctypes.data, 999, 12)]
    elif case == "short input":
        inputs = [Input(x.ctypes.data, F32, 8)]
    elif case == "null data":
        inputs = [Input(None, F32, 12)]
    elif case == "null output":
        outputs = [None]
    error = execute(None if case == "null spec" else spec, inputs, outputs)
    table().release_spec(ctypes.byref(spec))
    assert error.status == status
    assert message in error.message
    np.testing.assert_array_equal(y, 7.0)  # nothing ran


@pytest.mark.parametrize(
    ("platform", "failing", "message"),
    [
        (b"fake", "PJRT_Client_BufferFromHostBuffer", "PJRT_Client_BufferFromHostBuffer failed"),
        (b"fake", "PJRT_LoadedExecutable_Execute", "PJRT_LoadedExecutable_Execute failed"),
        (b"fake", "PJRT_Event_Await", "executing the program failed"),
        (b"fake", "PJRT_Buffer_ToHostBuffer", "PJRT_Buffer_ToHostBuffer failed"),
        (
            b"cpu",
            "PJRT_Buffer_OpaqueDeviceMemoryDataPointer",
            "PJRT_Buffer_OpaqueDeviceMemoryDataPointer failed",
        ),
    ],
)
def test_execute_errors_through_the_c_api(
    scripted: tuple[_core.Plugin, ctypes.CDLL],
    control: ctypes.CDLL,
    platform: bytes,
    failing: str,
    message: str,
) -> None:
    executable = runtime(scripted, platform).compile(b"x", b"", [(F32, [3])])
    handle = _core.NativeHandle(executable)
    spec, error = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec)), Error()
    assert table().get_spec(handle.value, ctypes.byref(spec), ctypes.byref(error)) == OK
    x, y = np.ones(3, np.float32), np.zeros(3, np.float32)
    inputs = (Input * 1)(Input(x.ctypes.data, F32, 12))
    outputs = (ctypes.c_void_p * 1)(y.ctypes.data)
    control.fake_fail(failing.encode())
    status = table().execute(ctypes.byref(spec), inputs, 1, outputs, 1, ctypes.byref(error))
    control.fake_fail(b"")
    assert status == error.status == PJRT
    assert error.message.decode() == (f"execute: {message}: scripted failure of {failing}")
    # The executable still works once the plugin does.
    status = table().execute(ctypes.byref(spec), inputs, 1, outputs, 1, ctypes.byref(error))
    assert status == OK and error.message == b""
    np.testing.assert_array_equal(y, x)
    table().release_spec(ctypes.byref(spec))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Bytes that are not UTF-8, from a plugin: escaped as Python escapes them.
        (b"op '\xff\xc3' \xce\xbb", "op '\\xff\\xc3' \u03bb"),
        # A message longer than the status holds, cut at the end of a whole character:
        # after the 48 bytes before them, 2-byte "\u03bb"s would be cut in half at 511.
        (b"x" + b"\xce\xbb" * 400, None),
    ],
)
def test_a_plugin_message_reaches_the_c_api_as_utf8(
    scripted: tuple[_core.Plugin, ctypes.CDLL],
    control: ctypes.CDLL,
    text: bytes,
    expected: str | None,
) -> None:
    executable = runtime(scripted).compile(b"x", b"", [(F32, [3])])
    handle = _core.NativeHandle(executable)
    spec, error = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec)), Error()
    assert table().get_spec(handle.value, ctypes.byref(spec), ctypes.byref(error)) == OK
    x, y = np.ones(3, np.float32), np.zeros(3, np.float32)
    inputs = (Input * 1)(Input(x.ctypes.data, F32, 12))
    outputs = (ctypes.c_void_p * 1)(y.ctypes.data)
    control.fake_fail(b"PJRT_LoadedExecutable_Execute")
    control.fake_error_text(text)
    status = table().execute(ctypes.byref(spec), inputs, 1, outputs, 1, ctypes.byref(error))
    table().release_spec(ctypes.byref(spec))
    assert status == PJRT
    message = error.message.decode("utf-8")  # strict: raises on any byte that is not UTF-8
    prefix = "execute: PJRT_LoadedExecutable_Execute failed: "
    if expected is not None:
        assert message == prefix + expected
    else:
        assert message == prefix + "x" + "\u03bb" * len(message[len(prefix) + 1 :])
        assert len(error.message) == Error.message.size - 2  # cut before the half at 511


def test_staging_an_unaligned_input_too_large_to_allocate(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    # A (declared) input of 2**60 bytes: the aligned copy of an unaligned pointer cannot
    # be allocated, which the C API reports as out of memory, running nothing.
    set_outputs(control, [F32], [[1]])
    executable = runtime(scripted, b"cpu").compile(b"x", b"", [(F32, [1 << 58])])
    handle = _core.NativeHandle(executable)
    spec, error = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec)), Error()
    assert table().get_spec(handle.value, ctypes.byref(spec), ctypes.byref(error)) == OK
    assert spec.input_bytes[0] == 1 << 60
    memory = np.zeros(16, np.uint8)
    unaligned = memory.ctypes.data | 1
    inputs = (Input * 1)(Input(unaligned, F32, 1 << 60))
    y = np.zeros(1, np.float32)
    outputs = (ctypes.c_void_p * 1)(y.ctypes.data)
    calls = control.fake_calls(b"PJRT_LoadedExecutable_Execute")
    status = table().execute(ctypes.byref(spec), inputs, 1, outputs, 1, ctypes.byref(error))
    assert status == error.status == INTERNAL
    assert error.message == b"execute: out of memory"
    assert control.fake_calls(b"PJRT_LoadedExecutable_Execute") == calls
    table().release_spec(ctypes.byref(spec))


@pytest.mark.parametrize("which", ["inputs", "outputs"])
def test_null_arrays_are_refused(sin_executable: cyxla.Executable, which: str) -> None:
    spec, error = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec)), Error()
    table().get_spec(sin_executable.handle, ctypes.byref(spec), ctypes.byref(error))
    x = np.zeros(3, np.float32)
    inputs = (Input * 1)(Input(x.ctypes.data, F32, 12))
    outputs = (ctypes.c_void_p * 1)(x.ctypes.data)
    status = table().execute(
        ctypes.byref(spec),
        None if which == "inputs" else inputs,
        1,
        None if which == "outputs" else outputs,
        1,
        ctypes.byref(error),
    )
    table().release_spec(ctypes.byref(spec))
    assert status == INVALID_ARGUMENT
    assert error.message == b"execute: inputs or outputs is NULL"


def test_null_spec_and_null_error_are_safe(sin_executable: cyxla.Executable) -> None:
    error = Error()
    assert table().get_spec(sin_executable.handle, None, ctypes.byref(error)) == INVALID_ARGUMENT
    assert error.message == b"get_spec: spec is NULL"
    assert table().get_spec(sin_executable.handle, None, None) == INVALID_ARGUMENT
    table().release_spec(None)


def test_released_spec_is_refused(executable: cyxla.Executable) -> None:
    _, spec, _ = get_spec(executable.handle)
    handle = spec.executable
    table().release_spec(ctypes.byref(spec))
    x, y = np.zeros(3, np.float32), np.zeros(3, np.float32)
    # A zeroed spec, as release_spec leaves it, is refused ...
    error = execute(spec, [as_input(x)], [y.ctypes.data])
    assert error.status == RELEASED
    assert b"released" in error.message
    # ... and so is a stale copy, as a careless caller might keep, although the Python
    # Executable still holds the executable: the spec's own hold is gone.
    spec.executable = handle
    assert execute(spec, [as_input(x)], [y.ctypes.data]).status == RELEASED


def test_freed_executable_is_refused_and_a_held_spec_keeps_it_alive() -> None:
    program = cyxla.lower(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    executable = cyxla.compile_program(program)[0]
    handle = executable.handle
    _, held, _ = get_spec(handle)
    del executable
    gc.collect()
    x, y = np.array([1.0, 2.0, 3.0], np.float32), np.empty(3, np.float32)
    assert execute(held, [as_input(x)], [y.ctypes.data]).status == OK  # the spec holds it
    np.testing.assert_array_equal(y, jax.jit(sin2)(x))
    table().release_spec(ctypes.byref(held))
    # The last hold is gone: the executable is freed, and its handle is an error.
    assert get_spec(handle)[0] == RELEASED
    held.executable = handle
    error = execute(held, [as_input(x)], [y.ctypes.data])
    assert error.status == RELEASED


def test_a_handle_dies_with_its_python_executable() -> None:
    program = cyxla.lower(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    executable = cyxla.compile_program(program)[0]
    handle = executable.handle
    status, spec, _ = get_spec(handle)
    assert status == OK
    table().release_spec(ctypes.byref(spec))
    del executable
    gc.collect()
    status, _, error = get_spec(handle)
    assert status == RELEASED
    assert b"no executable has the handle" in error.message


def test_releasing_a_foreign_or_stale_spec_changes_nothing(
    sin_executable: cyxla.Executable,
) -> None:
    spec, error = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec)), Error()
    assert table().get_spec(sin_executable.handle, ctypes.byref(spec), ctypes.byref(error)) == OK
    handle, hold = sin_executable.handle, spec.executable
    table().release_spec(ctypes.byref(spec))
    # The spec's released hold, a wrong generation, an unknown slot:
    for stale in (hold, handle + (5 << 32), 12345):
        foreign = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec), executable=stale)
        table().release_spec(ctypes.byref(foreign))
        assert foreign.executable == 0
    # The Python executable's own reference is untouched: the handle still works.
    assert table().get_spec(handle, ctypes.byref(spec), ctypes.byref(error)) == OK
    table().release_spec(ctypes.byref(spec))


def test_registry_grows_past_one_chunk(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    executable = runtime(scripted).compile(b"x", b"", [(F32, [3])])
    handles = [_core.NativeHandle(executable) for _ in range(2100)]
    values = [h.value for h in handles]
    assert len(set(values)) == 2100 and 0 not in values
    spec, error = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec)), Error()
    x, y = np.arange(3, dtype=np.float32), np.zeros(3, np.float32)
    inputs = (Input * 1)(Input(x.ctypes.data, F32, 12))
    outputs = (ctypes.c_void_p * 1)(y.ctypes.data)
    assert table().get_spec(values[-1], ctypes.byref(spec), ctypes.byref(error)) == OK
    assert table().execute(ctypes.byref(spec), inputs, 1, outputs, 1, ctypes.byref(error)) == OK
    np.testing.assert_array_equal(y, x)
    table().release_spec(ctypes.byref(spec))
    del handles
    gc.collect()
    assert table().get_spec(values[-1], ctypes.byref(spec), ctypes.byref(error)) == RELEASED


def test_aligned_memory() -> None:
    api = table()
    for nbytes in (1, 63, 64, 1000, 1 << 20):
        pointer = api.aligned_memory(nbytes)
        assert pointer % cyxla.HOST_ALIGNMENT == 0
        ctypes.memset(pointer, 0xAB, nbytes)  # writable over its whole size
        api.free_aligned(pointer)
    assert api.aligned_memory(0) is None
    api.free_aligned(None)


@pytest.mark.parametrize("nbytes", [2**64 - 1, 2**64 - 63, 2**64 - 64, 2**63 + 1])
def test_aligned_memory_too_large_is_null(nbytes: int) -> None:
    # Rounding these up to the alignment wraps (or asks for more than any machine has):
    # never a pointer to fewer bytes than asked for.
    assert table().aligned_memory(nbytes) is None


# ---------------------------------------------------------------------- threads


def slow(x: jax.Array) -> jax.Array:
    """Long enough (about two seconds here) for other threads to act while it runs: the
    test below needs it to run 0.8 s at least, and 600,000 steps took 0.77 s."""
    return jax.lax.fori_loop(0, 1_500_000, lambda i, v: jnp.sin(v) + 1e-3, x)


@pytest.mark.alone
def test_a_release_waiting_for_calls_blocks_no_other_handle(
    executable: cyxla.Executable,
) -> None:
    """The last release of a handle waits for the calls in flight on it, and meanwhile
    other threads take and drop specs of other handles without waiting for those calls."""
    program = cyxla.lower(slow, [jax.ShapeDtypeStruct((1024,), jnp.float32)])
    long_running = cyxla.compile_program(program)[0]
    _, spec, _ = get_spec(long_running.handle)
    running = ProgramSpec.from_buffer_copy(spec)  # a copy, used while `spec` is released
    del long_running
    gc.collect()  # `spec` now holds the last reference
    x, y = np.zeros(1024, np.float32), np.zeros(1024, np.float32)
    done: dict[str, float] = {}

    def run() -> None:
        assert execute(running, [as_input(x)], [y.ctypes.data]).status == OK
        done["execute"] = time.monotonic()

    def release() -> None:
        table().release_spec(ctypes.byref(spec))
        done["release"] = time.monotonic()

    caller = threading.Thread(target=run)
    caller.start()
    time.sleep(0.2)  # the call is in flight
    releaser = threading.Thread(target=release)
    releaser.start()
    time.sleep(0.1)  # the release is waiting for the call
    status, other, _ = get_spec(executable.handle)  # must not wait for the call
    done["other"] = time.monotonic()
    assert status == OK
    table().release_spec(ctypes.byref(other))
    caller.join()
    releaser.join()
    # The call runs for a second or more after `other` was served, and the release waited
    # for it. (Held under the registry's lock, that wait kept `other` waiting too.)
    assert done["execute"] - done["other"] > 0.5, done
    assert done["release"] - done["other"] > 0.5, done
    assert get_spec(spec.executable or running.executable)[0] == RELEASED


def test_eight_threads_ten_thousand_calls_each(executable: cyxla.Executable) -> None:
    rows = np.random.default_rng(0).standard_normal((97, 3)).astype(np.float32)
    expected = np.asarray(jax.jit(jax.vmap(sin2))(rows))
    wrong = _benchmark._check_threads(executable.handle, rows, expected, 10_000, 8)
    assert wrong == 0


def test_threads_see_a_table_that_differs_from_the_jit_when_wrong(
    executable: cyxla.Executable,
) -> None:
    # The check above can fail: a table of wrong results is reported as wrong.
    rows = np.zeros((4, 3), np.float32)
    wrong = _benchmark._check_threads(executable.handle, rows, rows + 1, 10, 2)
    assert wrong == 20


# ---------------------------------------------------------------------- the native loops


def test_benchmark_loops(sin_executable: cyxla.Executable) -> None:
    x = np.array([0.5, 1.0, 2.0], np.float32)
    y = np.zeros(3, np.float32)
    seconds = _benchmark.execute_threads(sin_executable.handle, [x], [y], 20, 3)
    assert seconds > 0
    pointers = sin_executable._native._pjrt_pointers()
    phases = _benchmark.raw_pjrt_phases(*pointers, [x], [F32], [y], 5)
    assert len(phases) == 5 and all(p >= 0 for p in phases) and sum(phases) > 0
    np.testing.assert_array_equal(y, jax.jit(jnp.sin)(x))


def test_benchmark_memcpy_loop_copies_the_targets_bytes() -> None:
    source = np.arange(1000, dtype=np.float32)
    target = np.zeros(600, np.float32)
    assert _benchmark.memcpy_loop(source, target, 3) >= 0
    np.testing.assert_array_equal(target, source[:600])
    with pytest.raises(ValueError, match=r"^source: has 2400 bytes, fewer than the target's 4000"):
        _benchmark.memcpy_loop(target, np.zeros(1000, np.float32), 1)


def test_benchmark_refuses_more_arrays_than_inputs(sin_executable: cyxla.Executable) -> None:
    x = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match=r"^inputs: the program takes 1 inputs, given 2"):
        _benchmark.execute_loop(sin_executable.handle, [x, x], [x], 1)


@pytest.mark.parametrize("threads", [None, 2])
def test_benchmark_refuses_a_too_small_output(
    sin_executable: cyxla.Executable, threads: int | None
) -> None:
    x, small = np.zeros(3, np.float32), np.zeros(1, np.float32)
    with pytest.raises(ValueError, match=r"^outputs\[0\]: has 4 bytes, the program writes 12"):
        if threads is None:
            _benchmark.execute_loop(sin_executable.handle, [x], [small], 1)
        else:
            _benchmark.execute_threads(sin_executable.handle, [x], [small], 1, threads)


@pytest.mark.parametrize(
    ("rows_in", "rows_out", "threads", "message"),
    [
        (0, 0, 2, r"^table_in: is empty"),
        (2, 1, 2, r"^table_out: has 12 bytes, 2 rows of 12 expected"),
        (2, 2, 0, r"^threads: must be 1 to 4096, given 0"),
        (2, 2, 2**62, r"^threads: must be 1 to 4096, given 4611686018427387904"),
    ],
)
def test_benchmark_check_threads_refuses_bad_tables(
    sin_executable: cyxla.Executable, rows_in: int, rows_out: int, threads: int, message: str
) -> None:
    table_in, table_out = np.zeros((rows_in, 3), np.float32), np.zeros((rows_out, 3), np.float32)
    with pytest.raises(ValueError, match=message):
        _benchmark._check_threads(sin_executable.handle, table_in, table_out, 10, threads)
    x = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match=r"^threads: must be 1 to 4096, given 0"):
        _benchmark.execute_threads(sin_executable.handle, [x], [x], 1, 0)


def test_benchmark_refuses_types_that_do_not_match_the_inputs(
    sin_executable: cyxla.Executable,
) -> None:
    x = np.zeros(3, np.float32)
    pointers = sin_executable._native._pjrt_pointers()
    with pytest.raises(ValueError, match=r"^types: one element type per input, given 2 for 1"):
        _benchmark.raw_pjrt_loop(*pointers, [x], [F32, F32], [x], 1)


@pytest.mark.parametrize("loop", ["execute_threads", "_check_threads"])
def test_benchmark_reraises_an_error_inside_a_worker_thread(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL, loop: str
) -> None:
    # Once, an error in a worker thread ended the process in std::terminate.
    executable = runtime(scripted).compile(b"x", b"", [(F32, [3])])
    handle = _core.NativeHandle(executable)
    x = np.zeros(3, np.float32)
    control.fake_fail(b"PJRT_LoadedExecutable_Execute")
    with pytest.raises(RuntimeError, match="scripted failure of PJRT_LoadedExecutable_Execute"):
        if loop == "execute_threads":
            _benchmark.execute_threads(handle.value, [x], [x], 5, 3)
        else:
            _benchmark._check_threads(handle.value, x[None], x[None], 5, 3)


def test_benchmark_threads_that_cannot_start_are_an_error(
    sin_executable: cyxla.Executable,
) -> None:
    """Starting the threads fails (here: no room for 2**62 of them), which is raised here
    rather than ending the process; the threads started by then finish first."""
    x = np.zeros((2, 3), np.float32)
    y = np.asarray(jax.jit(jnp.sin)(x))
    with pytest.raises(ValueError):
        _benchmark._check_threads(sin_executable.handle, x, y, 1, 2**62)
    assert _benchmark._check_threads(sin_executable.handle, x, y, 10, 2) == 0


# ------------------------------------------------------------------- allocations


ALLOCATION_CHECK = """
    import ctypes, json, os
    import jax, jax.numpy as jnp, numpy as np
    import cyxla
    from cyxla import _benchmark
    from cyxla._bench.paths import aligned as _aligned

    counter = ctypes.CDLL(None)
    counter.count_allocations_stop.restype = ctypes.c_long

    def allocations(loop, calls):
        counter.count_allocations_start()
        loop(calls)
        return counter.count_allocations_stop()

    results = {}
    for name, function, shapes in [
        ("small", lambda x: jnp.sin(x) * 2, [(3,)]),
        ("matmul", lambda x, w: jnp.tanh(x @ w), [(100, 100), (100, 100)]),
    ]:
        program = cyxla.lower(function, [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes])
        executable = cyxla.compile_program(program)[0]
        os.environ["CYXLA_RUNNER"] = "pjrt"
        on_pjrt = cyxla.compile_program(program)[0]
        del os.environ["CYXLA_RUNNER"]
        results[f"{name}/runner"] = executable.runner.name
        inputs = [_aligned(np.ones(s, np.float32)) for s in shapes]
        unaligned = [np.ones(s, np.float32)[1:].base[: int(np.prod(s))].reshape(s) for s in shapes]
        outputs = [_aligned(np.empty(s.shape, s.dtype)) for s in executable.outputs]
        types = [int(s.element_type) for s in executable.inputs]
        pointers = executable._native._pjrt_pointers()
        loops = {
            "cyxla": lambda n, i=inputs: _benchmark.execute_loop(executable.handle, i, outputs, n),
            "cyxla_unaligned": lambda n, i=unaligned: _benchmark.execute_loop(
                executable.handle, i, outputs, n),
            "raw": lambda n: _benchmark.raw_pjrt_loop(*pointers, inputs, types, outputs, n),
            "bound": lambda n: _benchmark.bound_loop(executable.handle, inputs, outputs, n),
            "bound_unaligned": lambda n: _benchmark.bound_loop(
                executable.handle, unaligned, outputs, n),
            "raw_resident": lambda n: _benchmark.raw_pjrt_resident_loop(
                *pointers, inputs, types, outputs, n),
            "cyxla_pjrt": lambda n: _benchmark.execute_loop(on_pjrt.handle, inputs, outputs, n),
            "bound_pjrt": lambda n: _benchmark.bound_loop(on_pjrt.handle, inputs, outputs, n),
        }
        for path, loop in loops.items():
            loop(100)  # warm
            # Per call: the difference between a long and a short loop, so that the
            # loop's own setup cancels out.
            results[f"{name}/{path}"] = (allocations(loop, 3000) - allocations(loop, 1000)) / 2000

    # Batches at sizes 16 and 256: 16 points (exact), 5 (padded to 16), 300 (256 on the
    # caller's memory, then 44 padded to 256), against the raw loop of each size.
    program = cyxla.lower_batched(
        lambda x: jnp.sin(x) * 2, [jax.ShapeDtypeStruct((3,), jnp.float32)], (16, 256))
    batched = cyxla.compile_batched(program)[0]
    loops = {}
    for size, executable in zip(batched.batch_sizes, batched.executables):
        x = [_aligned(np.ones((size, 3), np.float32))]
        y = [_aligned(np.empty((size, 3), np.float32))]
        pointers = executable._native._pjrt_pointers()
        loops[f"raw_{size}"] = lambda n, p=pointers, x=x, y=y: _benchmark.raw_pjrt_loop(
            *p, x, [int(cyxla.ElementType.F32)], y, n)
    for points in (16, 5, 300):
        x = [_aligned(np.ones((points, 3), np.float32))]
        y = [_aligned(np.empty((points, 3), np.float32))]
        loops[f"cyxla_{points}"] = lambda n, x=x, y=y, p=points: _benchmark.execute_batch_loop(
            batched.handle, x, y, p, n)
    for path, loop in loops.items():
        loop(100)
        results[f"batch/{path}"] = (allocations(loop, 3000) - allocations(loop, 1000)) / 2000
    print(json.dumps(results))
"""


def test_execute_allocates_nothing_beyond_the_plugin(tmp_path: Path) -> None:
    shim = tmp_path / "count_allocations.so"
    source = Path(__file__).parent / "native" / "count_allocations.c"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", shim, source], check=True)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(ALLOCATION_CHECK)],
        capture_output=True,
        text=True,
        env={**os.environ, "LD_PRELOAD": str(shim)},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    counts = json.loads(result.stdout.strip().splitlines()[-1])
    for name in ("small", "matmul"):
        raw = counts[f"{name}/raw"]
        assert raw > 0, counts  # the shim counts: the plugin allocates on every call
        # cyxla's execute adds no allocation of its own to what the plugin makes.
        assert counts[f"{name}/cyxla"] <= raw + 0.01, counts
        assert counts[f"{name}/cyxla_unaligned"] <= raw + 0.01, counts
        # A bound call adds none to what the plugin makes for an execute on resident inputs
        # (the raw loop that wraps its inputs once), and that is less than wrapping them.
        resident = counts[f"{name}/raw_resident"]
        assert 0 < resident < raw, counts
        assert counts[f"{name}/bound"] <= resident + 0.01, counts
        assert counts[f"{name}/bound_unaligned"] <= resident + 0.01, counts
        assert counts[f"{name}/cyxla_pjrt"] <= raw + 0.01, counts
        assert counts[f"{name}/bound_pjrt"] <= resident + 0.01, counts
    # sin3 runs on the kernel runner, which allocates nothing at all per call (matmul100's
    # dot is a library fusion: PJRT).
    assert (counts["small/runner"], counts["matmul/runner"]) == ("kernels", "pjrt"), counts
    for path in ("cyxla", "cyxla_unaligned", "bound", "bound_unaligned"):
        assert counts[f"small/{path}"] == 0, counts
    # A batch adds nothing either: per call, the plugin's allocations of the calls it makes.
    raw_16, raw_256 = counts["batch/raw_16"], counts["batch/raw_256"]
    assert raw_16 > 0 and raw_256 > 0, counts
    assert counts["batch/cyxla_16"] <= raw_16 + 0.01, counts
    assert counts["batch/cyxla_5"] <= raw_16 + 0.01, counts
    assert counts["batch/cyxla_300"] <= 2 * raw_256 + 0.01, counts
    # The counts README and docs/performance.md quote are these, within a fifth: a plugin
    # that allocates otherwise makes them stale, and this fails.
    root = Path(__file__).resolve().parents[1]
    readme = re.search(
        r"\((\d+) for `sin3`, (\d+) for `matmul100`, (\d+) for a bound call",
        (root / "README.md").read_text(),
    )
    performance = re.search(
        r"\((\d+) for `sin3`, (\d+) for `matmul100`", (root / "docs/performance.md").read_text()
    )
    assert readme is not None and performance is not None
    assert performance.groups() == readme.groups()[:2]
    paths = ("small/cyxla_pjrt", "matmul/cyxla", "small/bound_pjrt")
    for quoted, measured in zip(readme.groups(), paths, strict=True):
        assert 0.8 * counts[measured] <= int(quoted) <= 1.2 * counts[measured], (quoted, counts)
