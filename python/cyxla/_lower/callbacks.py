"""The lowering rules that turn JAX's callback primitives into calls of cyxla's callback
target (cyxla/_run/callbacks.py keeps the functions and runs them): passed to `lower`'s own
export only, so a `jax.jit` in another thread lowers JAX's way."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from cyxla._errors import UnsupportedProgramError
from cyxla._ffi.callbacks import PYTHON_CALLBACK_TARGET, Callback, function_name, register
from cyxla._jax.jaxlib import (
    CALLBACK_PRIMITIVES,
    CHECKIFY_CHECK,
    ordered_effects,
    xla_runtime_errors,
)

__all__ = ["CallbackLowering"]


def _shapes(avals: Sequence[Any]) -> tuple[tuple[tuple[int, ...], np.dtype], ...]:
    return tuple((tuple(int(d) for d in a.shape), np.dtype(a.dtype)) for a in avals)


def _is_ordered(params: dict[str, Any]) -> bool:
    if params.get("ordered"):
        return True
    effect = params.get("effect")
    return effect is not None and ordered_effects.contains(effect)


class CallbackLowering:
    """The lowering rules of one export (`jax.export`'s `_override_lowering_rules`), and
    the names of the callbacks it lowered."""

    def __init__(self, function: str) -> None:
        self.function = function
        self.names: list[str] = []

    def rules(self) -> tuple[tuple[Any, Callable[..., Any]], ...]:
        # A tuple: JAX hashes the rules into its lowering cache's key.
        rules = [
            (primitive, functools.partial(self._lower, primitive.name, impl, side_effect))
            for primitive, impl in CALLBACK_PRIMITIVES
            for side_effect in (primitive.name != "pure_callback",)
        ]
        return (*rules, (CHECKIFY_CHECK[0], self._lower_check))

    def _lower_check(self, ctx: Any, *operands: Any, err_tree: Any, debug: bool) -> Any:
        """`checkify.check` outside `checkify.checkify`, lowered as JAX lowers it (only
        with jax_experimental_unsafe_xla_runtime_errors), to a callback that raises."""
        _, python_err, functionalization_error = CHECKIFY_CHECK
        if debug:
            return []
        if not xla_runtime_errors.value:
            raise functionalization_error
        run = functools.partial(python_err, err_tree)
        return self._emit(ctx, operands, run, "jax.experimental.checkify.check", True)

    def _lower(
        self,
        primitive: str,
        impl: Callable[..., Any],
        side_effect: bool,
        ctx: Any,
        *operands: Any,
        **params: Any,
    ) -> Any:
        name = function_name(params)
        if _is_ordered(params):
            raise UnsupportedProgramError(
                f"{self.function} calls back into Python in order ({primitive} of {name} "
                "with ordered=True): cyxla runs Python callbacks unordered, as XLA schedules "
                "them; pass ordered=False, or thread the order through the callbacks' "
                "arguments and results"
            )
        return self._emit(ctx, operands, functools.partial(impl, **params), name, side_effect)

    def _emit(
        self, ctx: Any, operands: Any, run: Callable[..., Any], name: str, side_effect: bool
    ) -> Any:
        """The custom call that runs `run` (named `name` in messages) on `operands`."""
        callback = Callback(run, name, _shapes(ctx.avals_in), _shapes(ctx.avals_out))
        callback_id = register(callback)
        self.names.append(name)
        lowering = jax.ffi.ffi_lowering(PYTHON_CALLBACK_TARGET, has_side_effect=side_effect)
        return lowering(ctx, *operands, callback_id=np.uint64(callback_id))
