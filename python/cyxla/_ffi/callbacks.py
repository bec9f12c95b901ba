"""Python host callbacks in the programs that `lower` makes: the functions, kept by id,
and what runs them when a program calls back (the lowering is cyxla/_lower/callbacks.py).

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

import numpy as np

from cyxla import _core

__all__ = [
    "PYTHON_CALLBACK_TARGET",
    "Callback",
    "dispatch",
    "function_name",
    "install_dispatcher",
    "refusal_hint",
    "register",
]

#: The custom-call target of every Python callback in a program that `lower` made.
PYTHON_CALLBACK_TARGET: str = _core.PYTHON_CALLBACK_TARGET


@dataclass(frozen=True)
class Callback:
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
_callbacks: dict[int, Callback] = {}
_ids = itertools.count(1)


def register(callback: Callback) -> int:
    """Keeps `callback` for the life of the process; its id."""
    with _lock:
        callback_id = next(_ids)
        _callbacks[callback_id] = callback
    return callback_id


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


def _write(callback: Callback, values: Any, results: list[memoryview]) -> None:
    """Checks the callback's results against the shapes and dtypes it declared (as JAX's
    runtime does) and writes them into the result buffers."""
    import jax

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
        # JAX is imported: a callback exists only once `lower` made it.
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
