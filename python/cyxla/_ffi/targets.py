"""What cyxla knows of one custom-call target: the checks on the arguments of a
registration, the handler pointer taken out of its PyCapsule, and the targets that a
module's StableHLO text calls."""

from __future__ import annotations

import ctypes
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cyxla._platforms import XLA_PLATFORMS, normalize_platform

__all__ = [
    "HOST_CALLBACK_REFUSAL",
    "PYTHON_CALLBACK_TARGETS",
    "Target",
    "custom_calls_of",
    "target_from",
]

#: The targets of JAX's Python host callbacks (`jax.pure_callback`,
#: `jax.experimental.io_callback`, `jax.debug.print`, `jax.debug.callback`).
PYTHON_CALLBACK_TARGETS = frozenset(
    f"{prefix}_python_{device}_callback"
    for prefix in ("xla_ffi", "xla_ffi_partitioned", "xla_buffer", "xla")
    for device in ("cpu", "gpu")
)
#: Why cyxla refuses Python host callbacks: every message that refuses one says this.
HOST_CALLBACK_REFUSAL = (
    "a Python host callback, which needs JAX's own runtime and cannot run on a PJRT plugin"
)
_TARGET_NAME = re.compile(r"[^\"\\\x00-\x1f]+")
_CUSTOM_CALL_OP = re.compile(r'stablehlo\.custom_call\s+@(?:"([^"]+)"|([\w.$-]+))')


@dataclass(frozen=True)
class Target:
    """A target some source asked cyxla to register."""

    name: str
    #: cyxla's platform: "cpu", "cuda" or "rocm".
    platform: str
    #: The XLA_FFI_Handler* of the execute stage; 0 for a target the plugin cannot take.
    handler: int
    traits: int
    #: Who registered it: "jaxlib", "jax.ffi" or "cyxla".
    origin: str
    #: Why no plugin can run it, or None.
    unsupported: str | None = None
    #: The objects that own the handler (capsules), kept alive with the registration.
    owner: Any = field(default=None, repr=False, compare=False)


def target_from(
    name: str, fn: Any, platform: str, api_version: int, traits: int, origin: str
) -> Target:
    """A Target from the arguments of a registration; raises TypeError or ValueError
    for arguments that are wrong whatever the plugin."""
    if not isinstance(name, str) or not _TARGET_NAME.fullmatch(name):
        raise ValueError(f"invalid custom-call target name {name!r}")
    cyxla_platform = normalize_platform(platform)

    def unsupported(reason: str) -> Target:
        return Target(name, cyxla_platform, 0, traits, origin, reason)

    if name in PYTHON_CALLBACK_TARGETS:
        return unsupported(f"it is {HOST_CALLBACK_REFUSAL}")
    if cyxla_platform not in XLA_PLATFORMS:
        raise ValueError(
            f"cannot register '{name}' for the platform '{platform}': custom calls are "
            f"registered for {', '.join(XLA_PLATFORMS)}"
        )
    if api_version != 1:
        return unsupported(
            f"it was registered as an untyped custom call (api_version={api_version}), "
            "and PJRT plugins run only typed XLA FFI handlers (api_version=1)"
        )
    capsule = fn
    if isinstance(fn, Mapping):
        extra = sorted(set(fn) - {"execute"})
        if "execute" not in fn:
            raise ValueError(f"the handler bundle of '{name}' has no 'execute' stage")
        if extra:
            return unsupported(
                f"its handler has the stages {extra} besides 'execute', and the PJRT FFI "
                "extension registers an execute handler only"
            )
        capsule = fn["execute"]
    return Target(name, cyxla_platform, _capsule_pointer(name, capsule), traits, origin, owner=fn)


_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _capsule_pointer(name: str, capsule: Any) -> int:
    """The pointer a PyCapsule holds (whatever the capsule's name)."""
    if type(capsule).__name__ != "PyCapsule":
        raise TypeError(
            f"the handler of '{name}' must be a PyCapsule holding an XLA_FFI_Handler* (for "
            f"example jax.ffi.pycapsule(library.handler)), not {type(capsule).__name__}"
        )
    # A capsule never holds NULL: PyCapsule_New refuses it.
    return int(_get_pointer(capsule, _get_name(capsule)))


def custom_calls_of(text: str) -> list[tuple[str, bool]]:
    """(target, whether it is a typed FFI call) of each custom call in StableHLO text.

    A typed FFI call has api_version 4, or a dictionary as `mhlo.backend_config` (the
    form jax.export writes); untyped calls have a string backend_config."""
    calls = []
    for line in text.splitlines():
        if match := _CUSTOM_CALL_OP.search(line):
            typed = "api_version = 4 " in line or "mhlo.backend_config = {" in line
            calls.append((match.group(1) or match.group(2), typed))
    return calls
