"""The checks that explain a custom call a plugin cannot run: Python host callbacks,
untyped calls and targets recorded as unsupported when a program is lowered, and
rejected or missing handlers when it is compiled."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from cyxla import _core
from cyxla._errors import CompileError, UnsupportedProgramError
from cyxla._ffi import registry
from cyxla._ffi.callbacks import PYTHON_CALLBACK_TARGET, function_name, refusal_hint
from cyxla._ffi.plugin import MISSING_FFI
from cyxla._ffi.sources import jaxlib_targets, prepare_jaxlib
from cyxla._ffi.targets import HOST_CALLBACK_REFUSAL, PYTHON_CALLBACK_TARGETS, custom_calls_of

__all__ = [
    "XLA_BUILTIN_TARGETS",
    "check_lowered",
    "check_program",
    "explain_compile_errors",
    "explain_export_error",
    "trusted_targets",
]

#: Custom calls that XLA expands itself, whatever their api_version (the core's list,
#: which the native loader checks too).
XLA_BUILTIN_TARGETS = frozenset(_core.XLA_BUILTIN_TARGETS)

#: The JAX primitives of Python host callbacks, and the API a user wrote.
_CALLBACK_PRIMITIVES = {
    "pure_callback": "jax.pure_callback",
    "io_callback": "jax.experimental.io_callback",
    "debug_callback": "jax.debug.callback",
    "debug_print": "jax.debug.print",
}
_MISSING_UNTYPED = re.compile(r"No registered implementation for untyped custom call to (\S+)")


def trusted_targets(platform: str) -> frozenset[str]:
    """Targets that `lower` lets through jax.export's checks without being named: the
    handlers cyxla registers from jaxlib, and its own of Python callbacks."""
    if platform != "cpu":
        return frozenset()
    return frozenset({*jaxlib_targets(), PYTHON_CALLBACK_TARGET})


def check_lowered(text: str, function: str, platform: str) -> None:
    """Raises UnsupportedProgramError for a custom call in `text`, a program for
    `platform`, that no plugin runs."""
    for target, typed in custom_calls_of(text):
        if target in XLA_BUILTIN_TARGETS:
            continue
        if target in PYTHON_CALLBACK_TARGETS:
            raise UnsupportedProgramError(
                f"{function} calls the custom-call target '{target}', {HOST_CALLBACK_REFUSAL}"
            )
        if not typed:
            raise UnsupportedProgramError(
                f"{function} calls '{target}' as an untyped custom call; PJRT plugins run "
                "only typed XLA FFI handlers (jax.ffi.ffi_call with its default "
                "custom_call_api_version=4, registered with api_version=1)"
            )
        if (reason := registry.unsupported_reason(platform, target)) is not None:
            raise UnsupportedProgramError(f"{function} calls '{target}': {reason}")


def explain_export_error(error: Exception, function: str, trace: Callable[[], Any]) -> None:
    """Raises UnsupportedProgramError from `error`, a failure of jax.export, when the
    function uses Python host callbacks that cyxla did not lower itself (found in the
    jaxpr that `trace` makes: on a platform other than the CPU) or custom calls that
    nobody named; returns otherwise."""
    message = str(error)
    if isinstance(error, NotImplementedError) and "host_callbacks" in message:
        try:
            callbacks = list(_callbacks(trace()))
        except Exception:  # tracing again failed: fall back to the caller's message
            return
        apis = sorted({api for api, _ in callbacks})
        if apis:
            names = list(dict.fromkeys(name for _, name in callbacks))
            raise UnsupportedProgramError(
                f"{function} uses {' and '.join(apis)} ({', '.join(names)}): cyxla runs "
                "Python host callbacks on the CPU plugin only, in the process that lowered "
                "them, and elsewhere they need JAX's own runtime (JAX lowers them to the "
                "custom-call target 'xla_ffi_python_cpu_callback', on GPUs "
                f"'xla_ffi_python_gpu_callback'){refusal_hint(names)}"
            ) from error
    if "custom calls whose targets have no compatibility guarantees" in message:
        names = sorted(set(re.findall(r'stablehlo\.custom_call @"?([\w.$-]+)', message)))
        raise UnsupportedProgramError(
            f"{function} calls the custom-call targets {names}, which jax.export does not "
            "trust; name those that have a registered handler in "
            f"cyxla.lower(..., custom_calls={names})"
        ) from error


def _callbacks(jaxpr: Any) -> Iterator[tuple[str, str]]:
    """The API and the function of each Python callback in `jaxpr` and the jaxprs its
    equations hold."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)  # a ClosedJaxpr holds a Jaxpr
    for equation in jaxpr.eqns:
        if (api := _CALLBACK_PRIMITIVES.get(equation.primitive.name)) is not None:
            yield api, function_name(equation.params)
        for value in equation.params.values():
            for item in value if isinstance(value, tuple | list) else (value,):
                if hasattr(getattr(item, "jaxpr", item), "eqns"):
                    yield from _callbacks(item)


def check_program(targets: Iterable[str], platform: str) -> None:
    """Raises UnsupportedProgramError for a target that the loaded plugin of `platform`
    is known not to run, and readies jaxlib's handlers that the others need. A program
    that calls none but XLA's own imports nothing of JAX's."""
    targets = [t for t in targets if t not in XLA_BUILTIN_TARGETS]
    if not targets:
        return
    registry.register_missing(targets)
    prepare_jaxlib(targets)
    for target in targets:
        if (error := registry.registration_error(target)) is not None:
            raise UnsupportedProgramError(error)
        if (reason := registry.unsupported_reason(platform, target)) is not None:
            raise UnsupportedProgramError(f"'{target}': {reason}")


@contextlib.contextmanager
def explain_compile_errors() -> Iterator[None]:
    """Turns the plugin's "no handler" compile errors into UnsupportedProgramError naming
    the target; `check_program` ran before."""
    try:
        yield
    except CompileError as error:
        message = str(error)
        if match := MISSING_FFI.search(message):
            raise UnsupportedProgramError(
                f"no XLA FFI handler is registered for the custom-call target "
                f"'{match.group(1)}' on the {match.group(2)} plugin: register one with "
                "jax.ffi.register_ffi_target or cyxla.register_ffi_target"
            ) from error
        if match := _MISSING_UNTYPED.search(message):
            raise UnsupportedProgramError(
                f"'{match.group(1)}' is an untyped custom call, which PJRT plugins do not "
                "run; only typed XLA FFI handlers (api_version=1) can be registered"
            ) from error
        raise
