"""Registering custom-call targets with a loaded plugin, and verifying them: XLA drops
the error of a registration it rejects, so a probe program that calls each new target
is compiled, and a rejected target is recorded with the XLA FFI versions of both sides.
The probe's verdict is kept in the disk cache (`cyxla._ffi.probes`): a later load of
the same plugin with the same handlers reads it instead of compiling again."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cyxla import _core
from cyxla._errors import CompileError
from cyxla._ffi import probes
from cyxla._ffi.targets import Target
from cyxla._platforms import XLA_PLATFORMS

__all__ = ["MISSING_FFI", "Registration", "newer", "register"]

#: The plugin's compile error for a custom call with no handler: (target, XLA platform).
MISSING_FFI = re.compile(r"No FFI handler registered for (\S+) on a platform (\S+)")


@dataclass(frozen=True)
class Registration:
    """A target as the loaded plugin holds it."""

    name: str
    origin: str
    #: The XLA FFI API version the handler was built with, as its metadata says.
    handler_ffi_version: tuple[int, int] | None
    #: The XLA FFI API version of the plugin's XLA.
    plugin_ffi_version: tuple[int, int] | None
    #: Why the plugin does not run the target, or None when it does.
    error: str | None


def register(
    plugin: _core.Plugin,
    runtime: _core.Runtime,
    platform: str,
    entries: list[Target],
    registered: Mapping[str, Registration],
) -> dict[str, Registration]:
    """Registers those of `entries` that the plugin does not hold yet (`registered`
    says what it holds), then verifies them all with one probe compile (one more per
    rejected target). Returns the registration of each entry the plugin can take."""
    results: dict[str, Registration] = {}
    versions: dict[str, tuple[Any, Any]] = {}
    for entry in entries:
        if entry.unsupported is not None or entry.name in results:
            continue
        if entry.name in registered:
            results[entry.name] = registered[entry.name]
            continue
        try:
            versions[entry.name] = _core.register_ffi_handler(
                plugin, entry.name, entry.handler, XLA_PLATFORMS[platform], entry.traits
            )
        except Exception as error:  # the handler refused its metadata call, or no FFI
            results[entry.name] = Registration(
                entry.name, entry.origin, None, None, _rejected(entry, str(error))
            )
    if not versions:
        return results
    by_name = {e.name: e for e in entries}
    document = probes.source(plugin, [(n, by_name[n].origin, versions[n]) for n in versions])
    known = None if document is None else probes.load(document)
    if known is not None:
        reasons = known
    else:
        reasons, complete = _verify(plugin, runtime, versions)
        if complete and document is not None:
            probes.store_verdict(document, reasons)
    for name in versions:
        reason = reasons.get(name)
        rejected = None if reason is None else _rejected(by_name[name], reason)
        results[name] = Registration(name, by_name[name].origin, *versions[name], rejected)
    return results


def _verify(
    plugin: _core.Plugin, runtime: _core.Runtime, versions: Mapping[str, tuple[Any, Any]]
) -> tuple[dict[str, str], bool]:
    """Why the plugin does not run each target of `versions` that it does not, found by
    probe compiles (one, and one more per rejection), and whether that is XLA's verdict
    (False when a probe itself failed, which rejects the targets not yet verified)."""
    reasons: dict[str, str] = {}
    pending = list(versions)
    while pending:
        try:
            missing = _probe(plugin, runtime, pending)
        except Exception as error:  # the probe itself failed: nothing is verified
            reasons.update((name, f"the probe compile failed: {error}") for name in pending)
            return reasons, False
        if missing is None:
            break
        # XLA rejects every handler newer than itself: drop them all with the first.
        plugin_version = versions[missing][1]
        too_new = [n for n in pending if newer(versions[n][0], plugin_version)]
        for name in too_new if missing in too_new else [missing]:
            reasons[name] = f"XLA rejected it{_version_reason(*versions[name])}"
            pending.remove(name)
    return reasons, True


def _probe(plugin: _core.Plugin, runtime: _core.Runtime, names: list[str]) -> str | None:
    """Compiles a program that calls each target of `names` and returns the first one
    the plugin has no handler for, or None when it has them all."""
    calls = "".join(
        f'    stablehlo.custom_call @"{name}"() '
        "{api_version = 4 : i32, has_side_effect = true} : () -> ()\n"
        for name in names
    )
    text = f"module @cyxla_ffi_probe {{\n  func.func public @main() {{\n{calls}    return\n  }}\n}}"
    from cyxla._jax.jaxlib import xla_client  # imported where used, as all of JAX
    from cyxla._jax.stablehlo import serialize, stablehlo_target_of

    code = serialize(text, stablehlo_target_of(plugin))
    options = xla_client.CompileOptions().SerializeAsString()
    try:
        runtime.compile(code, options, [])
    except CompileError as error:
        match = MISSING_FFI.search(str(error))
        if match is None or match.group(1) not in names:
            raise
        return match.group(1)
    return None


def newer(handler: Any, plugin: Any) -> bool:
    """Whether a handler of XLA FFI version `handler` is newer than the plugin's XLA."""
    return handler is not None and plugin is not None and tuple(handler) > tuple(plugin)


def _version_text(version: Any) -> str:
    return "unknown" if version is None else f"{version[0]}.{version[1]}"


def _version_reason(handler: Any, plugin: Any) -> str:
    """Why XLA may have rejected a handler, from the two XLA FFI versions."""
    text = (
        f" (handler built against XLA FFI {_version_text(handler)}, "
        f"plugin's XLA FFI {_version_text(plugin)})"
    )
    if newer(handler, plugin):
        return (
            f"{text}: the handler is newer than the plugin; install a plugin built from "
            "an XLA at least as new as the library that built the handler"
        )
    return f"{text}: another handler may hold the name in the plugin"


def _rejected(entry: Target, reason: str) -> str:
    source = {
        "jaxlib": "jaxlib's",
        "jax.ffi": "the jax.ffi.register_ffi_target",
        "cyxla": "the cyxla.register_ffi_target",
    }[entry.origin]
    return (
        f"the {entry.platform} plugin does not run {source} handler of the custom-call "
        f"target '{entry.name}': {reason}"
    )
