"""The table of custom-call targets that programs call, and the public functions that
fill it and register it with the loaded plugin (`register_on_load`, called by
`cyxla._run.backend.initialize`). The first handler of a name wins, as in XLA."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from cyxla import _core
from cyxla._errors import UnsupportedProgramError
from cyxla._ffi import plugin as ffi_plugin
from cyxla._ffi.plugin import Registration, newer
from cyxla._ffi.sources import (
    cyxla_lapack_targets,
    cyxla_targets,
    jax_held_targets,
    jax_imported,
    jaxlib_targets,
    mirroring_enabled,
    scipy_lapack,
)
from cyxla._ffi.targets import Target, target_from

__all__ = [
    "record",
    "register_ffi_target",
    "register_jax_targets",
    "register_missing",
    "register_on_load",
    "register_with_loaded",
    "registration_error",
    "registrations",
    "unsupported_reason",
]

#: Held while the table or the registrations change.
lock = threading.RLock()
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


def register_ffi_target(
    name: str,
    target: Any,
    platform: str = "cpu",
    api_version: int = 1,
    *,
    traits: int = 0,
) -> None:
    """Registers a typed XLA FFI handler as the custom-call target `name`.

    Takes the arguments of `jax.ffi.register_ffi_target`. The handler is registered with
    the plugin now if the plugin of `platform` is loaded, and when it loads otherwise. A
    target the plugin cannot take (api_version 0, or stages beyond `execute`) is
    recorded, and `lower` and `compile_program` name it in the error they raise for a
    program that calls it. Registering the same handler again does nothing.

    Args:
        name: The custom-call target, as programs call it.
        target: A PyCapsule that holds an `XLA_FFI_Handler*` (for example from
            `jax.ffi.pycapsule`), or a dict from stage names to capsules.
        platform: "cpu", "cuda" or "rocm".
        api_version: 1, the typed FFI (0, the untyped one, is recorded as unusable).
        traits: XLA FFI handler traits.

    Raises:
        UnsupportedProgramError: the loaded plugin rejects the handler; the message
            names the XLA FFI versions of the handler and of the plugin.
        ValueError: another handler is registered under `name` already.
    """
    entry = target_from(name, target, platform, api_version, int(traits), origin="cyxla")
    with lock:
        existing = _targets.get((entry.platform, name))
        if existing is not None and existing.handler != entry.handler:
            raise ValueError(
                f"the custom-call target '{name}' ({entry.platform}) already has a handler, "
                f"registered by {existing.origin}; XLA keeps the first handler of a name, so "
                "register the new one under another name"
            )
        _targets[(entry.platform, name)] = entry
        results = register_with_loaded([entry])
    failed = [r for r in results if r.error is not None]
    if failed:
        raise UnsupportedProgramError(failed[0].error)


def register_jax_targets() -> list[str]:
    """Registers jaxlib's CPU handlers and every typed FFI target that JAX holds.

    This is what loading a plugin does; call it by hand after registering targets with
    JAX when `CYXLA_MIRROR_JAX=0`. Registers with the loaded plugin, or records the
    targets for the plugin when none is loaded yet. Raises UnsupportedProgramError when
    the loaded plugin rejects one, except a handler built against a newer XLA FFI than
    the plugin runs (jax 0.12's own, beside the 0.11.2 CPU plugin): that one is refused
    only when a program calls it, naming both versions. Returns the names of the
    targets it registered.
    """
    with lock:
        entries = record([*jaxlib_targets().values(), *jax_held_targets()])
        results = register_with_loaded(entries)
    failed = [
        r
        for r in results
        if r.error is not None and not newer(r.handler_ffi_version, r.plugin_ffi_version)
    ]
    if failed:
        raise UnsupportedProgramError("; ".join(r.error or "" for r in failed))
    return sorted({e.name for e in entries if e.unsupported is None})


def registrations() -> dict[str, Registration]:
    """The targets the loaded plugin holds (or rejected), by name."""
    with lock:
        return dict(_registered)


def registration_error(name: str) -> str | None:
    """Why the loaded plugin rejected the target `name`, or None."""
    with lock:
        registration = _registered.get(name)
    return None if registration is None else registration.error


def unsupported_reason(platform: str, name: str) -> str | None:
    """Why no plugin of `platform` can run the recorded target `name`, or None."""
    with lock:
        entry = _targets.get((platform, name))
    return None if entry is None else entry.unsupported


def register_on_load(plugin: _core.Plugin, runtime: _core.Runtime, platform: str) -> None:
    """Registers what the newly loaded plugin of `platform` should hold: the targets
    recorded so far and, once JAX is imported, cyxla's handler of Python callbacks,
    jaxlib's CPU handlers and the targets JAX holds (when mirroring); a process that has
    not imported JAX gets those when a program first calls a target the plugin does not
    hold (`register_missing`). Rejections are recorded, not raised: a program that needs
    one raises at compile."""
    global _loaded
    entries = _jax_sources(platform) if jax_imported() else []
    with lock:
        record(entries)
        _loaded = _Loaded(plugin, runtime, platform)
        if platform == "cpu":
            _hold_cyxla_lapack(plugin)
        register_with_loaded(list(_targets.values()))


def _hold_cyxla_lapack(plugin: _core.Plugin) -> None:
    """Records cyxla's LAPACK handlers, which the core registered as the plugin's runtime
    was created, as the plugin's: XLA keeps the first handler of a name, and jaxlib's of
    these names are then never registered. Their LAPACK is SciPy's OpenBLAS where SciPy
    is installed, the library jaxlib's handlers call. Called with `lock` held."""
    if (library := scipy_lapack()) is not None:
        _core.prefer_lapack_library(library)
    version = _core._ffi_version(plugin)
    for name in cyxla_lapack_targets():
        if _core.has_ffi_handler(plugin, name):
            _registered[name] = Registration(name, "cyxla", version, version, None)


def register_missing(targets: list[str]) -> None:
    """Registers jaxlib's CPU handlers and the targets JAX holds with the loaded plugin
    when it does not hold one of `targets` (custom calls that are not XLA's own) yet:
    where JAX was not imported when the plugin loaded, the first program that calls one
    imports it."""
    with lock:
        if _loaded is None or all(t in _registered for t in targets):
            return
        platform = _loaded.platform
    entries = _jax_sources(platform)
    with lock:
        record(entries)
        register_with_loaded(list(_targets.values()))


def _jax_sources(platform: str) -> list[Target]:
    """What a process that imported JAX gives the plugin of `platform`: cyxla's handler
    of Python callbacks (which only `lower` makes programs call), jaxlib's handlers and
    the targets JAX holds (when mirroring)."""
    entries: list[Target] = cyxla_targets(platform)
    if platform == "cpu":
        entries += jaxlib_targets().values()
    if mirroring_enabled():
        entries += jax_held_targets()
    return entries


def record(entries: list[Target]) -> list[Target]:
    """Adds `entries` to the table where their names are new, and returns the entries
    the table holds under their names: the first handler of a name wins, as in XLA.
    Called with `lock` held."""
    return [_targets.setdefault((e.platform, e.name), e) for e in entries]


def register_with_loaded(entries: list[Target]) -> list[Registration]:
    """Registers those of `entries` that are for the loaded plugin's platform with it
    (none before it loads), and records the results. Called with `lock` held."""
    if _loaded is None:
        return []
    wanted = [e for e in entries if e.platform == _loaded.platform]
    results = ffi_plugin.register(
        _loaded.plugin, _loaded.runtime, _loaded.platform, wanted, _registered
    )
    _registered.update(results)
    return list(results.values())
