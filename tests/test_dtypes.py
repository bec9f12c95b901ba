"""Every dtype cyxla carries, with and without jax_enable_x64, against jax.jit and NumPy.

Values cross the boundary bit for bit (an identity program), and single arithmetic
operations are correctly rounded IEEE operations in both XLA builds, so they are
compared exactly. For float16 and bfloat16 that holds too: when XLA computes them in
float32 and rounds back, the double rounding of one +, - or * is innocuous (float32
carries more than 2p + 2 bits for both). Sums are compared within the standard bound
for summation in any order, n * eps * sum(|x|); complex products within
4 * eps * |x| * |y|, since either build may or may not fuse them into FMAs.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import cyxla as cx
from cyxla import _core

from support import (
    F8E5M2,
    F32,
    OK,
    TYPE_MISMATCH,
    Error,
    Input,
    ProgramSpec,
    installed_header,
    runtime,
    set_outputs,
    table,
)

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
#: The dtypes the spec lists: bool, 8 to 64-bit integers, float16, bfloat16, float32,
#: float64, complex64 and complex128.
DTYPES: list[np.dtype] = [
    np.dtype(name)
    for name in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
] + [BFLOAT16]
#: What JAX lowers each 64-bit dtype to when jax_enable_x64 is off.
WITHOUT_X64 = {
    np.dtype("int64"): np.dtype("int32"),
    np.dtype("uint64"): np.dtype("uint32"),
    np.dtype("float64"): np.dtype("float32"),
    np.dtype("complex128"): np.dtype("complex64"),
}
SHAPE = (4, 4)
X64_AT_IMPORT = bool(jax.config.jax_enable_x64)
N = SHAPE[0] * SHAPE[1]


def ids(dtype: np.dtype) -> str:
    return dtype.name


@pytest.fixture(params=[False, True], ids=["no_x64", "x64"])
def x64_mode(request: pytest.FixtureRequest) -> Iterator[bool]:
    with jax.enable_x64(request.param):
        yield request.param


def lowered_dtype(dtype: np.dtype, x64: bool) -> np.dtype:
    return dtype if x64 else WITHOUT_X64.get(dtype, dtype)


def is_float(dtype: np.dtype) -> bool:
    return dtype == BFLOAT16 or dtype.kind in "fc"


def component(dtype: np.dtype) -> np.dtype:
    """The real dtype of a complex dtype's parts; other dtypes themselves."""
    return np.dtype(f"f{dtype.itemsize // 2}") if dtype.kind == "c" else dtype


def eps(dtype: np.dtype) -> float:
    return float(ml_dtypes.finfo(component(dtype)).eps)


# ------------------------------------------------------------------------ samples


def sample(dtype: np.dtype, seed: int, *, special: bool) -> np.ndarray:
    """SHAPE values of `dtype`: random ones, and with `special` the extremes (integer
    limits; nan, infinities, -0.0, the largest, smallest normal and subnormal floats)."""
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, SHAPE).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, SHAPE, dtype=dtype, endpoint=True)
        if special:
            values.flat[:4] = [info.min, info.max, 0, 1]
        return values
    values = (rng.standard_normal(N) * 10).astype(component(dtype))
    if dtype.kind == "c":
        values = values + 1j * (rng.standard_normal(N) * 10).astype(component(dtype))
    values = values.astype(dtype)
    if special:
        info = ml_dtypes.finfo(component(dtype))
        extremes = [np.nan, np.inf, -np.inf, -0.0, info.max, info.tiny, info.smallest_subnormal]
        values[: len(extremes)] = np.array(extremes, component(dtype)).astype(dtype)
        if dtype.kind == "c":
            values[len(extremes)] = complex(-0.0, float(info.max))
    return values.reshape(SHAPE)


def bits(array: np.ndarray) -> np.ndarray:
    """The raw bits of `array`, as unsigned integers of its item size (of each half of a
    complex number)."""
    return np.ascontiguousarray(array).view(f"u{component(array.dtype).itemsize}")


# ------------------------------------------------------------------------ programs


def numeric(x: jax.Array, y: jax.Array) -> tuple[jax.Array, ...]:
    return x, x + y, x - y, x * y, x == y, jnp.sum(x)


def boolean(x: jax.Array, y: jax.Array) -> tuple[jax.Array, ...]:
    return x, x & y, x | y, x ^ y, ~x, jnp.sum(x)


def function_for(dtype: np.dtype) -> Callable[..., Any]:
    return boolean if dtype == np.bool_ else numeric


_compiled: dict[tuple[str, bool], tuple[cx.Program, cx.Executable]] = {}


def compiled(dtype: np.dtype, x64: bool) -> tuple[cx.Program, cx.Executable]:
    """The program of `function_for(dtype)`, lowered in the current x64 mode (cached)."""
    assert bool(jax.config.jax_enable_x64) == x64
    key = (dtype.name, x64)
    if key not in _compiled:
        spec = jax.ShapeDtypeStruct(SHAPE, dtype)
        program = cx.lower(function_for(dtype), [spec, spec])
        _compiled[key] = (program, cx.compile_program(program)[0])
    return _compiled[key]


# ------------------------------------------------------------------------ tests


def test_supported_dtypes_are_the_documented_ones() -> None:
    assert len(cx.SUPPORTED_DTYPES) == len(DTYPES)
    assert set(cx.SUPPORTED_DTYPES) == set(DTYPES)


def test_element_types_follow_the_pjrt_numbering() -> None:
    """cyxla.ElementType agrees with PJRT_Buffer_Type in the header native code uses
    (cyxla/element_type.h's list: X(NAME, value, bytes, "name"))."""
    text = installed_header().read_text()
    listed = {
        name: (int(value), int(size), short)
        for name, value, size, short in re.findall(
            r"^\s*X\((\w+), (\d+), (\d+), \"(\w+)\"\)", text, re.M
        )
    }
    assert list(listed.values())[:2] == [(0, 0, "invalid"), (1, 1, "pred")]
    assert len(cx.ElementType) == len(DTYPES)
    for member in cx.ElementType:
        assert listed[member.name][0] == member.value, member
    # Cython's declarations (cimport cyxla._pjrt) name the same types, from that header.
    pxd = (Path(cx.__file__).resolve().parent / "_pjrt.pxd").read_text()
    assert 'cdef extern from "cyxla/element_type.h"' in pxd
    declared = re.findall(r"^\s+PJRT_Buffer_Type_(\w+)$", pxd, re.M)
    assert declared == [n for n, (_, size, _) in listed.items() if size or n == "INVALID"]


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_program_dtypes(dtype: np.dtype, x64_mode: bool) -> None:
    """Without x64, 64-bit inputs lower to their 32-bit kin; with it, they stay."""
    program, executable = compiled(dtype, x64_mode)
    expected = lowered_dtype(dtype, x64_mode)
    assert [s.dtype for s in program.inputs] == [expected, expected]
    assert program.outputs[0].dtype == expected
    reference = jax.eval_shape(function_for(dtype), *[jax.ShapeDtypeStruct(SHAPE, dtype)] * 2)
    assert [s.dtype for s in program.outputs] == [np.dtype(r.dtype) for r in reference]
    # The core sees the same element types as the program records.
    types = [cx.ElementType(t) for t, _ in executable._native.inputs]
    assert types == [s.element_type for s in program.inputs]
    assert [cx.ElementType(t) for t, _ in executable._native.outputs] == [
        s.element_type for s in program.outputs
    ]


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_values_cross_bit_for_bit(dtype: np.dtype, x64_mode: bool) -> None:
    _, executable = compiled(dtype, x64_mode)
    carried = lowered_dtype(dtype, x64_mode)
    x = sample(carried, 1, special=True)
    y = sample(carried, 2, special=False)
    outputs = executable.run([x.astype(dtype), y.astype(dtype)])
    assert outputs[0].dtype == carried
    np.testing.assert_array_equal(bits(outputs[0]), bits(x))


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_arithmetic_matches_jit(dtype: np.dtype, x64_mode: bool) -> None:
    """Run with arrays of `dtype` itself: without x64, 64-bit arrays are cast (same_kind)
    to the 32-bit inputs, as jax.jit casts them too."""
    _, executable = compiled(dtype, x64_mode)
    carried = lowered_dtype(dtype, x64_mode)
    x = sample(carried, 3, special=False).astype(dtype)
    y = sample(carried, 4, special=False).astype(dtype)
    ours = executable.run([x, y])
    theirs = [np.asarray(t) for t in jax.jit(function_for(dtype))(x, y)]
    assert [o.dtype for o in ours] == [t.dtype for t in theirs]
    assert [o.shape for o in ours] == [t.shape for t in theirs]
    *elementwise, total = ours
    *elementwise_ref, total_ref = theirs
    for index, (mine, reference) in enumerate(zip(elementwise, elementwise_ref, strict=True)):
        if dtype.kind == "c" and index == 3:  # the complex product
            bound = 4 * eps(carried) * np.abs(x.astype(carried)) * np.abs(y.astype(carried))
            assert np.all(np.abs(mine - reference) <= bound)
        else:
            np.testing.assert_array_equal(bits(mine), bits(reference), err_msg=f"output {index}")
    if is_float(carried):
        magnitude = float(np.sum(np.abs(x.astype(carried).astype(np.complex128))))
        np.testing.assert_allclose(
            total.astype(np.complex128),
            total_ref.astype(np.complex128),
            rtol=0,
            atol=N * eps(carried) * magnitude,
        )
    else:
        assert total == total_ref


def test_arithmetic_is_not_vacuous() -> None:
    """The samples give distinct sums, products and differences, so the exact
    comparisons above compare real arithmetic."""
    for dtype in (np.dtype("int8"), np.dtype("float16"), BFLOAT16, np.dtype("complex64")):
        x, y = sample(dtype, 3, special=False), sample(dtype, 4, special=False)
        assert not np.array_equal(x + y, x * y)
        assert len(np.unique(bits(x))) > N // 2


def test_bfloat16_results_are_bfloat16_arrays() -> None:
    _, executable = compiled(BFLOAT16, bool(jax.config.jax_enable_x64))
    x = np.array([[1.5, -2.0, 3.25, 0.0]] * 4, BFLOAT16)
    outputs = executable.run([x, x])
    assert all(o.dtype in (BFLOAT16, np.dtype(bool)) for o in outputs[:5])
    np.testing.assert_array_equal(outputs[1].astype(np.float32), x.astype(np.float32) * 2)
    np.testing.assert_array_equal(outputs[3].astype(np.float32), x.astype(np.float32) ** 2)


# ------------------------------------------------------------------------ element types in the core


@pytest.mark.parametrize("element_type", [F8E5M2, 999], ids=["f8e5m2", "no-such-type"])
def test_unsupported_input_type(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL, element_type: int
) -> None:
    with pytest.raises(cx.DtypeError) as caught:
        runtime(scripted).compile(b"x", b"", [(F32, [3]), (element_type, [2])])
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


# ------------------------------------------------------------------------ x64 switching


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_x64_switches_lowering_within_a_process(x64: None) -> None:
    def double(v: jax.Array) -> jax.Array:
        return v * 2

    spec = jax.ShapeDtypeStruct((3,), np.float64)
    wide = cx.lower(double, [spec])
    with jax.enable_x64(False):
        narrow = cx.lower(double, [spec])
    again = cx.lower(double, [spec])
    assert wide.inputs[0].dtype == np.float64 == again.inputs[0].dtype
    assert narrow.inputs[0].dtype == np.float32
    assert narrow.outputs[0].dtype == np.float32
    wide_exe, narrow_exe = cx.compile_program(wide)[0], cx.compile_program(narrow)[0]
    value = np.array([1 / 3, 1e300, -2.5])
    (w,) = wide_exe.run([value])
    (n,) = narrow_exe.run([value])  # float64 accepted: cast to float32 (same_kind)
    assert w.dtype == np.float64 and n.dtype == np.float32
    np.testing.assert_array_equal(w, value * 2)
    np.testing.assert_array_equal(n, value.astype(np.float32) * 2)  # 1e300 -> inf
    assert np.isinf(n[1]) and np.isfinite(w[1])


def test_x64_fixture_restores_the_setting() -> None:
    """Runs after the test above in file order: the setting is what it was."""
    assert bool(jax.config.jax_enable_x64) == X64_AT_IMPORT


def test_x64_in_a_fresh_process(python_subprocess: Callable[..., Any]) -> None:
    """jax.config.update at start-up, as scripts do, rather than the context manager."""
    result = python_subprocess(
        """
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        import numpy as np
        import cyxla as cx

        fn = lambda a, n: (a * n, jnp.sum(n))
        program = cx.lower(fn, [np.zeros(3, np.float64), np.zeros(3, np.int64)])
        print([s.dtype.name for s in program.inputs + program.outputs])
        exe, _ = cx.compile_program(program)
        a, n = np.array([0.1, 0.2, 0.3]), np.array([2**40, -3, 5], np.int64)
        ours = exe.run([a, n])
        theirs = jax.jit(fn)(a, n)
        assert all(np.array_equal(o, t) for o, t in zip(ours, theirs)), (ours, theirs)
        print(int(ours[1]))
        """
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0] == "['float64', 'int64', 'float64', 'int64']"
    assert lines[1] == str(2**40 + 2)


# ------------------------------------------------------------------------ casting


@pytest.fixture(scope="module")
def identities() -> dict[np.dtype, cx.Executable]:
    """An identity program for every dtype, lowered with x64 so all 15 exist."""
    with jax.enable_x64(True):
        return {
            dtype: cx.compile_program(cx.lower(lambda v: v, [jax.ShapeDtypeStruct((3,), dtype)]))[0]
            for dtype in DTYPES
        }


@pytest.mark.parametrize("target", DTYPES, ids=ids)
def test_run_casts_like_numpy_same_kind(
    target: np.dtype, identities: dict[np.dtype, cx.Executable]
) -> None:
    """run() accepts exactly the arrays NumPy casts to the input dtype under 'same_kind',
    converts them as astype does, and refuses the rest with DtypeError naming both."""
    executable = identities[target]
    assert executable.inputs[0].dtype == target
    accepted = refused = 0
    for given in DTYPES:
        value = np.array([1, 0, 1]).astype(given)
        if np.can_cast(given, target, casting="same_kind"):
            (out,) = executable.run([value])
            assert out.dtype == target
            np.testing.assert_array_equal(bits(out), bits(value.astype(target)))
            accepted += 1
        else:
            with pytest.raises(cx.DtypeError) as caught:
                executable.run([value])
            message = str(caught.value)
            assert "argument 0" in message
            assert f"expected {target.name}" in message and f"given {given.name}" in message
            assert isinstance(caught.value, TypeError)
            refused += 1
    assert accepted >= 1  # at least the dtype itself
    assert accepted + refused == len(DTYPES)


def test_uint16_array_into_a_bfloat16_input_is_converted(
    identities: dict[np.dtype, cx.Executable],
) -> None:
    """uint16 casts to bfloat16 under same_kind: 3 becomes 3.0, not the bits 0x0003."""
    (out,) = identities[BFLOAT16].run([np.array([3, 0, 256], np.uint16)])
    assert out.dtype == BFLOAT16
    np.testing.assert_array_equal(out.astype(np.float32), [3.0, 0.0, 256.0])
