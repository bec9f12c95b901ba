"""Lowering (`cx.lower`): the program's signature is the caller's, what JAX changes is said,
the StableHLO target a plugin asks for, and the export failures and programs it refuses or
passes on."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.lib.mlir.dialects import hlo

import cyxla as cx
from cyxla._jax import stablehlo as _stablehlo

from support import compile_fn, spec, x64_mode

# ------------------------------------------------------------------ unused arguments

#: Functions whose result does not depend on (some of) their arguments: jnp's are jitted
#: already, and jax.export drops what they ignore unless cyxla keeps it.
IGNORING: list[tuple[str, Callable[..., Any], list[jax.ShapeDtypeStruct]]] = [
    ("imag-f32", jnp.imag, [spec((3,), np.float32)]),
    ("isfinite-i32", jnp.isfinite, [spec((3,), np.int32)]),
    ("isinf-i32", jnp.isinf, [spec((2, 3), np.int32)]),
    ("signbit-bool", jnp.signbit, [spec((3,), np.bool_)]),
    ("nan_to_num-empty", jnp.nan_to_num, [spec((0, 3), np.float32)]),
    ("fmax-empty", jnp.fmax, [spec((0, 3), np.float32), spec((0, 3), np.float32)]),
    ("jitted-ignoring-y", jax.jit(lambda x, y: x * 2), [spec((3,), np.float32)] * 2),
    ("plain-ignoring-x", lambda x, y: y + 1, [spec((3,), np.float32)] * 2),
]


@pytest.mark.parametrize(
    ("fn", "args"), [case[1:] for case in IGNORING], ids=[case[0] for case in IGNORING]
)
def test_lower_keeps_every_argument_the_caller_gave(
    fn: Callable[..., Any], args: list[jax.ShapeDtypeStruct]
) -> None:
    program = cx.lower(fn, args)
    assert program.inputs == tuple(cx.TensorSpec(a.shape, np.dtype(a.dtype)) for a in args)
    executable, _ = cx.compile_program(program)
    values = [np.ones(a.shape, a.dtype) for a in args]
    ours = executable.run(values)
    theirs = jax.tree.leaves(jax.jit(fn)(*values))
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine, np.asarray(reference))


def test_a_kept_argument_is_taken_and_ignored() -> None:
    executable = compile_fn(jax.jit(lambda x, unused: x * 2), [spec((3,), np.float32)] * 2)
    (result,) = executable.run([np.arange(3, dtype=np.float32), np.full(3, np.nan, np.float32)])
    np.testing.assert_array_equal(result, [0.0, 2.0, 4.0])
    with pytest.raises(cx.InvalidArgumentError, match="takes 2 arrays, given 1"):
        executable.run([np.zeros(3, np.float32)])


# ------------------------------------------------------------------ 64-bit types without x64


def test_lower_warns_once_when_64_bit_specs_lower_to_32_bit() -> None:
    args = [(spec((3,), np.float64),), {"w": spec((3,), np.int64)}, spec((3,), np.float32)]
    with x64_mode(False), pytest.warns(UserWarning) as caught:
        program = cx.lower(lambda a, b, c: a[0] + b["w"] + c, args)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "args[0][0] float64 as float32" in message
    assert "args[1]['w'] int64 as int32" in message
    assert "args[2]" not in message
    assert 'jax.config.update("jax_enable_x64", True)' in message
    assert "JAX_ENABLE_X64=1" in message
    assert caught[0].filename == __file__
    # The program says what it really takes and gives.
    f32 = cx.TensorSpec((3,), np.float32)
    assert program.inputs == (f32, cx.TensorSpec((3,), np.int32), f32)
    assert program.outputs == (f32,)


def test_run_of_a_narrowed_program_casts_64_bit_inputs_to_its_specs() -> None:
    with x64_mode(False), pytest.warns(UserWarning, match="64-bit mode is off"):
        executable = compile_fn(lambda x: x / 3, [spec((3,), np.float64)])
    assert executable.inputs == (cx.TensorSpec((3,), np.float32),)
    (result,) = executable.run([np.array([1.0, 2.0, 3.0])])
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result, np.array([1, 2, 3], np.float32) / np.float32(3))


def test_lower_does_not_warn_when_the_dtypes_are_kept(recwarn: pytest.WarningsRecorder) -> None:
    with x64_mode(True):
        program = cx.lower(lambda x: x * 2, [spec((3,), np.float64)])
    assert program.inputs == (cx.TensorSpec((3,), np.float64),)
    cx.lower(lambda x: x * 2, [spec((3,), np.float32)])
    assert not [w for w in recwarn if "64-bit" in str(w.message)]


# ------------------------------------------------ the plugin's target, arguments that are no arrays


def test_stablehlo_target_of_a_plugin_that_names_no_version() -> None:
    plugin = types.SimpleNamespace(attributes={})
    assert _stablehlo.stablehlo_target_of(plugin) == str(hlo.get_current_version())  # type: ignore[arg-type]


def test_lower_names_an_argument_that_is_no_array() -> None:
    class NoArray:
        def __array__(self, *_: Any, **__: Any) -> np.ndarray:
            raise RuntimeError("no")

    with pytest.raises(
        TypeError, match=r"expected a jax\.ShapeDtypeStruct or an array, got NoArray"
    ):
        cx.lower(jnp.sin, [NoArray()])


# ----------------------------------------------------------------- export failures and side effects


def _exporting(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    """jax.export.export fails with `error`, as it does for what cyxla does not explain."""

    def export(*_: Any, **__: Any) -> Any:
        def call(*___: Any) -> Any:
            raise error

        return call

    monkeypatch.setattr(jax.export, "export", export)


def test_lower_passes_on_export_errors_it_cannot_explain(monkeypatch: pytest.MonkeyPatch) -> None:
    _exporting(monkeypatch, ValueError("an unexplained export failure"))
    with pytest.raises(ValueError, match="an unexplained export failure"):
        cx.lower(jnp.sin, [jax.ShapeDtypeStruct((3,), jnp.float32)])


def test_lower_names_host_callbacks_it_cannot_find(monkeypatch: pytest.MonkeyPatch) -> None:
    """jax.export refuses host callbacks that tracing again does not show: still named."""
    _exporting(monkeypatch, NotImplementedError("cannot serialize host_callbacks"))

    def hidden(x: jax.Array) -> jax.Array:
        return jnp.cos(x)

    with pytest.raises(cx.UnsupportedProgramError, match="hidden calls back into Python") as info:
        cx.lower(hidden, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    assert isinstance(info.value.__cause__, NotImplementedError)


class _WithEffects:
    """An export that reports side effects (as an effectful primitive would)."""

    def __init__(self, exported: Any) -> None:
        self._exported = exported
        self.ordered_effects = ("OrderedIOEffect",)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._exported, name)


class _Dropping:
    """An export that dropped the unused argument (as a JAX that ignored keep_unused
    would): it kept only argument 0."""

    def __init__(self, exported: Any) -> None:
        self._exported = exported
        self.module_kept_var_idx = (0,)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._exported, name)


def test_lower_refuses_an_export_that_dropped_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    real = jax.export.export
    monkeypatch.setattr(
        jax.export, "export", lambda *a, **k: lambda *args: _Dropping(real(*a, **k)(*args))
    )

    def ignoring(x: jax.Array, y: jax.Array) -> jax.Array:
        return x * 2

    with pytest.raises(
        cx.UnsupportedProgramError,
        match=r"internal error in cyxla: jax.export dropped unused arguments of ignoring "
        r"\(kept \[0\] of 2\)",
    ):
        cx.lower(ignoring, [jax.ShapeDtypeStruct((3,), jnp.float32)] * 2)


def test_lower_refuses_programs_with_side_effects(monkeypatch: pytest.MonkeyPatch) -> None:
    real = jax.export.export
    monkeypatch.setattr(
        jax.export,
        "export",
        lambda *a, **k: lambda *args: _WithEffects(real(*a, **k)(*args)),
    )
    with pytest.raises(
        cx.UnsupportedProgramError,
        match=r"sin has side effects cyxla cannot run: \['OrderedIOEffect'\]",
    ):
        cx.lower(jnp.sin, [jax.ShapeDtypeStruct((3,), jnp.float32)])
