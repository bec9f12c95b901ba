"""Executables: compiling, serializing and loading, their fingerprint and lifetime, and
running them on the host and through a device (the core against
tests/native/scripted_plugin.c, whose programs copy input 0 into every output), and the
Python `Executable` around them: `run`, results written into the caller's arrays
(`out=`), and the handle that native callers take from it."""

from __future__ import annotations

import ctypes
import gc
import re
import sys
import threading
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import cyxla as cx
from cyxla import _benchmark, _core
from cyxla._run.aligned import empty_at

from support import F32, F64, compile_fn, hooks, runtime, set_outputs, spec

# ---------------------------------------------------------------- the core's executables


def test_compile_error(scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL) -> None:
    client = runtime(scripted)
    control.fake_fail(b"PJRT_Client_Compile")
    with pytest.raises(cx.CompileError, match=r"^PJRT_Client_Compile failed: scripted failure"):
        client.compile(b"x", b"", [(F32, [3])])


def test_a_plugin_message_that_is_not_utf8_arrives_as_text(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    # MLIR echoes a corrupted op name byte for byte: the bytes arrive escaped as Python's
    # "backslashreplace" writes them, in a CompileError, never as UnicodeDecodeError.
    client = runtime(scripted)
    control.fake_fail(b"PJRT_Client_Compile")
    control.fake_error_text(b"unknown op 'stablehlo.\xff\xc3' (\xce\xbb kept)")
    with pytest.raises(cx.CompileError) as caught:
        client.compile(b"x", b"", [(F32, [3])])
    assert str(caught.value) == (
        "PJRT_Client_Compile failed: unknown op 'stablehlo.\\xff\\xc3' (\u03bb kept)"
    )


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ((F32, [1 << 62, 4]), f"f32[{1 << 62},4]"),  # 2^64 bytes, which wrapped to 0
        ((F32, [1 << 32, 1 << 32]), f"f32[{1 << 32},{1 << 32}]"),
        ((F32, [-1]), "f32[-1]"),
    ],
)
def test_specs_of_more_bytes_than_a_size_counts_are_refused(
    scripted: tuple[_core.Plugin, ctypes.CDLL],
    control: ctypes.CDLL,
    spec: tuple[int, list[int]],
    shown: str,
) -> None:
    message = f"^{re.escape(shown)} has a negative dimension or more bytes than a size_t"
    with pytest.raises(cx.InvalidArgumentError, match=message):
        runtime(scripted).compile(b"x", b"", [spec])
    # The plugin's report of an output is held to the same.
    set_outputs(control, [F32], [spec[1]])
    with pytest.raises(cx.InvalidArgumentError, match=message):
        runtime(scripted).compile(b"x", b"", [(F32, [3])])


def test_output_types_and_shapes_that_disagree(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    set_outputs(control, [F32, F32], [[3]])
    with pytest.raises(cx.PjrtError) as caught:
        runtime(scripted).compile(b"x", b"", [(F32, [3])])
    assert str(caught.value) == "the plugin reports 2 output types but 1 output shapes"


@pytest.mark.parametrize(
    ("donated", "message"),
    [
        ([2], "donated output 2 is out of range"),
        ([1, 1], "donated output 1 is out of range or given twice"),
    ],
)
def test_donated_outputs_must_be_outputs_and_each_once(
    scripted: tuple[_core.Plugin, ctypes.CDLL],
    control: ctypes.CDLL,
    donated: list[int],
    message: str,
) -> None:
    set_outputs(control, [F32, F32], [[3], [3]])
    inputs = [(F32, [3]), *[(F32, [3])] * len(donated)]
    with pytest.raises(cx.InvalidArgumentError, match=message):
        runtime(scripted).compile(b"x", b"", inputs, donated)


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
    assert hooks.execute_exact(executable, [x], [y, z])
    np.testing.assert_array_equal(y, x)  # the program copies input 0
    assert z.tobytes() == x.tobytes()[:8]
    # Only a device that is not the host copies outputs through ToHostBuffer.
    expected = 2 if platform == b"fake" else 0
    assert control.fake_calls(b"PJRT_Buffer_ToHostBuffer") == to_host + expected


@pytest.mark.parametrize("platform", [b"fake", b"cpu"])
def test_runs_cache_keeps_only_buffers_that_alias_the_inputs(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL, platform: bytes
) -> None:
    executable = runtime(scripted, platform).compile(b"x", b"", [(F32, [3])])
    cached = _core._CachedRun(executable)
    x, y = cx.zeros(3, np.float32), np.zeros(3, np.float32)
    made = control.fake_calls(b"PJRT_Client_BufferFromHostBuffer")
    for k in range(3):
        x[...] = [k, k + 1, k + 2]
        assert cached([x], [y]) == _core._CachedRun.RAN
        np.testing.assert_array_equal(y, x)  # the program copies input 0: what x holds now
    # The scripted plugin copies the host memory into its buffers, on the host too: the
    # cache sees that the buffer does not alias x and keeps none (XLA's CPU client aliases
    # aligned memory, and one buffer then serves every call).
    assert control.fake_calls(b"PJRT_Client_BufferFromHostBuffer") - made == 3
    # A failed execute, or a failed buffer for a new address, leaves the cache usable.
    control.fake_fail(b"PJRT_LoadedExecutable_Execute")
    with pytest.raises(cx.PjrtError, match="PJRT_LoadedExecutable_Execute"):
        cached([x], [y])
    other = cx.zeros(3, np.float32)
    control.fake_fail(b"PJRT_Client_BufferFromHostBuffer")
    with pytest.raises(cx.PjrtError, match="PJRT_Client_BufferFromHostBuffer"):
        cached([other], [y])
    control.fake_fail(b"")
    other[...] = 7.0
    assert cached([other], [y]) == _core._CachedRun.RAN
    np.testing.assert_array_equal(y, 7.0)
    assert cached((x,), (y,)) == _core._CachedRun.RAN
    np.testing.assert_array_equal(y, x)


def test_runs_cache_says_which_side_it_refused(sin_executable: cx.Executable) -> None:
    cached = _core._CachedRun(sin_executable._native)
    x, y = np.zeros(3, np.float32), np.full(3, 5.0, np.float32)
    view = memoryview(bytearray(12)).cast("f")
    # Outputs are checked first, and refused by themselves.
    for out in ([y, y], [], y, [view], [y.astype(np.float64)], [y[::-1]], "ab"):
        assert cached([x], out) == _core._CachedRun.OUTPUTS_REFUSED, out
    for given in ([[0.0, 1.0, 2.0]], [x.astype(np.float64)], [x, x], x, [np.zeros(6)[::2]]):
        assert cached(given, [y]) == _core._CachedRun.INPUTS_REFUSED, given
    np.testing.assert_array_equal(y, 5.0)  # nothing ran
    assert cached([x], [y]) == _core._CachedRun.RAN
    np.testing.assert_array_equal(y, 0.0)


def test_the_exact_execute_is_internal_and_refuses_by_returning_false(
    sin_executable: cx.Executable,
) -> None:
    # It fails quietly (False, nothing run) for Executable.run to convert and retry, so
    # it is not a public name of the core's Executable.
    native = sin_executable._native
    assert not hasattr(native, "execute")
    y = np.full(3, 7.0, np.float32)
    assert hooks.execute_exact(native, [[0.0, 1.0, 2.0]], [y]) is False
    assert hooks.execute_exact(native, [np.zeros(6, np.float32)[::2]], [y]) is False
    np.testing.assert_array_equal(y, 7.0)
    np.testing.assert_allclose(sin_executable.run([[0.0, 1.0, 2.0]])[0], np.sin([0, 1, 2]), 1e-6)


# ---------------------------------------------------------------- Python's Executable


@pytest.mark.parametrize("refusal", [1, 2], ids=["inputs", "outputs"])
def test_executable_platform_and_an_internal_refusal(refusal: int) -> None:
    executable, _ = cx.compile_program(cx.lower(jnp.sin, [jax.ShapeDtypeStruct((3,), jnp.float32)]))
    assert executable.platform == "cpu" == executable.program.platform
    # A core that refuses what run checked and converted: 1 the inputs, 2 the outputs.
    executable._call = lambda *_: refusal  # type: ignore[assignment,method-assign]
    with pytest.raises(RuntimeError, match="the core refused arguments that run"):
        executable.run([np.zeros(3, np.float32)], out=[np.zeros(3, np.float32)])


def test_executable_repr_names_its_program_and_signature() -> None:
    f32 = jax.ShapeDtypeStruct((2, 3), jnp.float32)

    def pair(x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
        return x + y, jnp.sum(x)

    executable, _ = cx.compile_program(cx.lower(pair, [f32, f32]))
    inputs = ", ".join(map(str, executable.inputs))
    outputs = ", ".join(map(str, executable.outputs))
    assert repr(executable) == f"<cyxla.Executable pair({inputs}) -> ({outputs}) on cpu>"
    assert len(executable.inputs) == 2 and len(executable.outputs) == 2


# ---------------------------------------------------------------- run(out=)


@pytest.fixture(scope="module")
def pair() -> cx.Executable:
    """Two outputs of two dtypes: x + 1 (float32[2,3]) and argmax(x) (int32[])."""
    return compile_fn(lambda x: (x + 1, jnp.argmax(x)), [spec((2, 3), np.float32)])


def test_run_writes_into_out_and_returns_it(pair: cx.Executable) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = [np.empty((2, 3), np.float32), np.empty((), np.int32)]
    result = pair.run([x], out=out)
    assert isinstance(result, tuple) and len(result) == 2
    assert result[0] is out[0] and result[1] is out[1]
    np.testing.assert_array_equal(out[0], x + 1)
    assert out[1] == 5
    # Again, in a loop: the same arrays, new values; a tuple works as well as a list.
    for k in range(3):
        again = pair.run([x * k], out=tuple(out))
        assert again[0] is out[0]
        np.testing.assert_array_equal(out[0], x * k + 1)


def test_run_makes_no_new_output_arrays_with_out(pair: cx.Executable) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = [np.empty((2, 3), np.float32), np.empty((), np.int32)]
    pair.run([x], out=out)
    before = sys.getallocatedblocks()
    for _ in range(200):
        pair.run([x], out=out)
    # The instrument sees arrays kept alive (a control); run with out= keeps none.
    assert sys.getallocatedblocks() - before < 50
    kept = [pair.run([x]) for _ in range(200)]
    assert sys.getallocatedblocks() - before >= 200
    del kept


def test_run_may_write_an_output_over_an_input() -> None:
    executable = compile_fn(lambda x: x * 2 + 1, [spec((4,), np.float32)])
    x = np.arange(4, dtype=np.float32)
    (result,) = executable.run([x], out=[x])
    assert result is x
    np.testing.assert_array_equal(x, [1, 3, 5, 7])


def test_run_writes_bfloat16_outputs_into_out() -> None:
    bf16 = np.dtype(ml_dtypes.bfloat16)
    executable = compile_fn(lambda x: x * 2, [spec((3,), bf16)])
    out = np.zeros(3, bf16)
    (result,) = executable.run([np.array([1, 2, 3], bf16)], out=[out])
    assert result is out and result.dtype == bf16
    np.testing.assert_array_equal(out.astype(np.float32), [2, 4, 6])


# ------------------------------------------- large outputs: aligned, recycled memory


@pytest.fixture(scope="module")
def large() -> cx.Executable:
    """Two outputs of 256 KiB and 128 KiB (float32 and bfloat16) and a small one."""
    return compile_fn(
        lambda x: (x * 2 + 1, x.astype(jnp.bfloat16), jnp.sum(x)), [spec((1 << 16,), np.float32)]
    )


def _expected(x: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(
        np.asarray(r) for r in jax.jit(lambda x: (x * 2 + 1, x.astype(jnp.bfloat16), jnp.sum(x)))(x)
    )


def _check(result: tuple[np.ndarray, ...], x: np.ndarray) -> None:
    for got, want in zip(result, _expected(x), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_run_returns_large_outputs_aligned_and_reuses_their_memory_once_freed(
    large: cx.Executable,
) -> None:
    # Earlier tests' garbage, collected during this one, would give blocks back to the
    # kept ones, which a call here would then take (the newest first): collected first,
    # and the collector kept off.
    gc.collect()
    gc.disable()
    try:
        _check_reuse(large)
    finally:
        gc.enable()


def _check_reuse(large: cx.Executable) -> None:
    rng = np.random.default_rng(0)
    x1, x2, x3 = (rng.standard_normal(1 << 16, dtype=np.float32) for _ in range(3))
    r1 = large.run([x1])
    r2 = large.run([x2])
    _check(r1, x1)  # the second call left the first call's results alone
    _check(r2, x2)
    for array in r1[:2]:
        assert array.ctypes.data % cx.HOST_ALIGNMENT == 0
        assert array.flags.writeable and array.flags.c_contiguous
    held = {a.ctypes.data for a in r2[:2]}
    view = r2[0][10:20]  # keeps r2[0]'s memory, and only that
    freed = {a.ctypes.data for a in r1[:2]}
    del r1, r2
    r3 = large.run([x3])
    _check(r3, x3)
    assert {a.ctypes.data for a in r3[:2]} <= freed | (held - {view.base.ctypes.data})
    assert view.base.ctypes.data not in {a.ctypes.data for a in r3[:2]}
    np.testing.assert_array_equal(view, x2[10:20] * 2 + 1)


def test_large_outputs_are_reused_after_other_sizes_filled_the_kept_blocks(
    large: cx.Executable,
) -> None:
    """The kept blocks make room for a block handed back by freeing the oldest: a process
    that once made outputs of other sizes still reuses the memory of the ones it makes now.
    (They used to be kept only while there was room, so eight stale sizes stopped all reuse.)"""
    gc.collect()
    gc.disable()
    try:
        stale = [_core._recycled_bytes((1 << 17) + 64 * (k + 1)) for k in range(8)]
        del stale  # eight sizes no call here asks for, kept
        x = np.ones(1 << 16, np.float32)
        r1 = large.run([x])
        freed = {a.ctypes.data for a in r1[:2]}
        del r1
        r2 = large.run([x])
        assert {a.ctypes.data for a in r2[:2]} == freed
        _check(r2, x)
    finally:
        gc.enable()


@pytest.mark.parametrize(
    "make",
    [lambda x: x.astype(np.float64), lambda x: np.repeat(x, 2)[::2]],
    ids=["float64", "strided"],
)
def test_run_converts_large_inputs(large: cx.Executable, make: Any) -> None:
    x = np.random.default_rng(1).standard_normal(1 << 16, dtype=np.float32)
    given = make(x)
    assert given.dtype != np.float32 or not given.flags.c_contiguous
    _check(large.run([given]), x)


_F32 = np.empty((2, 3), np.float32)
_I32 = np.empty((), np.int32)


@pytest.mark.parametrize(
    ("out", "error", "message"),
    [
        (_F32, TypeError, r"out must be a sequence \(list or tuple\) of arrays.*given ndarray"),
        ("ab", TypeError, r"out must be a sequence .* given str"),
        (5, TypeError, r"out must be a sequence .* given int"),
        ([_F32], cx.InvalidArgumentError, r"out must hold 2 arrays, one per output.*given 1"),
        ([_F32, _I32, _I32], cx.InvalidArgumentError, r"out must hold 2 arrays.*given 3"),
        ([[[0.0] * 3] * 2, _I32], TypeError, r"out\[0\] must be a numpy.ndarray.*given list"),
        (
            [np.empty((3, 2), np.float32), _I32],
            cx.InvalidArgumentError,
            r"out\[0\]: expected shape float32\[2,3\], given float32\[3,2\]",
        ),
        (
            [_F32, np.empty((1,), np.int32)],
            cx.InvalidArgumentError,
            r"out\[1\]: expected shape int32\[\], given int32\[1\]",
        ),
        (
            [np.empty((2, 3), np.float64), _I32],
            cx.DtypeError,
            r"out\[0\]: expected float32\[2,3\], given float64\[2,3\] \(out is not cast\)",
        ),
        (
            [np.empty((2, 3), np.float32, order="F"), _I32],
            cx.InvalidArgumentError,
            r"out\[0\]: expected a C-contiguous array",
        ),
        (
            [np.empty((2, 6), np.float32)[:, ::2], _I32],
            cx.InvalidArgumentError,
            r"out\[0\]: expected a C-contiguous array",
        ),
    ],
    ids=[
        "ndarray",
        "str",
        "int",
        "too-few",
        "too-many",
        "list-not-array",
        "shape",
        "scalar-shape",
        "dtype",
        "fortran",
        "strided",
    ],
)
def test_run_refuses_an_out_that_does_not_fit(
    pair: cx.Executable, out: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=rf"^run: {message}"):
        pair.run([np.zeros((2, 3), np.float32)], out=out)


def test_run_refuses_a_read_only_out(pair: cx.Executable) -> None:
    frozen = np.empty((2, 3), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(cx.InvalidArgumentError, match=r"out\[0\]: expected a writeable array"):
        pair.run([np.zeros((2, 3), np.float32)], out=[frozen, _I32])


# ---------------------------------------------------------------- run's kept buffers
# run keeps the buffers of the last call's inputs (runtime/cached_call.hpp): the same
# address again reuses them, and the plugin reads what the memory holds at that call.


@pytest.fixture(scope="module")
def affine() -> cx.Executable:
    """A large output (written in place through a donated parameter) and a small one."""
    return compile_fn(lambda x: (x * 2 + 1, jnp.sum(x)), [spec((1 << 16,), np.float32)])


def _affine(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return tuple(np.asarray(r) for r in jax.jit(lambda x: (x * 2 + 1, jnp.sum(x)))(x))


def _unaligned(length: int) -> np.ndarray:
    """A float32 array 16 bytes past a 64-byte boundary: what NumPy may hand out."""
    return empty_at(16, (length,), np.float32)


@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "unaligned"])
def test_run_reads_what_the_same_input_holds_at_each_call(
    affine: cx.Executable, aligned: bool
) -> None:
    x = cx.zeros(1 << 16, np.float32) if aligned else _unaligned(1 << 16)
    assert (x.ctypes.data % cx.HOST_ALIGNMENT == 0) is aligned
    other = np.random.default_rng(2).standard_normal(1 << 16, dtype=np.float32)
    for k in range(4):
        x[...] = np.arange(1 << 16, dtype=np.float32) * k
        for got, want in zip(affine.run([x]), _affine(x), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6)
        # Another array between two calls on `x`: the kept buffer is replaced, and back.
        np.testing.assert_allclose(affine.run([other])[0], other * 2 + 1, rtol=1e-6)


@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "unaligned"])
def test_run_writes_a_large_output_over_its_own_input(aligned: bool) -> None:
    # flip reads other elements than it writes: wrong if the plugin wrote over x while
    # reading it. The kept buffer over x is read, the result staged, then copied into x.
    executable = compile_fn(lambda x: jnp.flip(x) * 2, [spec((1 << 16,), np.float32)])
    x = cx.zeros(1 << 16, np.float32) if aligned else _unaligned(1 << 16)
    x[...] = np.arange(1 << 16)
    want = x.copy()
    for _ in range(3):
        assert executable.run([x], out=[x])[0] is x
        want = np.flip(want) * 2
        np.testing.assert_array_equal(x, want)


@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "unaligned"])
def test_run_on_memory_freed_and_reused_by_another_array(
    affine: cx.Executable, aligned: bool
) -> None:
    # An array made and dropped in a loop often lands at the address of the last one: the
    # kept buffer must then read the new array's values. Views made afresh over one block
    # of memory give that case at every call, whatever the allocator does.
    block = cx.zeros(1 << 16, np.float32) if aligned else _unaligned(1 << 16)
    rng = np.random.default_rng(3)
    for _ in range(4):
        x = block.view()
        x[...] = rng.standard_normal(1 << 16, dtype=np.float32)
        assert x.ctypes.data == block.ctypes.data
        for got, want in zip(affine.run([x]), _affine(x), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6)
        del x


def test_run_writes_an_unaligned_out_with_no_new_array(affine: cx.Executable) -> None:
    import tracemalloc

    x = np.random.default_rng(4).standard_normal(1 << 16, dtype=np.float32)
    out = [_unaligned(1 << 16), np.empty((), np.float32)]
    assert out[0].ctypes.data % cx.HOST_ALIGNMENT != 0
    affine.run([x], out=out)  # warm: the core's staging area is made once
    inputs = [x + k for k in range(3)]
    expected = [_affine(given) for given in inputs]
    tracemalloc.start()
    try:
        # The instrument sees a new array of the output's size (NumPy reports its data
        # to tracemalloc): the control.
        start, _ = tracemalloc.get_traced_memory()
        np.empty_like(out[0])
        assert tracemalloc.get_traced_memory()[1] - start >= out[0].nbytes
        tracemalloc.reset_peak()
        start, _ = tracemalloc.get_traced_memory()
        for given in inputs:
            result = affine.run([given], out=out)
            assert result[0] is out[0] and result[1] is out[1]
        peak = tracemalloc.get_traced_memory()[1] - start
        assert peak < out[0].nbytes // 8
    finally:
        tracemalloc.stop()
    for got, want in zip(out, expected[-1], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5)
    kept = sys.getallocatedblocks()
    for _ in range(50):
        affine.run([x], out=out)
    assert sys.getallocatedblocks() - kept < 20


def _reshape_in_place(array: np.ndarray, shape: tuple[int, ...]) -> None:
    # NumPy 2.5 deprecates setting the shape, but callers still can: run must notice.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        array.shape = shape


def test_run_checks_the_same_out_again_at_every_call(pair: cx.Executable) -> None:
    # An array keeps its identity when its shape or flags change in place: each call
    # checks the arrays themselves, not which objects came back.
    x = np.zeros((2, 3), np.float32)
    out = [np.empty((2, 3), np.float32), np.empty((), np.int32)]
    pair.run([x], out=out)
    _reshape_in_place(out[0], (3, 2))
    with pytest.raises(cx.InvalidArgumentError, match=r"out\[0\]: expected shape"):
        pair.run([x], out=out)
    _reshape_in_place(out[0], (2, 3))
    out[0].flags.writeable = False
    with pytest.raises(cx.InvalidArgumentError, match=r"out\[0\]: expected a writeable array"):
        pair.run([x], out=out)
    out[0].flags.writeable = True
    assert pair.run([x + 1], out=out)[0] is out[0]
    np.testing.assert_array_equal(out[0], 2.0)


def test_run_with_more_arrays_than_the_core_keeps_inline() -> None:
    # The core's per-call arrays live inline up to 16 (SmallArray), on the heap beyond.
    count = 20
    executable = compile_fn(
        lambda *xs: tuple(x * (k + 1) for k, x in enumerate(xs)), [spec((3,), np.float32)] * count
    )
    inputs = [np.full(3, k, np.float32) for k in range(count)]
    out = [np.empty(3, np.float32) for _ in range(count)]
    for _ in range(2):
        for result in (executable.run(inputs), executable.run(inputs, out=out)):
            for k, got in enumerate(result):
                np.testing.assert_array_equal(got, k * (k + 1))


def test_run_refuses_an_out_that_is_a_buffer_but_not_an_array(pair: cx.Executable) -> None:
    # The core would write a float32 memoryview of the right shape; run takes arrays only.
    view = memoryview(bytearray(24)).cast("f", (2, 3))
    with pytest.raises(TypeError, match=r"out\[0\] must be a numpy.ndarray .* memoryview"):
        pair.run([np.zeros((2, 3), np.float32)], out=[view, _I32])


def _in_threads(work: Any, count: int) -> None:
    """`work(index)` in `count` threads at once; returns when all are done."""
    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_run_from_threads_at_once_on_one_executable(affine: cx.Executable) -> None:
    # One thread at a time uses the kept buffers; the others run without them.
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal(1 << 16, dtype=np.float32) for _ in range(4)]
    expected = [_affine(x) for x in inputs]
    failures: list[str] = []
    barrier = threading.Barrier(len(inputs))

    def work(index: int) -> None:
        x = inputs[index]
        out = [np.empty(1 << 16, np.float32), np.empty((), np.float32)]
        barrier.wait()
        for _ in range(50):
            for got, want in zip(affine.run([x]), expected[index], strict=True):
                if not np.allclose(got, want, rtol=1e-5):
                    failures.append(f"thread {index}: run")
            affine.run([x], out=out)
            for got, want in zip(out, expected[index], strict=True):
                if not np.allclose(got, want, rtol=1e-5):
                    failures.append(f"thread {index}: run(out=)")

    _in_threads(work, len(inputs))
    assert failures == []


# Copies of 1 MiB and more are shared with helper threads (runtime/shared_copy.hpp): the
# staging copy of an unaligned input, and a result copied into an unaligned out.

_SHARED = (3 << 20) // 4 + 3  # f32 elements: past the shared copy's bound, not whole pieces


@pytest.fixture(scope="module")
def flip_large() -> cx.Executable:
    # Each output element reads the other end of the input: a piece of a copy that is
    # missed, or put in the wrong place, shows in the result.
    return compile_fn(lambda x: jnp.flip(x) * 2, [spec((_SHARED,), np.float32)])


def _unaligned_filled(seed: int) -> np.ndarray:
    x = _unaligned(_SHARED)
    x[...] = np.random.default_rng(seed).standard_normal(_SHARED, dtype=np.float32)
    return x


def test_large_unaligned_arrays_are_copied_whole_on_every_path(flip_large: cx.Executable) -> None:
    x = _unaligned_filled(6)
    want = np.flip(x) * 2
    np.testing.assert_array_equal(flip_large.run([x])[0], want)
    out = _unaligned(_SHARED)
    assert flip_large.run([x], out=[out])[0] is out
    np.testing.assert_array_equal(out, want)
    executed = _unaligned(_SHARED)
    _benchmark.execute_loop(flip_large.handle, [x], [executed], 1)  # cyxla_execute
    np.testing.assert_array_equal(executed, want)
    bound_out = _unaligned(_SHARED)
    bound = flip_large.bind([x], [bound_out])
    for seed in (7, 8):  # the bound input's staging copy is refreshed at each call
        x[...] = _unaligned_filled(seed)
        bound()
        np.testing.assert_array_equal(bound_out, np.flip(x) * 2)


def test_large_unaligned_copies_from_threads_at_once(flip_large: cx.Executable) -> None:
    # One copy at a time is shared; the others are plain copies, all whole.
    inputs = [_unaligned_filled(10 + k) for k in range(4)]
    failures: list[str] = []
    barrier = threading.Barrier(len(inputs))

    def work(index: int) -> None:
        x = inputs[index]
        want = np.flip(x) * 2
        out = _unaligned(_SHARED)
        barrier.wait()
        for _ in range(10):
            if not np.array_equal(flip_large.run([x])[0], want):
                failures.append(f"thread {index}: run")
            flip_large.run([x], out=[out])
            if not np.array_equal(out, want):
                failures.append(f"thread {index}: run(out=)")

    _in_threads(work, len(inputs))
    assert failures == []


# ---------------------------------------------------------------- the handle


def _handles_read_at_once(executable: cx.Executable, threads: int) -> list[int]:
    """`executable.handle` as each of `threads` threads, released together, first read it."""
    barrier = threading.Barrier(threads)
    seen: list[int] = []

    def read() -> None:
        barrier.wait()
        seen.append(executable.handle)

    started = [threading.Thread(target=read) for _ in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return seen


def test_threads_reading_a_new_handle_at_once_all_get_the_one_live_handle(
    pair: cx.Executable,
) -> None:
    x = np.zeros((2, 3), np.float32)
    out = [np.empty((2, 3), np.float32), np.empty((), np.int32)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: widen any race
    try:
        for _ in range(100):
            fresh = cx.Executable(pair._native, pair.program)  # alive while its handle is used
            seen = _handles_read_at_once(fresh, 8)
            assert len(seen) == 8 and len(set(seen)) == 1, seen
            # The handle every thread got is the live one: native code can run with it.
            _benchmark.execute_loop(seen[0], [x], out, 1)
    finally:
        sys.setswitchinterval(interval)
