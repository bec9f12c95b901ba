"""Batches: lower_batched, compile_batched, BatchedExecutable.run and cyxla_execute_batch,
against jax.jit of the unbatched function applied point by point."""

from __future__ import annotations

import ctypes
import importlib
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import cyxla as cx
from cyxla import _core
from cyxla._program.program import encode_specs

from support import (
    INVALID_ARGUMENT,
    OK,
    PJRT,
    RELEASED,
    SPEC_SIZE_V1,
    TYPE_MISMATCH,
    Error,
    Input,
    ProgramSpec,
    compile_c,
    runtime,
    set_outputs,
    table,
)

F32, F64 = int(cx.ElementType.F32), int(cx.ElementType.F64)
SIZES = (4, 16)
# Below, at and above each size, and past the largest (split into calls of 16 and a rest).
COUNTS = [0, 1, 3, 4, 5, 15, 16, 17, 20, 31, 32, 33, 40]


def sin2(x: jax.Array) -> jax.Array:
    return jnp.sin(x) * 2


def mixed(x: jax.Array, w: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Two inputs and two outputs of other shapes and dtypes, a scalar among them."""
    return jnp.tanh(x @ w), jnp.sum(x) > 0


MIXED_ARGS = [jax.ShapeDtypeStruct((3,), jnp.float32), jax.ShapeDtypeStruct((3, 2), jnp.float32)]


@pytest.fixture(scope="module")
def batched() -> cx.BatchedExecutable:
    program = cx.lower_batched(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)], SIZES)
    return cx.compile_batched(program)[0]


@pytest.fixture(scope="module")
def batched_mixed() -> cx.BatchedExecutable:
    return cx.compile_batched(cx.lower_batched(mixed, MIXED_ARGS, (16, 4)))[0]


def points(n: int, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, *shape)).astype(np.float32)


def pointwise(fn: Callable[..., Any], *arrays: np.ndarray) -> list[np.ndarray]:
    """The oracle: jax.jit of the unbatched function, one point at a time, stacked."""
    jitted = jax.jit(fn)
    results = [jax.tree.leaves(jitted(*point)) for point in zip(*arrays, strict=True)]
    return [np.stack([np.asarray(r[j]) for r in results]) for j in range(len(results[0]))]


# ------------------------------------------------------------------------ lowering


def test_lower_batched_describes_one_point_and_sorts_the_sizes() -> None:
    program = cx.lower_batched(mixed, MIXED_ARGS, (16, 4, 16))
    assert program.batch_sizes == (4, 16)
    assert program.inputs == (cx.TensorSpec((3,), np.float32), cx.TensorSpec((3, 2), np.float32))
    assert program.outputs == (cx.TensorSpec((2,), np.float32), cx.TensorSpec((), np.bool_))
    assert program.name == "mixed"
    for size, lowered in zip(program.batch_sizes, program.programs, strict=True):
        assert [s.shape for s in lowered.inputs] == [(size, 3), (size, 3, 2)]
        assert [s.shape for s in lowered.outputs] == [(size, 2), (size,)]


def test_lower_batched_takes_pytrees_of_points() -> None:
    def f(p: dict[str, Any]) -> jax.Array:
        return p["a"] * p["b"][0] + p["b"][1]

    point = jax.ShapeDtypeStruct((2,), jnp.float32)
    scalar = jax.ShapeDtypeStruct((), jnp.float32)
    executable = cx.compile_batched(
        cx.lower_batched(f, [{"a": point, "b": (point, scalar)}], (4,))
    )[0]
    a, b, c = points(6, (2,), seed=1), points(6, (2,), seed=2), points(6, (), seed=3)
    (y,) = executable.run([a, b, c])  # the leaves, in jax.tree order
    expected = pointwise(lambda a, b, c: f({"a": a, "b": (b, c)}), a, b, c)[0]
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_a_batched_programs_output_tree_rebuilds_the_result() -> None:
    def split(x: jax.Array) -> dict[str, Any]:
        return {"sum": x.sum(), "parts": (x[0], x[1:])}

    program = cx.lower_batched(split, [jax.ShapeDtypeStruct((3,), jnp.float32)], (4, 8))
    assert program.output_tree == jax.tree.structure(split(jnp.zeros(3)))
    x = points(5, (3,))
    result = jax.tree.unflatten(program.output_tree, cx.compile_batched(program)[0].run([x]))
    expected = jax.jit(jax.vmap(split))(x)
    assert jax.tree.structure(result) == jax.tree.structure(expected)
    for got, want in zip(jax.tree.leaves(result), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize(
    ("sizes", "error", "message"),
    [
        ((), cx.InvalidArgumentError, "at least one size"),
        ((4, 0), cx.InvalidArgumentError, "each >= 1"),
        (16, TypeError, "must be a sequence of ints"),
        ("16", TypeError, "must be a sequence of ints"),
        ((4.0,), TypeError, "must be ints"),
    ],
)
def test_lower_batched_refuses_bad_sizes(sizes: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        cx.lower_batched(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)], sizes)


def test_lower_batched_refuses_a_function_without_inputs() -> None:
    with pytest.raises(cx.InvalidArgumentError, match="at least one array"):
        cx.lower_batched(lambda: jnp.ones(3), [], (4,))


def test_compile_batched_refuses_a_plain_program() -> None:
    program = cx.lower(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    with pytest.raises(TypeError, match=r"must be a cyxla\.BatchedProgram"):
        cx.compile_batched(program)  # type: ignore[arg-type]


def test_a_batched_program_must_pair_sizes_and_programs() -> None:
    program = cx.lower_batched(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)], (2, 8))
    both = program.programs
    for sizes, programs in [((2,), both), ((8, 2), both), ((2, 2), both), ((), ())]:
        with pytest.raises(cx.InvalidArgumentError, match="distinct and ascending"):
            cx.BatchedProgram(batch_sizes=sizes, programs=programs)


def test_compile_batched_refuses_programs_that_are_not_one_function_batched() -> None:
    sin_at_2 = cx.lower_batched(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)], (2,))
    cos_at_8 = cx.lower_batched(jnp.cos, [jax.ShapeDtypeStruct((4,), jnp.float32)], (8,))
    mixed_up = cx.BatchedProgram((2, 8), (*sin_at_2.programs, *cos_at_8.programs))
    with pytest.raises(
        cx.InvalidArgumentError, match=r"batch size 8 evaluates points \(f32\[4\]\)"
    ):
        cx.compile_batched(mixed_up)
    unbatched = cx.lower(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    with pytest.raises(cx.InvalidArgumentError, match="no leading batch dimension of 2"):
        cx.compile_batched(cx.BatchedProgram((2,), (unbatched,)))
    constant = cx.lower(lambda: jnp.ones((2, 3)), [])
    with pytest.raises(cx.InvalidArgumentError, match="takes at least one input"):
        cx.compile_batched(cx.BatchedProgram((2,), (constant,)))


@pytest.mark.parametrize(
    ("sizes", "count", "message"),
    [
        ((), 0, "one executable per batch size, given 0 executables and 0 sizes"),
        ((2, 8), 1, "one executable per batch size, given 1 executables and 2 sizes"),
        ((2, 2), 2, "distinct and at least 1, given 2 twice"),
        ((0,), 1, "distinct and at least 1, given 0$"),
    ],
)
def test_the_core_refuses_sizes_that_do_not_pair_or_repeat(
    sizes: tuple[int, ...], count: int, message: str
) -> None:
    """BatchedProgram refuses these first; the core's constructor behind it refuses them
    itself instead of indexing past its executables."""
    program = cx.lower_batched(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)], (2,))
    native = cx.compile_program(program.programs[0])[0]._native
    with pytest.raises(cx.InvalidArgumentError, match=message):
        _core.BatchedExecutable.create([native] * count, list(sizes))


def test_the_core_takes_the_points_that_the_program_describes(
    batched_mixed: cx.BatchedExecutable,
) -> None:
    """The core strips the batch dimension off each size's specs itself; its points are
    the program's (the C API's spec reports them)."""
    native = batched_mixed._native
    assert native.inputs == encode_specs(batched_mixed.inputs)
    assert native.outputs == encode_specs(batched_mixed.outputs)
    assert native.outputs == [(F32, [2]), (int(cx.ElementType.PRED), [])]
    assert native.batch_sizes == [4, 16]


def test_compile_batched_uses_the_disk_cache() -> None:
    program = cx.lower_batched(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)], (2, 8))
    first = cx.compile_batched(program)[1]
    again, statistics = cx.compile_batched(program)
    assert not first.cache_hit and statistics.cache_hit
    (y,) = again.run([points(9, (3,))])
    np.testing.assert_array_equal(y, pointwise(sin2, points(9, (3,)))[0])


# ------------------------------------------------------------------- run from Python


@pytest.mark.parametrize("n", COUNTS)
def test_run_matches_jax_point_by_point(batched: cx.BatchedExecutable, n: int) -> None:
    x = points(n, (3,), seed=n)
    (y,) = batched.run([x])
    assert y.shape == (n, 3) and y.dtype == np.float32
    if n:
        np.testing.assert_array_equal(y, pointwise(sin2, x)[0])


@pytest.mark.parametrize("n", [1, 3, 4, 7, 16, 21, 37])
def test_run_with_two_inputs_and_outputs(batched_mixed: cx.BatchedExecutable, n: int) -> None:
    x, w = points(n, (3,), seed=1), points(n, (3, 2), seed=2)
    y, positive = batched_mixed.run([x, w])
    expected_y, expected_positive = pointwise(mixed, x, w)
    np.testing.assert_allclose(y, expected_y, rtol=2e-6, atol=1e-6)
    np.testing.assert_array_equal(positive, expected_positive)
    assert positive.dtype == np.bool_ and positive.shape == (n,)


def test_run_with_more_arrays_than_the_core_keeps_inline() -> None:
    """17 inputs: past the 16 argument slots the core holds inline, its buffer views and
    pointers live on the heap."""

    def weighted(*xs: jax.Array) -> jax.Array:
        return sum(float(k + 1) * jnp.cos(x) for k, x in enumerate(xs))

    program = cx.lower_batched(weighted, [jax.ShapeDtypeStruct((2,), jnp.float32)] * 17, (4,))
    arrays = [points(6, (2,), seed=k) for k in range(17)]
    (y,) = cx.compile_batched(program)[0].run(arrays)
    np.testing.assert_allclose(y, pointwise(weighted, *arrays)[0], rtol=1e-6, atol=1e-5)


def test_run_casts_and_reads_strided_inputs(batched: cx.BatchedExecutable) -> None:
    x = points(10, (6,))[:, ::2].astype(np.float64)  # strided and float64
    (y,) = batched.run([x])
    np.testing.assert_array_equal(y, pointwise(sin2, x.astype(np.float32))[0])


def test_run_carries_bfloat16() -> None:
    bf16 = np.dtype(ml_dtypes.bfloat16)
    program = cx.lower_batched(lambda x: x * 2 + 1, [jax.ShapeDtypeStruct((2,), bf16)], (4,))
    executable = cx.compile_batched(program)[0]
    x = np.arange(10, dtype=np.float32).reshape(5, 2).astype(bf16)
    (y,) = executable.run([x])
    assert y.dtype == bf16
    np.testing.assert_array_equal(y, np.asarray(jax.jit(jax.vmap(lambda x: x * 2 + 1))(x)))


@pytest.mark.parametrize(
    ("arrays", "error", "message"),
    [
        ([], cx.InvalidArgumentError, "takes 1 arrays, given 0"),
        ([np.zeros(3, np.float32)], cx.InvalidArgumentError, r"expected shape \(n, 3\)"),
        ([np.zeros((2, 4), np.float32)], cx.InvalidArgumentError, r"given shape \(2, 4\)"),
        ([np.zeros((2, 3), np.complex64)], cx.DtypeError, "does not cast to float32"),
        (np.zeros((2, 3), np.float32), TypeError, "must be a sequence"),
    ],
)
def test_run_refuses_bad_arguments(
    batched: cx.BatchedExecutable, arrays: Any, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        batched.run(arrays)


def test_run_refuses_inputs_of_different_counts(batched_mixed: cx.BatchedExecutable) -> None:
    with pytest.raises(
        cx.InvalidArgumentError, match="argument 1 holds 4 points, argument 0 holds 5"
    ):
        batched_mixed.run([points(5, (3,)), points(4, (3, 2))])


def test_repr_names_the_sizes(batched: cx.BatchedExecutable) -> None:
    assert "at batch sizes (4, 16)" in repr(batched)
    assert batched.batch_sizes == SIZES and batched.inputs == (cx.TensorSpec((3,), np.float32),)


# ------------------------------------------------------------------- the C API


def get_spec(handle: int, struct_size: int = ctypes.sizeof(ProgramSpec)) -> ProgramSpec:
    spec, error = ProgramSpec(), Error()
    spec.struct_size = struct_size
    assert table().get_spec(handle, ctypes.byref(spec), ctypes.byref(error)) == OK, error.message
    return spec


def execute_batch(
    spec: ProgramSpec | None,
    n: int,
    inputs: list[Input],
    outputs: list[int | None],
    null: str = "",
) -> Error:
    """cyxla_execute_batch; `null` ("inputs" or "outputs") passes that array as NULL
    (its count stays len(inputs) or len(outputs))."""
    error = Error()
    in_array = (Input * max(1, len(inputs)))(*inputs)
    out_array = (ctypes.c_void_p * max(1, len(outputs)))(*outputs)
    status = table().execute_batch(
        ctypes.byref(spec) if spec is not None else None,
        n,
        None if null == "inputs" else in_array,
        len(inputs),
        None if null == "outputs" else out_array,
        len(outputs),
        ctypes.byref(error),
    )
    assert status == error.status
    return error


def as_input(array: np.ndarray, element_type: int = F32) -> Input:
    return Input(array.ctypes.data, element_type, array.nbytes)


def test_spec_of_a_batched_executable(batched: cx.BatchedExecutable) -> None:
    spec = get_spec(batched.handle)
    try:
        assert (spec.num_inputs, spec.num_outputs) == (1, 1)
        assert spec.input_ranks[0] == 1 and spec.input_dims[0][0] == 3  # one point
        assert spec.input_bytes[0] == spec.output_bytes[0] == 12
        assert [spec.batch_sizes[k] for k in range(spec.num_batch_sizes)] == list(SIZES)
    finally:
        table().release_spec(ctypes.byref(spec))


def test_spec_of_a_plain_executable_has_no_batch_sizes() -> None:
    executable = cx.compile_program(cx.lower(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)]))[0]
    spec = get_spec(executable.handle)
    assert spec.num_batch_sizes == 0 and not spec.batch_sizes
    table().release_spec(ctypes.byref(spec))


def test_a_version_1_spec_is_filled_up_to_its_size(batched: cx.BatchedExecutable) -> None:
    # A caller built against ABI version 1: its struct ends before the batch sizes,
    # which are left as they were.
    spec = ProgramSpec()
    spec.num_batch_sizes = 77
    spec.struct_size = SPEC_SIZE_V1
    error = Error()
    assert table().get_spec(batched.handle, ctypes.byref(spec), ctypes.byref(error)) == OK
    assert spec.num_batch_sizes == 77 and spec.input_bytes[0] == 12
    x, y = points(5, (3,)), np.empty((5, 3), np.float32)
    assert execute_batch(spec, 5, [as_input(x)], [y.ctypes.data]).status == OK
    np.testing.assert_array_equal(y, pointwise(sin2, x)[0])
    table().release_spec(ctypes.byref(spec))


@pytest.mark.parametrize("n", COUNTS)
@pytest.mark.parametrize("offset", [0, 4], ids=["aligned", "unaligned"])
def test_execute_batch_writes_n_points_and_nothing_past_them(
    batched: cx.BatchedExecutable, n: int, offset: int
) -> None:
    # The inputs at an aligned address or 4 bytes past one (staged by the core); the
    # output followed by a sentinel: the padding's results never reach the caller.
    memory = np.zeros(3 * n + 16 + 1, np.float32)
    start = (-memory.ctypes.data % 64 + offset) // 4
    x = memory[start : start + 3 * n].reshape(n, 3)
    x[...] = points(n, (3,), seed=n)
    out = np.full((n + 20, 3), 7.0, np.float32)
    spec = get_spec(batched.handle)
    try:
        error = execute_batch(spec, n, [as_input(x)], [out.ctypes.data])
    finally:
        table().release_spec(ctypes.byref(spec))
    assert error.status == OK, error.message
    if n:
        np.testing.assert_array_equal(out[:n], pointwise(sin2, x)[0])
    np.testing.assert_array_equal(out[n:], 7.0)


def test_execute_batch_of_zero_points_takes_null_pointers(batched: cx.BatchedExecutable) -> None:
    spec = get_spec(batched.handle)
    error = execute_batch(spec, 0, [Input(None, F32, 0)], [None])
    table().release_spec(ctypes.byref(spec))
    assert error.status == OK, error.message


@pytest.mark.parametrize(
    ("case", "status", "message"),
    [
        ("null spec", INVALID_ARGUMENT, b"execute_batch: spec is NULL"),
        ("two inputs", INVALID_ARGUMENT, b"takes 1 inputs and 1 outputs, given 2 and 1"),
        ("f64 input", TYPE_MISMATCH, b"input 0 has element type f64, the program takes f32"),
        ("one point short", INVALID_ARGUMENT, b"input 0 has 48 bytes, 5 points of 12 bytes are 60"),
        ("one point's bytes", INVALID_ARGUMENT, b"input 0 has 12 bytes, 5 points"),
        ("overflow", INVALID_ARGUMENT, b"overflow size_t"),
        ("null data", INVALID_ARGUMENT, b"input 0 has NULL data"),
        ("null output", INVALID_ARGUMENT, b"output 0 is NULL"),
        ("short struct", INVALID_ARGUMENT, b"spec->struct_size is 16"),
        ("null inputs", INVALID_ARGUMENT, b"execute_batch: inputs or outputs is NULL"),
        ("null outputs", INVALID_ARGUMENT, b"execute_batch: inputs or outputs is NULL"),
    ],
)
def test_execute_batch_refuses_bad_arguments(
    batched: cx.BatchedExecutable, case: str, status: int, message: bytes
) -> None:
    n = 2**62 if case == "overflow" else 5
    x = points(5, (3,))
    out = np.full((5, 3), 7.0, np.float32)
    inputs, outputs = [as_input(x)], [out.ctypes.data]
    spec = get_spec(batched.handle)
    if case == "two inputs":
        inputs = inputs * 2
    elif case == "f64 input":
        inputs = [Input(x.ctypes.data, F64, 60)]
    elif case == "one point short":
        inputs = [Input(x.ctypes.data, F32, 48)]
    elif case == "one point's bytes":
        inputs = [Input(x.ctypes.data, F32, 12)]
    elif case == "null data":
        inputs = [Input(None, F32, 60)]
    elif case == "null output":
        outputs = [None]
    held = spec.struct_size
    if case == "short struct":
        spec.struct_size = 16
    try:
        null = case.removeprefix("null ") if case in ("null inputs", "null outputs") else ""
        error = execute_batch(None if case == "null spec" else spec, n, inputs, outputs, null)
    finally:
        spec.struct_size = held
        table().release_spec(ctypes.byref(spec))
    assert error.status == status
    assert message in error.message, error.message
    np.testing.assert_array_equal(out, 7.0)  # nothing ran


def test_execute_batch_refuses_outputs_whose_points_overflow() -> None:
    """The inputs' sizes bound n, but not the outputs': 2**60 points of a 4-byte input
    are 2**62 bytes, of a 64-byte output more than size_t holds."""
    program = cx.lower_batched(
        lambda x: jnp.tile(x, 16), [jax.ShapeDtypeStruct((1,), jnp.float32)], (2,)
    )
    executable = cx.compile_batched(program)[0]
    x, y = np.zeros(4, np.float32), np.full(16, 7.0, np.float32)
    spec = get_spec(executable.handle)
    try:
        error = execute_batch(spec, 2**60, [Input(x.ctypes.data, F32, 2**62)], [y.ctypes.data])
    finally:
        table().release_spec(ctypes.byref(spec))
    assert error.status == INVALID_ARGUMENT
    assert error.message == (
        b"execute_batch: 1152921504606846976 points of output 0 (64 bytes each) overflow size_t"
    )
    np.testing.assert_array_equal(y, 7.0)  # nothing ran


def test_execute_batch_reports_a_failing_plugin_and_works_after_it(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    """An error of the plugin inside execute_batch is a status and a message, not an
    exception unwinding into C. The scripted plugin's programs copy input 0 into their
    output, so the points it evaluates are known."""
    set_outputs(control, [F32], [[2, 3]])
    native = runtime(scripted).compile(b"x", b"", [(F32, [2, 3])])
    handle = _core.NativeHandle(_core.BatchedExecutable.create([native], [2]))
    spec = get_spec(handle.value)
    x, y = points(3, (3,)), np.zeros((3, 3), np.float32)
    try:
        control.fake_fail(b"PJRT_LoadedExecutable_Execute")
        error = execute_batch(spec, 3, [as_input(x)], [y.ctypes.data])
        assert error.status == PJRT
        assert error.message == (
            b"execute_batch: PJRT_LoadedExecutable_Execute failed: "
            b"scripted failure of PJRT_LoadedExecutable_Execute"
        )
        control.fake_fail(b"")
        assert execute_batch(spec, 3, [as_input(x)], [y.ctypes.data]).status == OK
    finally:
        table().release_spec(ctypes.byref(spec))
    np.testing.assert_array_equal(y, x)


def test_execute_and_execute_batch_refuse_each_others_specs(
    batched: cx.BatchedExecutable,
) -> None:
    plain = cx.compile_program(cx.lower(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)]))[0]
    x, y = points(1, (3,)), np.full((1, 3), 7.0, np.float32)
    plain_spec, batched_spec = get_spec(plain.handle), get_spec(batched.handle)
    try:
        error = execute_batch(plain_spec, 1, [as_input(x)], [y.ctypes.data])
        assert error.status == INVALID_ARGUMENT
        assert b"not batched" in error.message
        error = Error()
        status = table().execute(
            ctypes.byref(batched_spec),
            (Input * 1)(as_input(x)),
            1,
            (ctypes.c_void_p * 1)(y.ctypes.data),
            1,
            ctypes.byref(error),
        )
        assert status == INVALID_ARGUMENT
        assert b"batched executable: call execute_batch" in error.message
    finally:
        table().release_spec(ctypes.byref(plain_spec))
        table().release_spec(ctypes.byref(batched_spec))
    np.testing.assert_array_equal(y, 7.0)


def test_a_released_batched_spec_is_refused(batched: cx.BatchedExecutable) -> None:
    spec = get_spec(batched.handle)
    table().release_spec(ctypes.byref(spec))
    x, y = points(2, (3,)), np.empty((2, 3), np.float32)
    error = execute_batch(spec, 2, [as_input(x)], [y.ctypes.data])
    assert error.status == RELEASED


def test_a_spec_keeps_the_batched_executable_alive() -> None:
    program = cx.lower_batched(sin2, [jax.ShapeDtypeStruct((3,), jnp.float32)], (2,))
    executable = cx.compile_batched(program)[0]
    handle = executable.handle
    spec = get_spec(handle)
    del executable
    x, y = points(3, (3,)), np.empty((3, 3), np.float32)
    assert execute_batch(spec, 3, [as_input(x)], [y.ctypes.data]).status == OK
    np.testing.assert_array_equal(y, pointwise(sin2, x)[0])
    table().release_spec(ctypes.byref(spec))
    error = Error()
    spec = ProgramSpec(struct_size=ctypes.sizeof(ProgramSpec))
    assert table().get_spec(handle, ctypes.byref(spec), ctypes.byref(error)) == RELEASED


def test_threads_evaluate_batches_of_every_size_at_once(batched: cx.BatchedExecutable) -> None:
    """Eight threads (ctypes drops the GIL during the call) each evaluate batches of
    sizes that take every path: exact, padded, split. Each thread pads in its own
    scratch memory, so results never mix."""
    spec = get_spec(batched.handle)
    table_in = points(97, (3,), seed=3)
    expected = pointwise(sin2, table_in)[0]
    wrong: list[str] = []

    def work(t: int) -> None:
        for call in range(60):
            n = COUNTS[(t + call) % len(COUNTS)]
            first = (t * 13 + call) % (97 - n + 1)
            x = np.ascontiguousarray(table_in[first : first + n])
            y = np.full((n + 1, 3), 7.0, np.float32)
            error = execute_batch(spec, n, [as_input(x)], [y.ctypes.data])
            if error.status != OK:
                wrong.append(error.message.decode())
            elif not (np.array_equal(y[:n], expected[first : first + n]) and (y[n] == 7).all()):
                wrong.append(f"thread {t}, call {call}: {n} points from {first}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    table().release_spec(ctypes.byref(spec))
    assert not wrong, wrong[:5]


def test_a_c_caller_evaluates_every_count_of_points(
    batched: cx.BatchedExecutable, tmp_path: Path
) -> None:
    source = Path(__file__).parent / "native" / "batch_calls.c"
    library = ctypes.CDLL(str(compile_c(source, tmp_path / "libbatch_calls.so", shared=True)))
    max_n = 2 * SIZES[-1] + SIZES[0] + 1  # through two splits and every padding
    x = points(max_n, (3,), seed=5)
    expected = np.ascontiguousarray(pointwise(sin2, x)[0])
    sizes = (ctypes.c_size_t * len(SIZES))(*SIZES)
    why = ctypes.create_string_buffer(512)
    line = library.check_batches(
        ctypes.c_void_p(ctypes.addressof(table())),
        ctypes.c_uint64(batched.handle),
        sizes,
        ctypes.c_size_t(len(SIZES)),
        x.ctypes.data_as(ctypes.c_void_p),
        expected.ctypes.data_as(ctypes.c_void_p),
        ctypes.c_size_t(max_n),
        why,
        ctypes.c_size_t(512),
    )
    assert line == 0, why.value


def test_a_cython_caller_through_the_pxd(batched: cx.BatchedExecutable, tmp_path: Path) -> None:
    """The Cython declarations agree with the header: a module that uses them is cythonized
    and compiled against cyxla.h, and evaluates batches."""
    source = tmp_path / "batch_cython.pyx"
    source.write_text((Path(__file__).parent / "native" / "batch_cython.pyx").read_text())
    headers, pxd = cx.get_include()
    subprocess.run(
        [sys.executable, "-m", "cython", "-I", pxd, str(source), "-o", str(tmp_path / "m.c")],
        check=True,
        capture_output=True,
        timeout=300,
    )
    module = tmp_path / f"batch_cython{sysconfig.get_config_var('EXT_SUFFIX')}"
    command = ["cc", "-shared", "-fPIC", "-O0", "-I", sysconfig.get_paths()["include"]]
    command += ["-I", headers, str(tmp_path / "m.c"), "-o", str(module)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        batch_cython = importlib.import_module("batch_cython")
    finally:
        sys.path.remove(str(tmp_path))
    assert batch_cython.batch_sizes(batched.handle) == list(SIZES)
    x = points(21, (3,))
    y = np.full((21, 3), 7.0, np.float32)
    x_bytes, y_bytes = x.view(np.uint8).ravel(), y.view(np.uint8).ravel()
    batch_cython.evaluate(batched.handle, x_bytes, y_bytes)
    np.testing.assert_array_equal(y, pointwise(sin2, x)[0])
    with pytest.raises(ValueError, match="input 0 has 8 bytes, 0 points of 12 bytes are 0"):
        batch_cython.evaluate(batched.handle, x_bytes[:8], y_bytes)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("two inputs", "takes 1 inputs and 1 outputs, given 2 and 1"),
        ("strided input", "input 0 must be a C-contiguous array"),
        ("read-only output", "output 0 must be a C-contiguous writable array"),
        ("short input", "input 0 has 24 bytes, the points need 60"),
        # 12 * (2^62 + 5) wraps to the 60 bytes that 5 points hold (issue 20).
        ("points past 2^64", f"{(1 << 62) + 5} points of input 0 \\(12 bytes each\\) are more"),
    ],
)
def test_the_internal_batch_call_checks_its_buffers(
    batched: cx.BatchedExecutable, case: str, message: str
) -> None:
    """BatchedExecutable.run checks first; the core's entry behind it refuses bad buffers
    itself instead of reading past them."""
    x = points(5, (3,))
    y = np.zeros((5, 3), np.float32)
    inputs, outputs = [x], [y]
    if case == "two inputs":
        inputs = [x, x]
    elif case == "strided input":
        inputs = [np.zeros((5, 6), np.float32)[:, ::2]]
    elif case == "read-only output":
        y.flags.writeable = False
    elif case == "short input":
        inputs = [x[:2]]
    n = (1 << 62) + 5 if case == "points past 2^64" else 5
    with pytest.raises(cx.InvalidArgumentError, match=message):
        batched._native._execute(n, inputs, outputs)
    np.testing.assert_array_equal(y, 0)
