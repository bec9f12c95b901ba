"""Custom calls: the table of typed XLA FFI handlers that programs call, and the public
functions that fill it and register it with the plugin.

Three sources feed the table (see `_ffi_sources` for the first two):

- jaxlib's CPU kernels (`jaxlib.cpu._lapack`, `jaxlib.cpu._sparse`, ...), which
  `jnp.linalg` and `jax.scipy.linalg` call; registered whenever a CPU plugin loads;
- `jax.ffi.register_ffi_target`, mirrored: importing cyxla wraps the function that it
  calls (`xla_client.register_custom_call_target`), and loading the plugin registers the
  targets that JAX already holds (unless `CYXLA_MIRROR_JAX=0`);
- `cyxla.register_ffi_target`, for libraries that do not use JAX.

`_ffi_plugin` registers and verifies the targets with the plugin; `_ffi_checks` explains
the custom calls that a plugin cannot run when a program is lowered or compiled.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
import warnings
from dataclasses import dataclass
from typing import Any

from jax._src.lib import xla_client

from cyxla import _core, _ffi_plugin
from cyxla._errors import UnsupportedProgramError
from cyxla._ffi_plugin import Registration
from cyxla._ffi_sources import jax_held_targets, jaxlib_targets
from cyxla._ffi_targets import Target, target_from

__all__ = [
    "MIRROR_ENVIRONMENT_VARIABLE",
    "mirror_jax_registrations",
    "mirroring_enabled",
    "register_ffi_target",
    "register_jax_targets",
    "register_on_load",
    "registration_error",
    "registrations",
    "unsupported_reason",
]

#: Set to "0" to keep cyxla from mirroring the FFI registrations of JAX.
MIRROR_ENVIRONMENT_VARIABLE = "CYXLA_MIRROR_JAX"

_lock = threading.RLock()
#: Every target known, by (platform, name); the first handler of a name wins, as in XLA.
_targets: dict[tuple[str, str], Target] = {}
#: Targets as the loaded plugin holds them, by name.
_registered: dict[str, Registration] = {}


@dataclass(frozen=True)
class _Loaded:
    """The plugin that registrations go to, set when it loads."""

    plugin: _core.Plugin
    runtime: _core.Runtime
    platform: str


_loaded: _Loaded | None = None


def mirroring_enabled() -> bool:
    """Whether cyxla mirrors JAX's FFI registrations (`CYXLA_MIRROR_JAX` is not 0)."""
    value = os.environ.get(MIRROR_ENVIRONMENT_VARIABLE, "1").strip().lower()
    return value not in ("0", "false", "no", "off")


def register_ffi_target(
    name: str,
    target: Any,
    platform: str = "cpu",
    api_version: int = 1,
    *,
    traits: int = 0,
) -> None:
    """Registers a typed XLA FFI handler as the custom-call target `name`.

    Takes the arguments of `jax.ffi.register_ffi_target`: `target` is a PyCapsule that
    holds an `XLA_FFI_Handler*` (for example from `jax.ffi.pycapsule`), or a dict from
    stage names to capsules; `platform` is "cpu", "cuda" or "rocm"; `api_version` must be
    1 (the typed FFI); `traits` are XLA FFI handler traits. The handler is registered
    with the plugin now if the plugin of `platform` is loaded, and when it loads
    otherwise.

    A handler that the loaded plugin rejects raises UnsupportedProgramError, naming the
    XLA FFI versions of the handler and of the plugin. A target the plugin cannot take
    (api_version 0, or stages beyond `execute`) is recorded, and `lower` and
    `compile_program` name it in the error they raise for a program that calls it.
    Registering another handler under a name that already has one raises ValueError.
    """
    entry = target_from(name, target, platform, api_version, int(traits), origin="cyxla")
    with _lock:
        existing = _targets.get((entry.platform, name))
        if existing is not None and existing.handler != entry.handler:
            raise ValueError(
                f"the custom-call target '{name}' ({entry.platform}) already has a handler, "
                f"registered by {existing.origin}; XLA keeps the first handler of a name, so "
                "register the new one under another name"
            )
        _targets[(entry.platform, name)] = entry
        results = _register_with_loaded([entry])
    failed = [r for r in results if r.error is not None]
    if failed:
        raise UnsupportedProgramError(failed[0].error)


def register_jax_targets() -> list[str]:
    """Registers jaxlib's CPU handlers and every typed FFI target that JAX holds.

    This is what loading a plugin does; call it by hand after registering targets with
    JAX when `CYXLA_MIRROR_JAX=0`. Registers with the loaded plugin, or records the
    targets for the plugin when none is loaded yet. Raises UnsupportedProgramError when
    the loaded plugin rejects one. Returns the names of the targets it registered.
    """
    with _lock:
        entries = _record([*jaxlib_targets().values(), *jax_held_targets()])
        results = _register_with_loaded(entries)
    failed = [r for r in results if r.error is not None]
    if failed:
        raise UnsupportedProgramError("; ".join(r.error or "" for r in failed))
    return sorted({e.name for e in entries if e.unsupported is None})


def mirror_jax_registrations() -> None:
    """Mirrors every later `jax.ffi.register_ffi_target` to cyxla (importing cyxla does
    this unless `CYXLA_MIRROR_JAX=0`). JAX's own behaviour is unchanged: the wrapper
    calls through to the function it replaces first. Idempotent."""
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


def registrations() -> dict[str, Registration]:
    """The targets the loaded plugin holds (or rejected), by name."""
    with _lock:
        return dict(_registered)


def registration_error(name: str) -> str | None:
    """Why the loaded plugin rejected the target `name`, or None."""
    with _lock:
        registration = _registered.get(name)
    return None if registration is None else registration.error


def unsupported_reason(platform: str, name: str) -> str | None:
    """Why no plugin of `platform` can run the recorded target `name`, or None."""
    with _lock:
        entry = _targets.get((platform, name))
    return None if entry is None else entry.unsupported


def register_on_load(plugin: _core.Plugin, runtime: _core.Runtime, platform: str) -> None:
    """Registers what the newly loaded plugin of `platform` should hold: jaxlib's CPU
    handlers, the targets JAX holds (when mirroring), and those recorded so far.
    Rejections are recorded, not raised: a program that needs one raises at compile."""
    global _loaded
    entries: list[Target] = []
    if platform == "cpu":
        entries += jaxlib_targets().values()
    if mirroring_enabled():
        entries += jax_held_targets()
    with _lock:
        _record(entries)
        _loaded = _Loaded(plugin, runtime, platform)
        _register_with_loaded(list(_targets.values()))


def _record(entries: list[Target]) -> list[Target]:
    """Adds `entries` to the table where their names are new, and returns the entries
    the table holds under their names: the first handler of a name wins, as in XLA.
    Called with `_lock` held."""
    return [_targets.setdefault((e.platform, e.name), e) for e in entries]


def _register_with_loaded(entries: list[Target]) -> list[Registration]:
    """Registers those of `entries` that are for the loaded plugin's platform with it
    (none before it loads), and records the results. Called with `_lock` held."""
    if _loaded is None:
        return []
    wanted = [e for e in entries if e.platform == _loaded.platform]
    results = _ffi_plugin.register(
        _loaded.plugin, _loaded.runtime, _loaded.platform, wanted, _registered
    )
    _registered.update(results)
    return list(results.values())


def _mirror(
    name: str, fn: Any, platform: str = "cpu", api_version: int = 0, traits: Any = 0, **_: Any
) -> None:
    """Records one registration that JAX just took, and registers it with the plugin."""
    entry = target_from(name, fn, platform, api_version, int(traits), origin="jax.ffi")
    with _lock:
        (kept,) = _record([entry])
        results = _register_with_loaded([kept])
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


if mirroring_enabled():
    mirror_jax_registrations()
