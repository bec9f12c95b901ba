"""Python host callbacks in the programs that `lower` makes.

While cyxla exports a function for the CPU, the callback primitives (`jax.pure_callback`,
`jax.experimental.io_callback`, `jax.debug.callback`, `jax.debug.print`, and through them
`checkify` and Equinox's runtime errors) lower to a typed XLA FFI custom call of cyxla's
own (`PYTHON_CALLBACK_TARGET`) that carries an id; the function JAX would call is kept
here under that id. The rules are passed to that one export only, so a `jax.jit` in
another thread lowers JAX's way. When a callback fires, the handler in the extension
(src/python/host_callback.cpp) takes the GIL and calls `dispatch`.

Ids are numbers of this process: a program that calls back runs only here, so it is not
saved, pickled, or kept in the disk cache.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from cyxla import _core
from cyxla._errors import UnsupportedProgramError
from cyxla._jaxlib import CALLBACK_PRIMITIVES, CHECKIFY_CHECK, ordered_effects, xla_runtime_errors

__all__ = [
    "PYTHON_CALLBACK_TARGET",
    "CallbackLowering",
    "dispatch",
    "function_name",
    "install_dispatcher",
    "refusal_hint",
]

#: The custom-call target of every Python callback in a program that `lower` made.
PYTHON_CALLBACK_TARGET: str = _core.PYTHON_CALLBACK_TARGET


@dataclass(frozen=True)
class _Callback:
    """What a firing callback needs: the function JAX's runtime would call, with its
    parameters bound, and the shapes and dtypes of its operands and results."""

    run: Callable[..., Any]
    #: The user's function, as messages name it.
    name: str
    operands: tuple[tuple[tuple[int, ...], np.dtype], ...]
    results: tuple[tuple[tuple[int, ...], np.dtype], ...]


_lock = threading.Lock()
#: Every callback lowered in this process, by id; kept for the process's life, since a
#: native caller may run the program after Python dropped it.
_callbacks: dict[int, _Callback] = {}
_ids = itertools.count(1)


def _register(callback: _Callback) -> int:
    with _lock:
        callback_id = next(_ids)
        _callbacks[callback_id] = callback
    return callback_id


def _shapes(avals: Sequence[Any]) -> tuple[tuple[tuple[int, ...], np.dtype], ...]:
    return tuple((tuple(int(d) for d in a.shape), np.dtype(a.dtype)) for a in avals)


def function_name(params: dict[str, Any]) -> str:
    """The user's function behind a callback primitive's parameters, as "module.name"."""
    if "fmt" in params:  # jax.debug.print
        return f"jax.debug.print({params['fmt']!r})"
    function = params.get("callback")
    function = getattr(function, "callback_func", function)  # JAX's flat wrapper
    # jax.debug.callback wraps the user's function in closures of its own.
    for _ in range(4):
        if isinstance(function, functools.partial):
            function = function.func
            continue
        module = getattr(function, "__module__", "") or ""
        inner = [
            cell.cell_contents
            for cell in getattr(function, "__closure__", None) or ()
            if callable(cell.cell_contents)
        ]
        if not module.startswith("jax.") or not inner:
            break
        function = inner[0]
    module = getattr(function, "__module__", None)
    name = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{module}.{name}" if module else name


def refusal_hint(names: Sequence[str]) -> str:
    """What removes the callbacks `names` from a program, where Equinox is known to."""
    if any(name.startswith("equinox.") for name in names):
        return (
            "; Equinox's runtime checks (eqx.error_if, and the checks of diffrax, lineax "
            "and optimistix) become NaNs instead with EQX_ON_ERROR=nan set before tracing"
        )
    return ""


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
        callback = _Callback(run, name, _shapes(ctx.avals_in), _shapes(ctx.avals_out))
        callback_id = _register(callback)
        self.names.append(name)
        lowering = jax.ffi.ffi_lowering(PYTHON_CALLBACK_TARGET, has_side_effect=side_effect)
        return lowering(ctx, *operands, callback_id=np.uint64(callback_id))


def install_dispatcher() -> None:
    """Makes `dispatch` the function that firing callbacks call (the CPU plugin's
    registration of PYTHON_CALLBACK_TARGET does this)."""
    _core.set_python_callback_dispatcher(dispatch)


def _view(buffer: memoryview, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """The buffer as an array, without copying: valid during the call only."""
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if buffer.nbytes != expected:
        raise RuntimeError(
            f"the buffer holds {buffer.nbytes} bytes, where {shape} {dtype} needs {expected}"
        )
    if expected == 0:
        return np.empty(shape, dtype)
    return np.frombuffer(buffer, dtype).reshape(shape)


def _write(callback: _Callback, values: Any, results: list[memoryview]) -> None:
    """Checks the callback's results against the shapes and dtypes it declared (as JAX's
    runtime does) and writes them into the result buffers."""
    values = list(values)
    if len(values) != len(callback.results):
        raise RuntimeError(
            f"the callback returned {len(values)} values, and was declared to return "
            f"{len(callback.results)}"
        )
    for index, (value, (shape, dtype), buffer) in enumerate(
        zip(values, callback.results, results, strict=True)
    ):
        array = np.asarray(value)
        array = array.astype(jax.dtypes.canonicalize_dtype(array.dtype), copy=False)
        if array.shape != shape or array.dtype != dtype:
            raise RuntimeError(
                f"result {index} of the callback is {array.dtype}{list(array.shape)}, and "
                f"was declared {dtype}{list(shape)}"
            )
        if array.size:
            np.copyto(_view(buffer, shape, dtype), array)


def _type_name(error: BaseException) -> str:
    kind = type(error)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def dispatch(callback_id: int, operands: list[memoryview], results: list[memoryview]) -> str | None:
    """Runs the callback `callback_id` on the operand buffers and writes its results;
    returns None, or the message that fails the program's execution. Called by the
    extension's handler with the GIL held."""
    callback = _callbacks.get(callback_id)
    if callback is None:
        return (
            f"the program calls back into Python with the callback id {callback_id}, which "
            "no cyxla.lower of this process made: a program with Python callbacks runs only "
            "in the process that lowered it"
        )
    try:
        # Copies: the function may keep its arguments (jax.debug.callback appending them
        # to a list), and JAX places an aligned NumPy array on its CPU device without
        # copying, while the program reuses its buffers once the call returns.
        arrays = [
            _view(buffer, shape, dtype).copy()
            for buffer, (shape, dtype) in zip(operands, callback.operands, strict=True)
        ]
        _write(callback, callback.run(*arrays), results)
    except BaseException as error:  # any failure fails the call, KeyboardInterrupt too
        return f"the Python callback {callback.name} raised {_type_name(error)}: {error}"
    return None
