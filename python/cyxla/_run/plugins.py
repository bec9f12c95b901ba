"""Finding PJRT plugins and loading their libraries: the entry points of the `cyxla.plugins`
group, the choice among them, and `dlopen` of one (clients are `backend`'s)."""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from cyxla import _core
from cyxla._errors import PluginNotFoundError
from cyxla._platforms import CLIENT_DEFAULTS, PLATFORM_ORDER, normalize_platform
from cyxla._run import plugin_scans as scans

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLATFORM_ENVIRONMENT_VARIABLE",
    "PLUGIN_ENVIRONMENT_VARIABLE",
    "PluginEntry",
    "defaults_for",
    "discover",
    "entry_for",
    "installed_platforms",
    "load_library",
    "resolve",
]

ENTRY_POINT_GROUP = "cyxla.plugins"
PLUGIN_ENVIRONMENT_VARIABLE = "CYXLA_PJRT_PLUGIN"
PLATFORM_ENVIRONMENT_VARIABLE = "CYXLA_PLATFORM"


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
        """Whether the package that ships the plugin's library is installed."""
        try:
            self.library_path()
        except PluginNotFoundError:
            return False
        return True


def discover() -> list[PluginEntry]:
    """Every plugin entry point installed, newest name first within a platform.

    Scanned once per process, and what a scan finds is kept in the disk cache until a
    directory of `sys.path` changes (`cyxla._run.plugin_scans`): the scan reads the metadata
    of every installed distribution. A plugin installed while a process runs is found
    by the next process."""
    return list(_scan())


@functools.cache
def _scan() -> tuple[PluginEntry, ...]:
    document = scans.source(ENTRY_POINT_GROUP)
    points = scans.load(document)
    if points is not None:
        try:
            return _entries(points)
        except ImportError:  # a plugin removed without the directories changing: scan
            pass
    from importlib import metadata

    points = [(p.name, p.value) for p in metadata.entry_points(group=ENTRY_POINT_GROUP)]
    entries = _entries(points)
    scans.store_points(document, points)
    return entries


def _load_entry_point(value: str) -> Any:
    """What an entry point's value ("package.module" or "package.module:attribute")
    names, loaded as `importlib.metadata.EntryPoint.load` does: without importing
    importlib.metadata, which a warm scan cache spares (a tenth of a lean start)."""
    module_name, _, attributes = value.partition(":")
    loaded: Any = importlib.import_module(module_name.strip())
    for attribute in filter(None, attributes.strip().split(".")):
        loaded = getattr(loaded, attribute)
    return loaded


def _entries(points: list[tuple[str, str]]) -> tuple[PluginEntry, ...]:
    entries = []
    for name, value in points:
        module = _load_entry_point(value)
        platform = normalize_platform(module.PLATFORM)
        # An entry's own options, or else its platform's defaults.
        options = getattr(module, "CREATE_OPTIONS", CLIENT_DEFAULTS.get(platform, {}))
        entries.append(
            PluginEntry(
                name=name,
                platform=platform,
                create_options=dict(options),
                extra=getattr(module, "EXTRA", name),
                module=module,
            )
        )
    entries.sort(key=lambda e: e.name, reverse=True)  # cuda13 before cuda12
    return tuple(entries)


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


def defaults_for(platform: str) -> Mapping[str, Any]:
    """The client options of the installed plugin entry for `platform` ({} if none)."""
    known = [e for e in discover() if e.platform == platform]
    return known[0].create_options if known else {}


def resolve(
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
