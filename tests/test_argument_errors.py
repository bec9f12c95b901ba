"""Bad arguments to the public API get a documented exception whose message names the
argument, what was expected and what came."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx

from conftest import compile_fn, spec

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
