"""The C++ core's edges: plugin errors at every step, the device path, the C API's error
arms, element-type names, registry growth and the native benchmark loops.

Most of it runs against tests/native/scripted_plugin.c, a small PJRT plugin whose
behaviour the test scripts (which call fails, what platform it claims, what outputs its
programs report); programs there copy input 0 into every output.
"""

from __future__ import annotations

import ctypes
import gc
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx
from cyxla import _benchmark, _core

from conftest import compile_c, run_cyxla, run_steps
from native_api import (
    INTERNAL,
    INVALID_ARGUMENT,
    OK,
    PJRT,
    RELEASED,
    TYPE_MISMATCH,
    Error,
    Input,
    ProgramSpec,
    table,
)

F32 = int(cx.ElementType.F32)
F64 = int(cx.ElementType.F64)
F8E5M2 = 19  # PJRT_Buffer_Type_F8E5M2: a type cyxla does not carry


@pytest.fixture(scope="module")
def scripted(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[_core.Plugin, ctypes.CDLL]]:
    source = Path(__file__).parent / "native" / "scripted_plugin.c"
    library = compile_c(source, tmp_path_factory.mktemp("scripted") / "libscripted.so", shared=True)
    control = ctypes.CDLL(str(library))
    control.fake_calls.restype = ctypes.c_long
    control.fake_destroyed_errors.restype = ctypes.c_long
    control.fake_options_seen.restype = ctypes.c_char_p
    plugin = _core.Plugin.load(str(library))
    yield plugin, control
    control.fake_fail(b"")


@pytest.fixture
def control(scripted: tuple[_core.Plugin, ctypes.CDLL]) -> Iterator[ctypes.CDLL]:
    """The script, reset after each test: nothing fails, platform "fake", one device,
    programs with one f32[3] output."""
    lib = scripted[1]
    yield lib
    lib.fake_fail(b"")
    lib.fake_get_code_fails(0)
    lib.fake_null_fingerprint(0)
    lib.fake_platform(b"fake")
    lib.fake_devices(1)
    set_outputs(lib, [F32], [[3]])


def set_outputs(lib: ctypes.CDLL, types: list[int], shapes: list[list[int]]) -> None:
    flat = [d for shape in shapes for d in shape] or [0]
    lib.fake_outputs(
        ctypes.c_size_t(len(types)),
        (ctypes.c_int * max(1, len(types)))(*types),
        ctypes.c_size_t(len(shapes)),
        (ctypes.c_size_t * max(1, len(shapes)))(*[len(s) for s in shapes]),
        (ctypes.c_int64 * len(flat))(*flat),
    )


def runtime(scripted: tuple[_core.Plugin, ctypes.CDLL], platform: bytes = b"fake") -> _core.Runtime:
    scripted[1].fake_platform(platform)
    return _core.Runtime.create(scripted[0], {})


# ---------------------------------------------------------------- the plugin and its client


def test_a_plugin_without_error_functions_is_refused_at_load(tmp_path: Path) -> None:
    # Its Initialize fails with an error that only the absent PJRT_Error_Message could
    # read: cyxla refuses the table before calling anything (once, it crashed).
    source = Path(__file__).parent / "native" / "scripted_plugin.c"
    library = compile_c(
        source, tmp_path / "libno_errors.so", shared=True, defines={"SCRIPTED_NO_ERROR_SLOTS": "1"}
    )
    env = {"CYXLA_PJRT_PLUGIN": str(library)}
    steps = run_steps("attempt(lambda: cx.initialize())", env)
    assert steps[0][0] == "PluginLoadError", steps
    assert str(library) in steps[0][1] and "PJRT_Error_Message" in steps[0][1]
    result = run_cyxla("plugins", env=env)
    assert result.returncode == 0, result.stderr
    assert "not loadable: PluginLoadError: " in result.stdout


def test_attributes_of_every_type(scripted: tuple[_core.Plugin, ctypes.CDLL]) -> None:
    assert scripted[0].attributes == {
        "name": "scripted",
        "count": 7,
        "list": [1, 2, 3],
        "ratio": 1.5,
        "flag": True,
    }


def test_client_options_of_every_type_reach_the_plugin(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    options = {"s": "text", "i": 4, "l": [5, 6], "f": 0.25, "b": True}
    client = _core.Runtime.create(scripted[0], options)
    assert control.fake_options_seen().decode().split() == [
        "s=str:text",
        "i=int:4",
        "l=list:2:6",
        "f=float:0.25",
        "b=bool:1",
    ]
    assert (client.platform, client.platform_version, client.device_count) == (
        "fake",
        "scripted 1.0",
        1,
    )
    assert not client.host_is_device


def test_platform_name_is_lower_cased_and_cpu_is_host(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    client = runtime(scripted, b"CPU")
    assert client.platform == "cpu" and client.host_is_device


def test_client_without_devices(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    control.fake_devices(0)
    with pytest.raises(cx.PjrtError) as caught:
        runtime(scripted)
    assert str(caught.value) == (f"the fake client of {scripted[0].path} has no addressable device")


@pytest.mark.parametrize("code_fails", [False, True])
def test_client_create_error_carries_the_message(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL, code_fails: bool
) -> None:
    control.fake_fail(b"PJRT_Client_Create")
    control.fake_get_code_fails(int(code_fails))
    before = control.fake_destroyed_errors()
    with pytest.raises(cx.PjrtError) as caught:
        runtime(scripted)
    assert str(caught.value) == (
        "PJRT_Client_Create failed: scripted failure of PJRT_Client_Create"
    )
    # Every error the plugin made is destroyed: the call's, and GetCode's own.
    assert control.fake_destroyed_errors() - before == (2 if code_fails else 1)


def test_plugin_without_register_handler(scripted: tuple[_core.Plugin, ctypes.CDLL]) -> None:
    with pytest.raises(cx.PluginVersionError) as caught:
        _core._ffi_version(scripted[0])
    assert str(caught.value) == (
        f"the PJRT FFI extension of {scripted[0].path} cannot register handlers (it predates "
        "register_handler, added to XLA in 2025-08); install a newer plugin"
    )


def test_a_runtime_destroys_its_client(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    before = control.fake_calls(b"PJRT_Client_Destroy")
    client = runtime(scripted)
    client.compile(b"x", b"", [(F32, [3])])  # an executable holds its runtime ...
    assert control.fake_calls(b"PJRT_Client_Destroy") == before
    del client
    gc.collect()  # ... until both are gone
    assert control.fake_calls(b"PJRT_Client_Destroy") == before + 1


# ---------------------------------------------------------------- compiling


def test_compile_error(scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL) -> None:
    client = runtime(scripted)
    control.fake_fail(b"PJRT_Client_Compile")
    with pytest.raises(cx.CompileError, match=r"^PJRT_Client_Compile failed: scripted failure"):
        client.compile(b"x", b"", [(F32, [3])])


def test_unsupported_input_type(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    with pytest.raises(cx.DtypeError) as caught:
        runtime(scripted).compile(b"x", b"", [(F32, [3]), (F8E5M2, [2])])
    assert str(caught.value) == "input 1 has an element type cyxla does not support"


def test_unsupported_output_type(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    set_outputs(control, [F32, F8E5M2], [[3], [2]])
    with pytest.raises(cx.DtypeError) as caught:
        runtime(scripted).compile(b"x", b"", [(F32, [3])])
    assert str(caught.value) == (
        "output 1 has element type unsupported, which cyxla does not support"
    )


def test_output_types_and_shapes_that_disagree(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    set_outputs(control, [F32, F32], [[3]])
    with pytest.raises(cx.PjrtError) as caught:
        runtime(scripted).compile(b"x", b"", [(F32, [3])])
    assert str(caught.value) == "the plugin reports 2 output types but 1 output shapes"


def test_serialize_deserialize_and_fingerprint(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    client = runtime(scripted)
    executable = client.compile(b"program-7", b"", [(F32, [3])])
    assert executable.fingerprint() == b"program-7"
    control.fake_null_fingerprint(1)
    assert executable.fingerprint() == b""
    serialized = executable.serialize()
    assert serialized == b"scripted:program-7"
    loaded = client.deserialize(serialized, [(F32, [3])])
    assert loaded.fingerprint() == b""
    control.fake_null_fingerprint(0)
    assert loaded.fingerprint() == b"program-7"
    assert loaded.inputs == [(F32, [3])] and loaded.outputs == [(F32, [3])]
    control.fake_fail(b"PJRT_Executable_DeserializeAndLoad")
    with pytest.raises(cx.PjrtError, match=r"^PJRT_Executable_DeserializeAndLoad failed"):
        client.deserialize(serialized, [(F32, [3])])


def test_a_failed_destroy_is_dropped_and_its_error_freed(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    executable = runtime(scripted).compile(b"x", b"", [(F32, [3])])
    control.fake_fail(b"PJRT_LoadedExecutable_Destroy")
    calls = control.fake_calls(b"PJRT_LoadedExecutable_Destroy")
    errors = control.fake_destroyed_errors()
    del executable
    gc.collect()
    assert control.fake_calls(b"PJRT_LoadedExecutable_Destroy") == calls + 1
    assert control.fake_destroyed_errors() == errors + 1


# ---------------------------------------------------------------- executing


@pytest.mark.parametrize("platform", [b"fake", b"cpu"])
def test_execute_on_either_path(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL, platform: bytes
) -> None:
    set_outputs(control, [F32, F64], [[3], [1]])
    executable = runtime(scripted, platform).compile(b"x", b"", [(F32, [3])])
    x = np.array([1.5, -2.0, 3.25], np.float32)
    y, z = np.zeros(3, np.float32), np.zeros(1, np.float64)
    to_host = control.fake_calls(b"PJRT_Buffer_ToHostBuffer")
    assert executable._execute_exact([x], [y, z])
    np.testing.assert_array_equal(y, x)  # the program copies input 0
    assert z.tobytes() == x.tobytes()[:8]
    # Only a device that is not the host copies outputs through ToHostBuffer.
    expected = 2 if platform == b"fake" else 0
    assert control.fake_calls(b"PJRT_Buffer_ToHostBuffer") == to_host + expected


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


# ---------------------------------------------------------------- the C API's edges


@pytest.fixture(scope="module")
def sin_executable() -> cx.Executable:
    program = cx.lower(jnp.sin, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    return cx.compile_program(program)[0]


TYPE_NAMES = {
    "PRED": "pred",
    "S8": "s8",
    "S16": "s16",
    "S32": "s32",
    "S64": "s64",
    "U8": "u8",
    "U16": "u16",
    "U32": "u32",
    "U64": "u64",
    "F16": "f16",
    "F32": "f32",
    "F64": "f64",
    "BF16": "bf16",
    "C64": "c64",
    "C128": "c128",
}


@pytest.mark.parametrize(
    ("given", "name"),
    [(int(getattr(cx.ElementType, t)), n) for t, n in TYPE_NAMES.items() if t != "F32"]
    + [(F8E5M2, "unsupported")],
)
def test_type_mismatch_names_both_types(
    sin_executable: cx.Executable, given: int, name: str
) -> None:
    spec, error = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec)), Error()
    assert table().get_spec(sin_executable.handle, ctypes.byref(spec), ctypes.byref(error)) == OK
    x = np.zeros(3, np.float32)
    inputs = (Input * 1)(Input(x.ctypes.data, given, 12))
    outputs = (ctypes.c_void_p * 1)(x.ctypes.data)
    status = table().execute(ctypes.byref(spec), inputs, 1, outputs, 1, ctypes.byref(error))
    table().release_spec(ctypes.byref(spec))
    assert status == TYPE_MISMATCH
    assert error.message.decode() == (
        f"execute: input 0 has element type {name}, the program takes f32"
    )


@pytest.mark.parametrize("which", ["inputs", "outputs"])
def test_null_arrays_are_refused(sin_executable: cx.Executable, which: str) -> None:
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


def test_null_spec_and_null_error_are_safe(sin_executable: cx.Executable) -> None:
    error = Error()
    assert table().get_spec(sin_executable.handle, None, ctypes.byref(error)) == INVALID_ARGUMENT
    assert error.message == b"get_spec: spec is NULL"
    assert table().get_spec(sin_executable.handle, None, None) == INVALID_ARGUMENT
    table().release_spec(None)


def test_releasing_a_foreign_or_stale_spec_changes_nothing(sin_executable: cx.Executable) -> None:
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


def test_release_waits_for_calls_in_flight(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    """The last release of a handle returns only after the calls running on it end."""
    program = cx.lower(lambda x: jnp.tanh(x @ x), [jax.ShapeDtypeStruct((400, 400), jnp.float32)])
    executable = cx.compile_program(program)[0]
    handle = _core.NativeHandle(executable._native)
    spec, error = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec)), Error()
    assert table().get_spec(handle.value, ctypes.byref(spec), ctypes.byref(error)) == OK
    x = np.full((400, 400), 0.001, np.float32)
    y = np.zeros((400, 400), np.float32)
    inputs = (Input * 1)(Input(x.ctypes.data, F32, x.nbytes))
    outputs = (ctypes.c_void_p * 1)(y.ctypes.data)
    statuses: list[int] = []

    def worker() -> None:
        own = Error()
        for _ in range(200):
            status = table().execute(ctypes.byref(spec), inputs, 1, outputs, 1, ctypes.byref(own))
            statuses.append(status)
            if status != OK:
                break

    thread = threading.Thread(target=worker)
    thread.start()
    while not statuses:
        pass
    del handle  # the Python executable's own handle is another one
    table().release_spec(ctypes.byref(spec))  # the last reference, while calls run
    thread.join()
    assert statuses[-1] == RELEASED and set(statuses[:-1]) == {OK}


# ---------------------------------------------------------------- FFI registration


def test_registering_a_null_handler(sin_executable: cx.Executable) -> None:
    plugin = cx.initialize().plugin
    with pytest.raises(cx.InvalidArgumentError) as caught:
        _core.register_ffi_handler(plugin, "cyxla_test_null", 0, "Host")
    assert str(caught.value) == "the XLA FFI handler of 'cyxla_test_null' is a null pointer"


def test_a_handler_that_throws_at_its_metadata_call(tmp_path: Path) -> None:
    source = tmp_path / "throwing.cc"
    source.write_text(
        '#include <stdexcept>\nextern "C" void* cyxla_test_throwing(void*) '
        '{ throw std::runtime_error("thrown by the handler"); }\n'
    )
    library = tmp_path / "libthrowing.so"
    subprocess.run(["c++", "-shared", "-fPIC", "-o", library, source], check=True)
    handler = ctypes.CDLL(str(library)).cyxla_test_throwing
    address = ctypes.cast(handler, ctypes.c_void_p).value
    plugin = cx.initialize().plugin
    with pytest.raises(cx.InvalidArgumentError) as caught:
        _core.register_ffi_handler(plugin, "cyxla_test_throwing", address, "Host")
    assert (
        "'cyxla_test_throwing' refused XLA's metadata call (an exception: thrown by the "
        "handler)" in str(caught.value)
    )


def test_the_version_probe_is_no_custom_call() -> None:
    def call_probe(x: jax.Array) -> jax.Array:
        return jax.ffi.ffi_call("cyxla_ffi_version_probe", jax.ShapeDtypeStruct(x.shape, x.dtype))(
            x
        )

    program = cx.lower(
        call_probe,
        [jax.ShapeDtypeStruct((3,), jnp.float32)],
        custom_calls=["cyxla_ffi_version_probe"],
    )
    executable = cx.compile_program(program)[0]
    with pytest.raises(cx.PjrtError, match="cyxla_ffi_version_probe is not a custom call"):
        executable.run([np.zeros(3, np.float32)])


def test_the_exact_execute_is_internal_and_refuses_by_returning_false(
    sin_executable: cx.Executable,
) -> None:
    # It fails quietly (False, nothing run) for Executable.run to convert and retry, so
    # it is not a public name of the core's Executable.
    native = sin_executable._native
    assert not hasattr(native, "execute")
    y = np.full(3, 7.0, np.float32)
    assert native._execute_exact([[0.0, 1.0, 2.0]], [y]) is False
    assert native._execute_exact([np.zeros(6, np.float32)[::2]], [y]) is False
    np.testing.assert_array_equal(y, 7.0)
    np.testing.assert_allclose(sin_executable.run([[0.0, 1.0, 2.0]])[0], np.sin([0, 1, 2]), 1e-6)


# ---------------------------------------------------------------- the native loops


def test_benchmark_loops(sin_executable: cx.Executable) -> None:
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


def test_benchmark_refuses_more_arrays_than_inputs(sin_executable: cx.Executable) -> None:
    x = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match=r"^inputs: the program takes 1 inputs, given 2"):
        _benchmark.execute_loop(sin_executable.handle, [x, x], [x], 1)


@pytest.mark.parametrize("threads", [None, 2])
def test_benchmark_refuses_a_too_small_output(
    sin_executable: cx.Executable, threads: int | None
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
        (2, 2, 0, r"^threads: must be at least 1"),
    ],
)
def test_benchmark_check_threads_refuses_bad_tables(
    sin_executable: cx.Executable, rows_in: int, rows_out: int, threads: int, message: str
) -> None:
    table_in, table_out = np.zeros((rows_in, 3), np.float32), np.zeros((rows_out, 3), np.float32)
    with pytest.raises(ValueError, match=message):
        _benchmark._check_threads(sin_executable.handle, table_in, table_out, 10, threads)
    x = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match=r"^threads: must be at least 1"):
        _benchmark.execute_threads(sin_executable.handle, [x], [x], 1, 0)


def test_benchmark_refuses_types_that_do_not_match_the_inputs(
    sin_executable: cx.Executable,
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
