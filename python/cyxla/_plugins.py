"""Finding PJRT plugins, choosing one, and the one runtime (plugin + client) of a process."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from cyxla import _core, _custom_calls
from cyxla._errors import PjrtError, PlatformMismatchError, PluginError, PluginNotFoundError

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLATFORM_ENVIRONMENT_VARIABLE",
    "PLUGIN_ENVIRONMENT_VARIABLE",
    "LoadedPlugin",
    "PluginEntry",
    "discover",
    "initialize",
    "loaded",
    "normalize_platform",
]

ENTRY_POINT_GROUP = "cyxla.plugins"
PLUGIN_ENVIRONMENT_VARIABLE = "CYXLA_PJRT_PLUGIN"
PLATFORM_ENVIRONMENT_VARIABLE = "CYXLA_PLATFORM"
#: The order in which installed plugins are preferred when nothing else decides.
PLATFORM_ORDER = ("cpu", "cuda", "rocm", "tpu")

_ALIASES = {"host": "cpu", "gpu": "cuda"}


def normalize_platform(name: str) -> str:
    """The platform name cyxla and `jax.export` use: "cpu", "cuda", "rocm" or "tpu"."""
    lowered = name.strip().lower()
    return _ALIASES.get(lowered, lowered)


@dataclass(frozen=True)
class PluginEntry:
    """A plugin that an entry point of the `cyxla.plugins` group describes."""

    name: str
    platform: str
    create_options: Mapping[str, Any]
    extra: str
    module: ModuleType = field(repr=False)

    def library_path(self) -> str:
        """The plugin library's path; PluginNotFoundError if its package is missing."""
        try:
            return str(self.module.library_path())
        except (ModuleNotFoundError, FileNotFoundError) as error:
            raise PluginNotFoundError(
                f"the {self.platform} plugin '{self.name}' is not installed ({error}); "
                f"install it with: pip install 'cyxla[{self.extra}]'"
            ) from error

    def is_installed(self) -> bool:
        try:
            self.library_path()
        except PluginNotFoundError:
            return False
        return True


def discover() -> list[PluginEntry]:
    """Every plugin entry point installed, newest name first within a platform."""
    entries = []
    for point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        module = point.load()
        entries.append(
            PluginEntry(
                name=point.name,
                platform=normalize_platform(module.PLATFORM),
                create_options=dict(module.CREATE_OPTIONS),
                extra=getattr(module, "EXTRA", point.name),
                module=module,
            )
        )
    entries.sort(key=lambda e: e.name, reverse=True)  # cuda13 before cuda12
    return entries


def entry_for(platform: str) -> PluginEntry:
    """The installed plugin that provides `platform`, or PluginNotFoundError saying what to do."""
    platform = normalize_platform(platform)
    candidates = [e for e in discover() if e.platform == platform]
    for entry in candidates:
        if entry.is_installed():
            return entry
    if candidates:
        extras = " or ".join(f"'cyxla[{e.extra}]'" for e in candidates)
        raise PluginNotFoundError(
            f"no {platform} plugin is installed; install one with: pip install {extras}"
        )
    known = sorted({e.platform for e in discover()})
    raise PluginNotFoundError(
        f"cyxla knows no plugin for the platform '{platform}' (known: {', '.join(known)}); "
        f"pass a library path to cyxla.initialize or set {PLUGIN_ENVIRONMENT_VARIABLE}"
    )


def installed_platforms() -> list[str]:
    """Platforms with an installed plugin, in PLATFORM_ORDER."""
    present = {e.platform for e in discover() if e.is_installed()}
    return [p for p in PLATFORM_ORDER if p in present] + sorted(present - set(PLATFORM_ORDER))


def load_library(path: str | os.PathLike[str]) -> _core.Plugin:
    """Loads (once) and checks the plugin library at `path`, without creating a client."""
    return _core.Plugin.load(str(Path(path).resolve()))


@dataclass(frozen=True)
class LoadedPlugin:
    """The plugin a process runs programs with, and its client."""

    platform: str
    library: str
    options: Mapping[str, Any]
    plugin: _core.Plugin = field(repr=False)
    runtime: _core.Runtime = field(repr=False)

    @property
    def pjrt_version(self) -> tuple[int, int]:
        return self.plugin.version


_lock = threading.Lock()
_loaded: LoadedPlugin | None = None


def loaded() -> LoadedPlugin | None:
    """The plugin this process loaded, or None before the first compile or initialize."""
    return _loaded


def _merge(defaults: Mapping[str, Any], options: Mapping[str, Any] | None) -> dict[str, Any]:
    """`options` added to `defaults`; a value of None removes a default."""
    merged = dict(defaults)
    for name, value in (options or {}).items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    return merged


def _defaults_for(platform: str) -> Mapping[str, Any]:
    """The client options of the installed plugin entry for `platform` ({} if none)."""
    known = [e for e in discover() if e.platform == platform]
    return known[0].create_options if known else {}


def _resolve(
    library: str | os.PathLike[str] | None, platform: str | None
) -> tuple[str, str | None, bool]:
    """The library path, the platform asked for (None: any), and whether the library came
    by path (CYXLA_PJRT_PLUGIN or an argument) rather than from an installed entry."""
    if library is None:
        library = os.environ.get(PLUGIN_ENVIRONMENT_VARIABLE) or None
    if platform is None:
        platform = os.environ.get(PLATFORM_ENVIRONMENT_VARIABLE) or None
    platform = normalize_platform(platform) if platform else None
    if library is not None:
        return str(Path(library).resolve()), platform, True
    if platform is None:
        platforms = installed_platforms()
        if not platforms:
            raise PluginNotFoundError(
                "no PJRT plugin is installed: looked for the entry points of the group "
                f"'{ENTRY_POINT_GROUP}' and {PLUGIN_ENVIRONMENT_VARIABLE}; "
                "install one with: pip install 'cyxla[cpu]'"
            )
        platform = platforms[0]
    return entry_for(platform).library_path(), platform, False


def _create(
    path: str, wanted: str | None, options: Mapping[str, Any] | None, by_path: bool
) -> LoadedPlugin:
    """Loads the library and creates its client with the platform's default options
    merged with `options`."""
    plugin = load_library(path)
    if by_path:
        # The platform of a library given by path is known once it has a client: the
        # first one gets the caller's options alone, and decides which defaults apply.
        first = _merge({}, options)
    else:
        assert wanted is not None, "an installed entry always names its platform"
        first = _merge(_defaults_for(wanted), options)
    runtime = _client(plugin, first)
    actual = normalize_platform(runtime.platform)
    if wanted is not None and actual != wanted:
        raise PluginError(f"the plugin {path} provides the platform '{actual}', not '{wanted}'")
    merged = _merge(_defaults_for(actual), options)
    if merged != first:
        del runtime  # one client at a time: the first is destroyed before the second
        runtime = _client(plugin, merged)
    return LoadedPlugin(actual, path, merged, plugin, runtime)


def _client(plugin: _core.Plugin, options: Mapping[str, Any]) -> _core.Runtime:
    """A client of `plugin`; a failure names the options, the usual cause."""
    try:
        return _core.Runtime.create(plugin, dict(options))
    except PjrtError as error:
        raise type(error)(f"{error} (client options: {dict(options)})") from error


def initialize(
    library: str | os.PathLike[str] | None = None,
    *,
    platform: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> LoadedPlugin:
    """Loads the plugin this process will use and creates its client.

    `library` is a plugin's path (default: `CYXLA_PJRT_PLUGIN`, else the installed plugin
    of `platform`); `platform` is "cpu", "cuda", "rocm" or "tpu" (default:
    `CYXLA_PLATFORM`, else the first installed of those). `options` add to or replace
    the default client options of the platform's plugin; None as a value removes one. A
    process loads one plugin: calling this again with other settings raises PluginError.
    """
    global _loaded
    path, wanted, by_path = _resolve(library, platform)
    with _lock:
        if _loaded is not None:
            same = _loaded.library == path and wanted in (None, _loaded.platform)
            merged = _merge(_defaults_for(_loaded.platform), options)
            if same and (options is None or dict(_loaded.options) == merged):
                return _loaded
            raise PluginError(
                f"a plugin is already loaded ({_loaded.platform}, {_loaded.library}, options "
                f"{dict(_loaded.options)}); cyxla.initialize asked for "
                f"{wanted or 'any platform'}, {path}, options {merged}. A process "
                "uses one plugin: call cyxla.initialize before the first compile_program"
            )
        loaded = _create(path, wanted, options, by_path)
        # Custom calls: jaxlib's handlers, JAX's registrations and cyxla's (_custom_calls).
        _custom_calls.register_on_load(loaded.plugin, loaded.runtime, loaded.platform)
        _loaded = loaded
        return _loaded


def runtime_for(platform: str) -> _core.Runtime:
    """The runtime to run a program for `platform` with, loading the plugin if needed."""
    current = _loaded or initialize(platform=platform)
    if current.platform != platform:
        raise PlatformMismatchError(
            f"the program was lowered for '{platform}', but this process loaded the "
            f"'{current.platform}' plugin ({current.library}); lower it for "
            f"'{current.platform}' (e.g. with jax.default_device) or run it in another process"
        )
    return current.runtime
