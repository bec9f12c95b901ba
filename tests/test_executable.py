"""Executables: compiling, serializing and loading, their fingerprint and lifetime, and
running them on the host and through a device (the core against
tests/native/scripted_plugin.c, whose programs copy input 0 into every output), and the
Python `Executable` around them."""

from __future__ import annotations

import ctypes
import gc
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx
from cyxla import _core

from support import F32, F64, runtime, set_outputs

# ---------------------------------------------------------------- the core's executables


def test_compile_error(scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL) -> None:
    client = runtime(scripted)
    control.fake_fail(b"PJRT_Client_Compile")
    with pytest.raises(cx.CompileError, match=r"^PJRT_Client_Compile failed: scripted failure"):
        client.compile(b"x", b"", [(F32, [3])])


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


# ---------------------------------------------------------------- Python's Executable


def test_executable_platform_and_an_internal_refusal() -> None:
    executable, _ = cx.compile_program(cx.lower(jnp.sin, [jax.ShapeDtypeStruct((3,), jnp.float32)]))
    assert executable.platform == "cpu" == executable.program.platform

    class Refusing:
        def _execute_exact(self, *_: Any, **__: Any) -> bool:
            return False

    executable._native = Refusing()  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="the core refused arguments that run"):
        executable.run([np.zeros(3, np.float32)])


def test_executable_repr_names_its_program_and_signature() -> None:
    f32 = jax.ShapeDtypeStruct((2, 3), jnp.float32)

    def pair(x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
        return x + y, jnp.sum(x)

    executable, _ = cx.compile_program(cx.lower(pair, [f32, f32]))
    inputs = ", ".join(map(str, executable.inputs))
    outputs = ", ".join(map(str, executable.outputs))
    assert repr(executable) == f"<cyxla.Executable pair({inputs}) -> ({outputs}) on cpu>"
    assert len(executable.inputs) == 2 and len(executable.outputs) == 2
