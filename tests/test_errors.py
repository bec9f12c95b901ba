"""Every error a user can cause: its exception type, and the facts its message must carry
(which argument, what was expected and what came, what to install or do)."""

from __future__ import annotations

import dataclasses
import pickle
import re
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
from cyxla._jax import stablehlo as _stablehlo
from cyxla._lower import lowering as cx_lowering
from cyxla._lower.lowering import IN_PLACE_MIN_BYTES
from cyxla._run import plugins as _plugins

from support import compile_fn, hooks, plugin_library, run_cyxla, run_steps, spec


def add(x: jax.Array, y: jax.Array) -> jax.Array:
    return x + y


@pytest.fixture(scope="module")
def program() -> cx.Program:
    return cx.lower(
        add, [jax.ShapeDtypeStruct((2, 3), jnp.int32), jax.ShapeDtypeStruct((3,), jnp.float32)]
    )


@pytest.fixture(scope="module")
def executable(program: cx.Program) -> cx.Executable:
    return cx.compile_program(program)[0]


def good_arguments() -> list[np.ndarray]:
    return [np.arange(6, dtype=np.int32).reshape(2, 3), np.ones(3, np.float32)]


def test_good_arguments_run(executable: cx.Executable) -> None:
    """The baseline the error cases below change one thing of."""
    (out,) = executable.run(good_arguments())
    np.testing.assert_array_equal(out, np.arange(6).reshape(2, 3) + 1.0)


# ------------------------------------------------------------------------ run()


@pytest.mark.parametrize("count", [0, 1, 3])
def test_wrong_argument_count(executable: cx.Executable, count: int) -> None:
    arguments = (good_arguments() * 2)[:count]
    with pytest.raises(cx.InvalidArgumentError) as caught:
        executable.run(arguments)
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == f"add takes 2 arrays, given {count}"


@pytest.mark.parametrize(
    ("index", "value", "given"),
    [
        (0, np.zeros((3, 2), np.int32), "(3, 2) (int32)"),
        (0, np.zeros((6,), np.int32), "(6,) (int32)"),
        (1, np.zeros((4,), np.float32), "(4,) (float32)"),
        (1, np.float32(1.0), "() (float32)"),
        (1, np.zeros((1, 3), np.float64), "(1, 3) (float64)"),
    ],
)
def test_wrong_shape(executable: cx.Executable, index: int, value: Any, given: str) -> None:
    """The same number of elements in another shape is refused too: no silent reshape."""
    arguments: list[Any] = good_arguments()
    arguments[index] = value
    expected = ["(2, 3) (int32)", "(3,) (float32)"][index]
    with pytest.raises(cx.InvalidArgumentError) as caught:
        executable.run(arguments)
    assert str(caught.value) == f"argument {index}: expected shape {expected}, given shape {given}"


@pytest.mark.parametrize(
    ("index", "value", "expected"),
    [
        (0, np.zeros((2, 3), np.float64), "int32[2, 3]"),
        (0, np.zeros((2, 3), np.complex64), "int32[2, 3]"),
        (1, np.zeros(3, np.complex128), "float32[3]"),
        (1, np.array(["a", "b", "c"]), "float32[3]"),
        (1, np.array([object(), 1, 2]), "float32[3]"),
    ],
)
def test_impossible_cast(
    executable: cx.Executable, index: int, value: np.ndarray, expected: str
) -> None:
    arguments: list[Any] = good_arguments()
    arguments[index] = value
    with pytest.raises(cx.DtypeError) as caught:
        executable.run(arguments)
    assert isinstance(caught.value, TypeError)
    message = str(caught.value)
    assert message.startswith(f"argument {index}: expected {expected}, given {value.dtype.name}")
    assert "same_kind" in message


def test_errors_leave_the_executable_usable(executable: cx.Executable) -> None:
    for bad in ([], [np.zeros(1)] * 2, [np.zeros((2, 3)), np.ones(3)]):
        with pytest.raises((cx.InvalidArgumentError, cx.DtypeError)):
            executable.run(bad)
    (out,) = executable.run(good_arguments())
    assert out[1, 2] == 6.0


def test_native_execute_refuses_inputs_it_would_have_to_convert(
    executable: cx.Executable,
) -> None:
    """The core's execute runs only arrays that are exactly the program's inputs, and
    otherwise returns False without running (run() then converts and calls again)."""
    x, y = good_arguments()
    out = np.full((2, 3), -7.0, np.float32)
    refused = [
        [x],  # too few
        [x, y, y],  # too many
        [x, np.ones(4, np.float32)],  # another size
        [x.reshape(3, 2), y],  # the same size in another shape
        [x.astype(np.int64), y],  # another dtype
        [np.ones((3, 2), np.int32).T, y],  # not C-contiguous
        [x, [1.0, 1.0, 1.0]],  # no buffer
    ]
    for arguments in refused:
        assert hooks.execute_exact(executable._native, arguments, [out]) is False
        assert np.all(out == -7.0)  # nothing ran
    assert hooks.execute_exact(executable._native, [x, y], [out]) is True
    np.testing.assert_array_equal(out, x + y)


def test_native_execute_checks_its_outputs(executable: cx.Executable) -> None:
    x, y = good_arguments()
    with pytest.raises(cx.InvalidArgumentError) as caught:
        hooks.execute_exact(executable._native, [x, y], [])
    assert str(caught.value) == "the program has 1 outputs, given 0 arrays to write them to"
    for bad in (
        np.empty(5, np.float32),  # too small
        np.empty((3, 2), np.float32),  # another shape
        np.empty((2, 3), np.float64),  # another dtype
        np.empty((3, 2), np.float32).T,  # not C-contiguous
    ):
        with pytest.raises(cx.InvalidArgumentError) as caught:
            hooks.execute_exact(executable._native, [x, y], [bad])
        assert str(caught.value) == ("output 0 must be a writable C-contiguous array of f32[2,3]")
    read_only = np.empty((2, 3), np.float32)
    read_only.flags.writeable = False
    with pytest.raises(cx.InvalidArgumentError, match="writable"):
        hooks.execute_exact(executable._native, [x, y], [read_only])


def test_run_converts_a_fortran_ordered_input_of_another_dtype() -> None:
    executable = compile_fn(lambda x: x * 2, [spec((2, 3), np.float32)])
    value = np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3))
    assert not value.flags.c_contiguous
    (result,) = executable.run([value])
    np.testing.assert_array_equal(result, np.arange(6, dtype=np.float32).reshape(2, 3) * 2)
    (same,) = executable.run([np.asfortranarray(value.astype(np.float32))])
    np.testing.assert_array_equal(same, result)


# ------------------------------------------------------------------------ lower()


#: Element types no PJRT buffer of cyxla's carries: 8-bit floats and 4-bit integers, and
#: ml_dtypes 0.7's (the version jax 0.12 brings) int1, complex32, bcomplex32 and
#: float8_e5m3fnu (issue 32).
_UNCARRIED = [
    jnp.float8_e4m3fn,
    jnp.float8_e5m2,
    jnp.int4,
    jnp.uint4,
    ml_dtypes.int1,
    ml_dtypes.complex32,
    ml_dtypes.bcomplex32,
    ml_dtypes.float8_e5m3fnu,
]


@pytest.mark.parametrize("dtype", _UNCARRIED, ids=lambda d: np.dtype(d).name)
def test_unsupported_input_dtype(dtype: Any) -> None:
    spec = jax.ShapeDtypeStruct((4,), dtype)
    with pytest.raises(cx.UnsupportedProgramError) as caught:
        cx.lower(lambda a, b: a + b.astype(jnp.float32), [jnp.zeros(4), spec])
    name = np.dtype(dtype).name
    assert str(caught.value) == f"args[1] has dtype {name}, which cyxla cannot carry"


def test_unsupported_dtype_deep_in_a_pytree_is_named_by_its_path() -> None:
    args = [
        {
            "a": jax.ShapeDtypeStruct((2,), jnp.float32),
            "b": (
                jax.ShapeDtypeStruct((2,), jnp.float32),
                jax.ShapeDtypeStruct((2,), jnp.float8_e4m3fn),
            ),
        }
    ]
    with pytest.raises(
        cx.UnsupportedProgramError, match=re.escape("args[0]['b'][1] has dtype float8_e4m3fn")
    ):
        cx.lower(lambda d: d["a"], args)


def test_unsupported_output_dtype() -> None:
    def fn(x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return x, x.astype(jnp.float8_e4m3fn)

    with pytest.raises(cx.UnsupportedProgramError) as caught:
        cx.lower(fn, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    message = str(caught.value)
    assert message.startswith("output[1] has dtype float8_e4m3fn, which cyxla cannot carry")
    assert "bfloat16" in message  # says what is supported


@pytest.mark.parametrize("dtype", _UNCARRIED[4:], ids=lambda d: np.dtype(d).name)
def test_ml_dtypes_newest_types_as_outputs(dtype: Any) -> None:
    """Where JAX can make an array of one of ml_dtypes 0.7's types (jax 0.12 can), lower
    refuses it as an output by name; where JAX cannot, JAX's own error stands."""

    def fn(x: jax.Array) -> jax.Array:
        return x.astype(dtype)

    x = jax.ShapeDtypeStruct((3,), jnp.float32)
    try:
        jax.eval_shape(fn, x)
    except TypeError as jax_refusal:
        with pytest.raises(TypeError, match=re.escape(str(jax_refusal))):
            cx.lower(fn, [x])
        return
    with pytest.raises(cx.UnsupportedProgramError) as caught:
        cx.lower(fn, [x])
    name = np.dtype(dtype).name
    assert str(caught.value).startswith(f"output[0] has dtype {name}, which cyxla cannot carry")


def test_unsupported_types_inside_a_program_are_fine() -> None:
    """Only the boundary is limited: a function may use 8-bit floats and int4 inside."""

    def fn(x: jax.Array) -> jax.Array:
        return x.astype(jnp.float8_e4m3fn).astype(jnp.float32) + x.astype(jnp.int4).astype(
            jnp.float32
        )

    x = np.array([0.5, 1.0, 3.0, -2.0], np.float32)
    executable = cx.compile_program(cx.lower(fn, [x]))[0]
    np.testing.assert_array_equal(executable.run([x])[0], np.asarray(jax.jit(fn)(x)))


def test_an_operation_newer_than_the_plugins_stablehlo_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A jaxlib newer than the plugin (jax 0.12 beside the 0.11.2 plugin) writes programs
    at the plugin's StableHLO version; one whose operation that version lacks is refused
    at lower, naming the operation and both versions. Simulated with a target older than
    the composite operation's version."""
    monkeypatch.setattr(cx_lowering, "stablehlo_target", lambda platform: "0.9.0")

    def fn(x: jax.Array) -> jax.Array:
        return jax.lax.composite(lambda y: y * 2, name="cyxla.test.double")(x)

    with pytest.raises(cx.UnsupportedProgramError) as caught:
        cx.lower(fn, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    message = str(caught.value)
    assert "uses an operation (vhlo.composite_v" in message
    assert "newer than StableHLO 0.9.0, the newest version the cpu plugin reads" in message
    assert f"(jaxlib writes {_stablehlo.written_version()})" in message
    assert "install a plugin at least as new as jaxlib" in message


def test_prng_key_output() -> None:
    with pytest.raises(cx.UnsupportedProgramError, match=r"^output\[0\] has dtype key<fry>"):
        cx.lower(lambda seed: jax.random.key(seed), [jax.ShapeDtypeStruct((), jnp.uint32)])


@pytest.mark.parametrize("form", ["array", "spec"])
def test_prng_key_input(form: str) -> None:
    key = jax.random.key(0)
    arg = key if form == "array" else jax.ShapeDtypeStruct(key.shape, key.dtype)
    with pytest.raises(cx.UnsupportedProgramError, match=r"^args\[0\] has dtype key<fry>"):
        cx.lower(lambda k: jax.random.normal(k, (2,)), [arg])


def test_raw_key_data_is_fine() -> None:
    """The supported way: pass jax.random.key_data (uint32) and wrap it inside."""

    def fn(raw: jax.Array) -> jax.Array:
        return jax.random.normal(jax.random.wrap_key_data(raw), (3,))

    raw = np.asarray(jax.random.key_data(jax.random.key(42)))
    executable = cx.compile_program(cx.lower(fn, [raw]))[0]
    (ours,) = executable.run([raw])
    np.testing.assert_allclose(ours, np.asarray(jax.jit(fn)(raw)), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", ["jax.debug.print", "jax.pure_callback"])
def test_python_callbacks_are_refused_without_the_handler(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As on a platform other than the CPU, where cyxla has no callback handler.
    monkeypatch.setattr(cx_lowering, "_callback_lowering", lambda name, platform: None)

    def fn(x: jax.Array) -> jax.Array:
        if kind == "jax.debug.print":
            jax.debug.print("x = {}", x)
            return x
        return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    with pytest.raises(cx.UnsupportedProgramError) as caught:
        cx.lower(fn, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    message = str(caught.value)
    assert message.startswith(f"fn uses {kind} (")
    assert "Python host callbacks on the CPU plugin only" in message


def test_lower_names_a_bad_argument() -> None:
    with pytest.raises(TypeError, match=r"args\[1\]"):
        cx.lower(add, [np.zeros(3), object()])


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


# ------------------------------------------------------------------------ compile_program()


def test_platform_mismatch(program: cx.Program) -> None:
    cx.compile_program(program)  # loads the CPU plugin, if no test did yet
    foreign = dataclasses.replace(program, platform="cuda")
    with pytest.raises(cx.PlatformMismatchError) as caught:
        cx.compile_program(foreign)
    assert isinstance(caught.value, cx.PluginError)
    message = str(caught.value)
    assert "lowered for 'cuda'" in message
    assert "loaded the 'cpu' plugin" in message
    assert plugin_library() in message


@pytest.mark.parametrize(
    ("code", "plugin_says"),
    [
        (b"garbage", "custom op 'garbage' is unknown"),
        (b"", "module with `main` function"),
        (
            b"func.func @main(%a: tensor<3xf32>) -> tensor<4xf32> {\n"
            b"  %0 = stablehlo.add %a, %a : tensor<3xf32>\n"
            b"  return %0 : tensor<4xf32>\n}",
            "expects different type than prior uses",
        ),
    ],
    ids=["garbage", "empty", "ill_typed"],
)
def test_compile_error_carries_the_plugins_message(
    program: cx.Program, code: bytes, plugin_says: str
) -> None:
    with pytest.raises(cx.CompileError) as caught:
        cx.compile_program(dataclasses.replace(program, stablehlo=code))
    assert isinstance(caught.value, cx.PjrtError)
    message = str(caught.value)
    assert message.startswith("PJRT_Client_Compile failed: ")
    assert plugin_says in message


def test_truncated_bytecode_is_a_compile_error(program: cx.Program) -> None:
    truncated = dataclasses.replace(program, stablehlo=program.stablehlo[:-40])
    with pytest.raises(cx.CompileError, match=r"PJRT_Client_Compile failed: .*parse"):
        cx.compile_program(truncated)


def test_unknown_compile_option(program: cx.Program) -> None:
    with pytest.raises(cx.CompileError, match="xla_cyxla_no_such_flag"):
        cx.compile_program(program, options={"xla_cyxla_no_such_flag": True})


def test_program_that_disagrees_with_its_specs(program: cx.Program) -> None:
    """A program whose StableHLO was swapped for another's: the parameters of what the
    plugin compiled are not the recorded inputs, which compile_program reports instead of
    running it."""
    other = cx.lower(lambda v: v[:2], [jax.ShapeDtypeStruct((4,), jnp.float32)])
    swapped = dataclasses.replace(program, stablehlo=other.stablehlo)
    with pytest.raises(cx.InvalidArgumentError) as caught:
        cx.compile_program(swapped)
    assert str(caught.value) == (
        "compile_program: add: the input specs are not those of the compiled program: it "
        "takes 1 parameters (f32[4]), the specs name 2 inputs (s32[2,3], f32[3])"
    )


def test_output_specs_that_are_not_the_programs(program: cx.Program) -> None:
    edited = dataclasses.replace(program, outputs=(cx.TensorSpec((3, 2), np.float32),))
    with pytest.raises(cx.InvalidArgumentError) as caught:
        cx.compile_program(edited)
    assert str(caught.value) == (
        "compile_program: add: the output specs are (f32[3,2]), but the compiled program "
        "returns (f32[2,3])"
    )


@pytest.mark.parametrize("program", [None, "program", b"\x00"])
def test_compile_program_refuses_what_is_not_a_program(program: Any) -> None:
    with pytest.raises(TypeError, match=r"program must be a cyxla.Program .*given"):
        cx.compile_program(program)


def test_compile_program_refuses_options_not_keyed_by_name() -> None:
    program = cx.lower(jnp.sin, [spec((3,), np.float32)])
    with pytest.raises(TypeError, match=r"options must map XLA debug option names"):
        cx.compile_program(program, options={1: 2})


def _edited(**changes: Any) -> cx.Program:
    program = cx.lower(lambda x, flag: x + 1, [spec((2, 3), np.float32), spec((), np.bool_)])
    return dataclasses.replace(program, **changes)


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (
            (cx.TensorSpec((2, 3), np.int32), cx.TensorSpec((), np.bool_)),
            r"input 0 is s32\[2,3\], but the program takes f32\[2,3\]$",
        ),
        (
            (cx.TensorSpec((2, 3), np.float32), cx.TensorSpec((), np.uint8)),
            r"input 1 is u8\[\], but the program takes pred\[\]$",
        ),
        (
            (cx.TensorSpec((3, 2), np.float32), cx.TensorSpec((), np.bool_)),
            r"input 0 is f32\[3,2\], but the program takes f32\[2,3\]$",
        ),
        (
            (cx.TensorSpec((2, 3), np.float32),),
            r"it takes 2 parameters \(f32\[2,3\], pred\[\]\), the specs name 1 inputs "
            r"\(f32\[2,3\]\), and parameter 1 is no output written in place$",
        ),
    ],
    ids=["int32-for-float32", "uint8-for-bool", "shape", "count"],
)
def test_compile_program_refuses_input_specs_that_are_not_the_programs(
    inputs: tuple[cx.TensorSpec, ...], message: str
) -> None:
    prefix = r"^compile_program: <lambda>: the input specs are not those of the compiled program: "
    with pytest.raises(cx.InvalidArgumentError, match=prefix + message):
        cx.compile_program(_edited(inputs=inputs))


def test_compile_program_takes_a_program_whose_specs_are_its_own() -> None:
    executable, _ = cx.compile_program(_edited())
    (result,) = executable.run([np.ones((2, 3), np.float32), np.True_])
    np.testing.assert_array_equal(result, np.full((2, 3), 2, np.float32))


def test_dropping_an_input_of_a_program_with_donated_outputs_is_refused() -> None:
    """The parameter after the kept input is no donated one (it aliases no output): the
    program writes nothing in place, and its specs are refused, not read as donations."""
    length = IN_PLACE_MIN_BYTES // 4  # an output large enough to be written in place
    program = cx.lower(jnp.multiply, [spec((length,), np.float32)] * 2)
    assert program.donated_outputs == (0,)
    edited = dataclasses.replace(program, inputs=program.inputs[:1])
    with pytest.raises(
        cx.InvalidArgumentError,
        match=rf"it takes 3 parameters \(f32\[{length}\], f32\[{length}\], f32\[{length}\]\), "
        rf"the specs name 1 inputs \(f32\[{length}\]\), and parameter 1 is no output",
    ):
        cx.compile_program(edited)


def test_the_outputs_written_in_place_are_read_from_the_compiled_program() -> None:
    """compile_program needs no reading of the StableHLO to know which outputs the program
    writes in place: the plugin's executable says, on a compile and on a cache hit."""
    length = IN_PLACE_MIN_BYTES // 4
    program = cx.lower(lambda x, y: (x * y, x + 1), [spec((length,), np.float32)] * 2)
    assert program.donated_outputs == (0, 1)  # what the StableHLO says
    x = np.linspace(0, 1, length, dtype=np.float32)
    for _ in range(2):  # compiled, then from the disk cache
        executable, _ = cx.compile_program(program)
        assert executable._native.donated_outputs == [0, 1]
        product, successor = executable.run([x, x])
        np.testing.assert_array_equal(product, x * x)
        np.testing.assert_array_equal(successor, x + 1)
    # No inputs: the output's parameter is the first (number 0, which XLA's proto omits).
    ramp = cx.lower(lambda: jnp.arange(length, dtype=jnp.float32), [])
    assert ramp.donated_outputs == (0,)
    executable, _ = cx.compile_program(ramp)
    assert executable._native.donated_outputs == [0]
    np.testing.assert_array_equal(executable.run([])[0], np.arange(length, dtype=np.float32))


def test_outputs_claimed_in_place_are_checked_against_the_compiled_program() -> None:
    length = IN_PLACE_MIN_BYTES // 4
    program = cx.lower(lambda x: (x + 1, x * 2), [spec((length,), np.float32)])
    assert program.donated_outputs == (0, 1)
    for claim in [(), (1, 0), (0,)]:
        with pytest.raises(
            cx.InvalidArgumentError,
            match=rf"the outputs written in place are listed as \({', '.join(map(str, claim))}\) "
            r".*but the compiled program writes \(0, 1\) in place",
        ):
            cx.compile_program(dataclasses.replace(program, donated_outputs=claim))


def test_saving_a_program_does_not_read_its_stablehlo(monkeypatch: pytest.MonkeyPatch) -> None:
    # Corrupted StableHLO could crash jaxlib's reader: saving and pickling only copy it.
    from cyxla._jax import jaxlib as _jaxlib

    lowered = cx.lower(jnp.sin, [spec((IN_PLACE_MIN_BYTES // 4,), np.float32)])
    corrupted = dataclasses.replace(lowered, stablehlo=lowered.stablehlo[:-40])

    def refuse(*args: object) -> None:
        raise AssertionError("jaxlib read the StableHLO")

    monkeypatch.setattr(_jaxlib._jax.mlir, "deserialize_portable_artifact", refuse)
    again = pickle.loads(pickle.dumps(corrupted))
    assert again.stablehlo == corrupted.stablehlo and again.donated_outputs == (0,)


#: A module whose main function comes after another function, which it calls.
_HELPER_FIRST = """
module @helper_first {
  func.func private @helper(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.sine %arg0 : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
  func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %0 = call @helper(%arg0) : (tensor<3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}
"""


def test_the_main_function_is_checked_wherever_it_is_in_the_module() -> None:
    lowered = cx.lower(jnp.sin, [spec((3,), np.float32)])
    program = dataclasses.replace(
        lowered, stablehlo=_stablehlo.serialize(_HELPER_FIRST, lowered.stablehlo_version)
    )
    values = np.array([0.5, -1.0, 2.0], np.float32)
    (result,) = cx.compile_program(program)[0].run([values])
    np.testing.assert_array_equal(result, jax.jit(jnp.sin)(values))
    # Without a main function the plugin refuses to compile it.
    renamed = _HELPER_FIRST.replace("@main", "@other")
    headless = dataclasses.replace(
        lowered, stablehlo=_stablehlo.serialize(renamed, lowered.stablehlo_version)
    )
    with pytest.raises(cx.CompileError):
        cx.compile_program(headless)


# ------------------------------------------------------------------------ plugins


def libc_path() -> str:
    """The C library this process runs with: a real shared library, but no PJRT plugin."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1]
        if "/libc.so" in path or re.search(r"/libc-[\d.]+\.so", path):
            return path
    pytest.fail("no C library mapped in /proc/self/maps")


def test_a_library_that_is_no_plugin() -> None:
    path = libc_path()
    with pytest.raises(cx.PluginLoadError) as caught:
        _plugins.load_library(path)
    assert str(caught.value) == (
        f"{Path(path).resolve()} is not a PJRT plugin: it does not export GetPjrtApi"
    )


def test_a_file_that_is_no_library(tmp_path: Path) -> None:
    text = tmp_path / "libnotes.so"
    text.write_text("not a shared library\n" * 10)
    with pytest.raises(cx.PluginLoadError) as caught:
        _plugins.load_library(text)
    message = str(caught.value)
    assert message.startswith(f"cannot load the PJRT plugin {text}: ")
    assert "invalid ELF header" in message or "file too short" in message


def test_a_missing_library(tmp_path: Path) -> None:
    missing = tmp_path / "libpjrt_missing.so"
    with pytest.raises(cx.PluginLoadError, match="cannot open shared object file"):
        _plugins.load_library(missing)


@pytest.mark.parametrize(
    ("major", "minor"),
    [(0, 50), (1, 0), (0, _core.OLDEST_PJRT_API_MINOR - 1), (-1, 200)],
)
def test_incompatible_plugin_version(
    fake_plugin: Callable[..., Path], major: int, minor: int
) -> None:
    path = fake_plugin(major, minor)
    with pytest.raises(cx.PluginVersionError) as caught:
        _plugins.load_library(path)
    message = str(caught.value)
    assert f"{path} implements PJRT API {major}.{minor}, " in message
    assert f"needs {_core.PJRT_API_MAJOR}.x with x >= {_core.OLDEST_PJRT_API_MINOR}" in message
    assert f"written against {_core.PJRT_API_MAJOR}.{_core.PJRT_API_MINOR}" in message
    assert "install a plugin built from a matching XLA" in message


def test_plugin_without_an_api_table(fake_plugin: Callable[..., Path]) -> None:
    path = fake_plugin(0, 0, null_api=True)
    with pytest.raises(cx.PluginLoadError, match=re.escape(f"{path} returned no PJRT_Api")):
        _plugins.load_library(path)


def test_plugin_with_a_truncated_table(fake_plugin: Callable[..., Path]) -> None:
    path = fake_plugin(_core.PJRT_API_MAJOR, _core.PJRT_API_MINOR, struct_size=64)
    with pytest.raises(cx.PluginLoadError, match=re.escape(f"{path} has a truncated PJRT_Api")):
        _plugins.load_library(path)


def test_plugin_missing_a_function_we_call(fake_plugin: Callable[..., Path]) -> None:
    """A table of the right version and size whose slots are null: the first call names
    the missing function rather than jumping to address 0."""
    path = fake_plugin(_core.PJRT_API_MAJOR, _core.OLDEST_PJRT_API_MINOR)
    with pytest.raises(cx.PluginVersionError) as caught:
        _plugins.load_library(path)
    assert str(caught.value) == (
        f"PJRT_Plugin_Initialize is missing from the plugin {path} "
        f"(PJRT {_core.PJRT_API_MAJOR}.{_core.OLDEST_PJRT_API_MINOR}); install a newer plugin"
    )


def test_initialize_with_an_incompatible_plugin(fake_plugin: Callable[..., Path]) -> None:
    path = fake_plugin(0, 50)
    steps = run_steps(f"""
attempt(lambda: cx.initialize(Path({str(path)!r}), platform="cpu"))
attempt(lambda: cx.initialize(platform="cpu").platform)  # a failed load leaves no trace
""")
    assert steps[0][0] == "PluginVersionError"
    assert "implements PJRT API 0.50" in steps[0][1]
    assert steps[1] == ["ok", "cpu"]


def test_initialize_with_something_that_is_no_plugin(tmp_path: Path) -> None:
    text = tmp_path / "plugin.so"
    text.write_text("hello")
    steps = run_steps(f"""
attempt(lambda: cx.initialize({libc_path()!r}))
attempt(lambda: cx.initialize({str(text)!r}, platform="cpu"))
""")
    assert steps[0][0] == "PluginLoadError" and "does not export GetPjrtApi" in steps[0][1]
    assert steps[1][0] == "PluginLoadError" and str(text) in steps[1][1]


_NO_PLUGIN_STEPS = """
attempt(lambda: cx.initialize())
attempt(lambda: cx.initialize(platform="cpu"))
attempt(lambda: cx.lower(lambda x: x + 1, [np.zeros(3, np.float32)]))
"""


def test_no_plugin_package_installed() -> None:
    """The cpu extra is missing: the import of lammps_jax_pjrt_cpu fails."""
    steps = run_steps("import sys\nsys.modules['lammps_jax_pjrt_cpu'] = None\n" + _NO_PLUGIN_STEPS)
    assert [kind for kind, _ in steps] == ["PluginNotFoundError"] * 3
    for _, message in steps:
        assert "pip install 'cyxla[cpu]'" in message
    assert steps[1][1] == "no cpu plugin is installed; install one with: pip install 'cyxla[cpu]'"


def test_no_plugin_entry_points() -> None:
    """No package provides a cyxla.plugins entry point at all."""
    steps = run_steps("cx._run.plugins.discover = lambda: []\n" + _NO_PLUGIN_STEPS)
    assert [kind for kind, _ in steps] == ["PluginNotFoundError"] * 3
    assert "pip install 'cyxla[cpu]'" in steps[0][1]
    assert "cyxla.plugins" in steps[0][1] and "CYXLA_PJRT_PLUGIN" in steps[0][1]
    assert "CYXLA_PJRT_PLUGIN" in steps[1][1]  # what to do for a platform cyxla lacks
    assert "pip install 'cyxla[cpu]'" in steps[2][1]


def test_a_platform_without_its_plugin() -> None:
    steps = run_steps("""
attempt(lambda: cx.initialize(platform="cuda"))
attempt(lambda: cx.initialize(platform="gpu"))
attempt(lambda: cx.initialize(platform="metal"))
""")
    assert [kind for kind, _ in steps] == ["PluginNotFoundError"] * 3
    assert steps[0] == steps[1]  # "gpu" means cuda
    assert "'cyxla[cuda13]' or 'cyxla[cuda12]'" in steps[0][1]
    assert "platform 'metal'" in steps[2][1] and "CYXLA_PJRT_PLUGIN" in steps[2][1]


def test_bad_client_options() -> None:
    steps = run_steps("""
attempt(lambda: cx.initialize(platform="cpu", options={"cpu_device_count": object()}))
attempt(lambda: cx.initialize(platform="cpu", options={"cyxla_no_such_option": 3}))
attempt(lambda: cx.initialize(platform="cpu", options={"cpu_device_count": "two"}))
attempt(lambda: cx.initialize(platform="cpu", options={"cpu_device_count": [1, 2.5]}))
attempt(lambda: cx.initialize(platform="cpu", options={"cpu_device_count": 3}).options)
attempt(lambda: cx._run.backend.loaded().runtime.device_count)
""")
    assert steps[0] == [
        "InvalidArgumentError",
        "client option 'cpu_device_count' must be a bool, int, float, str or a list of ints, "
        "not object",
    ]
    assert steps[1][0] == "PjrtError"
    assert steps[1][1].startswith("PJRT_Client_Create failed: ")
    assert "cyxla_no_such_option" in steps[1][1]
    assert steps[2][0] == "PjrtError" and "cpu_device_count" in steps[2][1]
    assert steps[3][0] == "InvalidArgumentError" and "cpu_device_count" in steps[3][1]
    # None of the failures loaded anything: good options still work afterwards.
    assert steps[4] == ["ok", "{'cpu_device_count': 3, 'asynchronous': False}"]
    assert steps[5] == ["ok", "3"]


def test_negative_device_count() -> None:
    # The plugin throws a C++ exception through its C API for this; cyxla reports it.
    steps = run_steps("""
attempt(lambda: cx.initialize(platform="cpu", options={"cpu_device_count": -1}))
""")
    assert steps[0][0] in ("InvalidArgumentError", "PjrtError")
    assert "cpu_device_count" in steps[0][1]


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


# ------------------------------------------------------------------------ TensorSpec


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


# ------------------------------------------------------------------------ check_abi()


@pytest.mark.parametrize("version", ["1", 1.5, True, None, b"1"])
def test_check_abi_refuses_what_is_not_an_int(version: Any) -> None:
    with pytest.raises(TypeError, match=r"check_abi: version must be an int.*given"):
        cx.check_abi(version)


def test_check_abi_takes_ints_of_any_integer_type() -> None:
    cx.check_abi(cx.ABI_VERSION)
    cx.check_abi(np.int64(cx.ABI_VERSION))
    with pytest.raises(cx.AbiVersionError):
        cx.check_abi(cx.ABI_VERSION + 1)


# ------------------------------------------------------------------------ python -m cyxla demo


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
