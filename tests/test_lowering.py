"""Lowering (`cx.lower`): the StableHLO target a plugin asks for, the arguments it takes,
and the export failures and programs it refuses or passes on."""

from __future__ import annotations

import types
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.lib.mlir.dialects import hlo

import cyxla as cx
from cyxla import _stablehlo


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


def test_lower_refuses_a_jitted_function_that_drops_unused_arguments() -> None:
    jitted = jax.jit(lambda x, unused: x * 2)
    f32 = jax.ShapeDtypeStruct((3,), jnp.float32)
    with pytest.raises(cx.UnsupportedProgramError, match=r"keep_unused=True"):
        cx.lower(jitted, [f32, f32])
    program = cx.lower(jax.jit(lambda x, unused: x * 2, keep_unused=True), [f32, f32])
    assert len(program.inputs) == 2
