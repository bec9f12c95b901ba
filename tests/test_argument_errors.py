"""Bad arguments to the public API get a documented exception whose message names the
argument, what was expected and what came."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx

from support import compile_fn, run_cyxla, spec

# ------------------------------------------------------------------ check_abi


@pytest.mark.parametrize("version", ["1", 1.5, True, None, b"1"])
def test_check_abi_refuses_what_is_not_an_int(version: Any) -> None:
    with pytest.raises(TypeError, match=r"check_abi: version must be an int.*given"):
        cx.check_abi(version)


def test_check_abi_takes_ints_of_any_integer_type() -> None:
    cx.check_abi(cx.ABI_VERSION)
    cx.check_abi(np.int64(cx.ABI_VERSION))
    with pytest.raises(cx.AbiVersionError):
        cx.check_abi(cx.ABI_VERSION + 1)


# ------------------------------------------------------------------ lower


@pytest.mark.parametrize("custom_calls", ["abc", b"abc", 5])
def test_lower_refuses_custom_calls_that_are_not_a_sequence_of_names(custom_calls: Any) -> None:
    with pytest.raises(TypeError, match=r"lower: custom_calls must be a sequence of target names"):
        cx.lower(jnp.sin, [spec((3,), np.float32)], custom_calls=custom_calls)


def test_lower_refuses_a_custom_call_name_that_is_not_a_str() -> None:
    with pytest.raises(TypeError, match=r"custom_calls\[1\] must be a str.*given int 7"):
        cx.lower(jnp.sin, [spec((3,), np.float32)], custom_calls=["a", 7])


def test_lower_takes_a_list_or_tuple_of_names() -> None:
    for names in (["my_target"], ("my_target",), ()):
        program = cx.lower(jnp.sin, [spec((3,), np.float32)], custom_calls=names)
        assert program.custom_calls == ()


# ------------------------------------------------------------------ Executable.run


def test_run_converts_a_fortran_ordered_input_of_another_dtype() -> None:
    executable = compile_fn(lambda x: x * 2, [spec((2, 3), np.float32)])
    value = np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3))
    assert not value.flags.c_contiguous
    (result,) = executable.run([value])
    np.testing.assert_array_equal(result, np.arange(6, dtype=np.float32).reshape(2, 3) * 2)
    (same,) = executable.run([np.asfortranarray(value.astype(np.float32))])
    np.testing.assert_array_equal(same, result)


# ------------------------------------------------------------------ initialize


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"options": {1: 2}}, r"options must be keyed by option names \(str\), given the key 1"),
        ({"options": [("a", 1)]}, r"options must be a mapping.*given list"),
        ({"platform": 5}, r"platform must be a str .* given int 5"),
        ({"library": 5}, r"library must be a path .* given int 5"),
    ],
)
def test_initialize_refuses_arguments_of_the_wrong_type(
    arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=rf"^initialize: {message}"):
        cx.initialize(**arguments)


# ------------------------------------------------------------------ compile_program


@pytest.mark.parametrize("program", [None, "program", b"\x00"])
def test_compile_program_refuses_what_is_not_a_program(program: Any) -> None:
    with pytest.raises(TypeError, match=r"program must be a cyxla.Program .*given"):
        cx.compile_program(program)


def test_compile_program_refuses_options_not_keyed_by_name() -> None:
    program = cx.lower(jnp.sin, [spec((3,), np.float32)])
    with pytest.raises(TypeError, match=r"options must map XLA debug option names"):
        cx.compile_program(program, options={1: 2})


# ------------------------------------------------------------------ TensorSpec


@pytest.mark.parametrize("dtype", ["U3", object, "float8_e4m3fn", "nonsense"])
def test_tensor_spec_refuses_a_dtype_cyxla_does_not_carry(dtype: Any) -> None:
    with pytest.raises(cx.DtypeError, match=r"^TensorSpec: dtype .*supported: bool, int8"):
        cx.TensorSpec((3,), dtype)


def test_tensor_spec_refuses_a_shape_that_is_not_one() -> None:
    with pytest.raises(TypeError, match=r"shape must be a sequence of ints, given 3"):
        cx.TensorSpec(3, np.float32)  # type: ignore[arg-type]
    with pytest.raises(cx.InvalidArgumentError, match=r"dimensions must be >= 0"):
        cx.TensorSpec((2, -1), np.float32)


def test_tensor_spec_normalizes_what_it_takes() -> None:
    made = cx.TensorSpec([np.int64(2), 3], "float32")  # type: ignore[arg-type]
    assert made == cx.TensorSpec((2, 3), np.dtype(np.float32))
    assert made.shape == (2, 3) and type(made.shape[0]) is int
    assert made.element_type == cx.ElementType.F32 and str(made) == "float32[2,3]"


# ------------------------------------------------------------------ python -m cyxla demo


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({"CYXLA_PJRT_PLUGIN": "/nonexistent/libpjrt.so"}, "cannot load the PJRT plugin"),
        ({"CYXLA_PLATFORM": "tpu"}, "tpu plugin"),
    ],
)
def test_demo_without_a_plugin_prints_why_and_fails(
    environment: dict[str, str], message: str
) -> None:
    result = run_cyxla("demo", env=environment)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("python -m cyxla demo: "), result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


# ------------------------------------------------------------------ programs edited after lower


def _edited(**changes: Any) -> cx.Program:
    program = cx.lower(lambda x, flag: x + 1, [spec((2, 3), np.float32), spec((), np.bool_)])
    return dataclasses.replace(program, **changes)


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (
            (cx.TensorSpec((2, 3), np.int32), cx.TensorSpec((), np.bool_)),
            r"Program.inputs\[0\] is int32\[2,3\], but its StableHLO main function takes "
            r"tensor<2x3xf32>",
        ),
        (
            (cx.TensorSpec((2, 3), np.float32), cx.TensorSpec((), np.uint8)),
            r"Program.inputs\[1\] is uint8\[\], but .* takes tensor<i1>",
        ),
        (
            (cx.TensorSpec((3, 2), np.float32), cx.TensorSpec((), np.bool_)),
            r"Program.inputs\[0\] is float32\[3,2\], but .* takes tensor<2x3xf32>",
        ),
        (
            (cx.TensorSpec((2, 3), np.float32),),
            r"Program.inputs holds 1 specs, but its StableHLO main function takes 2",
        ),
    ],
    ids=["int32-for-float32", "uint8-for-bool", "shape", "count"],
)
def test_compile_program_refuses_input_specs_that_are_not_the_programs(
    inputs: tuple[cx.TensorSpec, ...], message: str
) -> None:
    with pytest.raises(cx.InvalidArgumentError, match=r"^compile_program: the input specs"):
        cx.compile_program(_edited(inputs=inputs))
    with pytest.raises(cx.InvalidArgumentError, match=message):
        cx.compile_program(_edited(inputs=inputs))


def test_compile_program_takes_a_program_whose_specs_are_its_own() -> None:
    executable, _ = cx.compile_program(_edited())
    (result,) = executable.run([np.ones((2, 3), np.float32), np.True_])
    np.testing.assert_array_equal(result, np.full((2, 3), 2, np.float32))
