"""Mirroring `jax.ffi.register_ffi_target`: a wrapper around the function it calls
(`xla_client.register_custom_call_target`) records each later registration in cyxla's
table and registers it with the loaded plugin. `cyxla/__init__.py` installs it unless
`CYXLA_MIRROR_JAX=0`; JAX's own behaviour is unchanged."""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any

from cyxla._ffi import registry
from cyxla._ffi.sources import jax_imported, mirroring_enabled
from cyxla._ffi.targets import target_from

__all__ = ["follow_jax", "mirror_jax_registrations"]


def follow_jax() -> None:
    """Mirrors JAX's later registrations once JAX is imported, unless `CYXLA_MIRROR_JAX=0`
    (cyxla's import and each plugin load ask; the registrations JAX made before are read
    from JAX when the plugin loads or a program calls a target it does not hold)."""
    if mirroring_enabled() and jax_imported():
        mirror_jax_registrations()


def mirror_jax_registrations() -> None:
    """Mirrors every later `jax.ffi.register_ffi_target` to cyxla (`cyxla/__init__.py`
    calls this unless `CYXLA_MIRROR_JAX=0`). JAX's own behaviour is unchanged: the wrapper
    calls through to the function it replaces first. Idempotent. Imports JAX."""
    from cyxla._jax.jaxlib import xla_client

    current = xla_client.register_custom_call_target
    if getattr(current, "_cyxla_mirror", False):
        return
    signature = inspect.signature(current)

    @functools.wraps(current)
    def register_custom_call_target(*args: Any, **kwargs: Any) -> Any:
        result = current(*args, **kwargs)
        try:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            _mirror(**bound.arguments)
        except Exception as error:  # never break JAX's registration
            warnings.warn(
                f"cyxla could not mirror a JAX FFI registration: {error}",
                RuntimeWarning,
                stacklevel=2,
            )
        return result

    register_custom_call_target._cyxla_mirror = True  # type: ignore[attr-defined]
    xla_client.register_custom_call_target = register_custom_call_target


def _mirror(
    name: str, fn: Any, platform: str = "cpu", api_version: int = 0, traits: Any = 0, **_: Any
) -> None:
    """Records one registration that JAX just took, and registers it with the plugin."""
    entry = target_from(name, fn, platform, api_version, int(traits), origin="jax.ffi")
    with registry.lock:
        (kept,) = registry.record([entry])
        results = registry.register_with_loaded([kept])
    if kept.handler != entry.handler:
        warnings.warn(
            f"cyxla keeps the handler of the custom-call target '{name}' that "
            f"{kept.origin} registered first, and ignores the one jax.ffi just registered",
            RuntimeWarning,
            stacklevel=4,
        )
    for registration in results:
        if registration.error is not None:
            warnings.warn(registration.error, RuntimeWarning, stacklevel=4)
