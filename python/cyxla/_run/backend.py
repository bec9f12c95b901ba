"""The one backend of a process: the plugin it loaded, its client, and the custom calls
registered with it. `initialize` is where a plugin is loaded and then given its custom
calls; everything that runs programs asks this module for the runtime."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cyxla import _core
from cyxla._errors import PjrtError, PlatformMismatchError, PluginError
from cyxla._ffi import mirror, registry, sources
from cyxla._platforms import normalize_platform
from cyxla._run import compat, plugins

__all__ = ["LoadedPlugin", "initialize", "library_identity", "loaded", "runtime_for"]


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
        """The plugin's PJRT C API version, (major, minor)."""
        return self.plugin.version


_lock = threading.Lock()
_loaded: LoadedPlugin | None = None
#: Whether jaxlib was checked against the loaded plugin: at load when JAX is imported
#: by then, otherwise at the first compile after it is (`_check_jaxlib`).
_jaxlib_checked = False


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


def _create(
    path: str, wanted: str | None, options: Mapping[str, Any] | None, by_path: bool
) -> LoadedPlugin:
    """Loads the library and creates its client with the platform's default options
    merged with `options`."""
    plugin = plugins.load_library(path)
    if by_path:
        # The platform of a library given by path is known once it has a client: the
        # first one gets the caller's options alone, and decides which defaults apply.
        first = _merge({}, options)
    else:
        assert wanted is not None, "an installed entry always names its platform"
        first = _merge(plugins.defaults_for(wanted), options)
    runtime = _client(plugin, first)
    actual = normalize_platform(runtime.platform)
    if wanted is not None and actual != wanted:
        raise PluginError(f"the plugin {path} provides the platform '{actual}', not '{wanted}'")
    merged = _merge(plugins.defaults_for(actual), options)
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


def _check_arguments(library: Any, platform: Any, options: Any) -> None:
    """TypeError, naming the argument, for what `initialize` cannot take."""
    if library is not None and not isinstance(library, (str, os.PathLike)):
        raise TypeError(
            "initialize: library must be a path (str or os.PathLike) or None, given "
            f"{type(library).__name__} {library!r}"
        )
    if platform is not None and not isinstance(platform, str):
        raise TypeError(
            'initialize: platform must be a str ("cpu", "cuda", "rocm" or "tpu") or None, '
            f"given {type(platform).__name__} {platform!r}"
        )
    if options is None:
        return
    if not isinstance(options, Mapping):
        raise TypeError(
            "initialize: options must be a mapping of option names to values, given "
            f"{type(options).__name__} {options!r}"
        )
    for name in options:
        if not isinstance(name, str):
            raise TypeError(
                f"initialize: options must be keyed by option names (str), given the key "
                f"{name!r} ({type(name).__name__})"
            )


def initialize(
    library: str | os.PathLike[str] | None = None,
    *,
    platform: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> LoadedPlugin:
    """Loads the plugin this process will use and creates its client.

    A process loads one plugin: calling this again with the same settings returns it.

    Args:
        library: A plugin library's path (default: `CYXLA_PJRT_PLUGIN`, else the
            installed plugin of `platform`).
        platform: "cpu", "cuda", "rocm" or "tpu" (default: `CYXLA_PLATFORM`, else the
            first installed of those).
        options: Client options that add to or replace the defaults of the platform's
            plugin; None as a value removes one.

    Returns:
        The loaded plugin: its platform, library and client options.

    Raises:
        PluginError: a plugin with other settings is already loaded, or the plugin
            cannot be found or loaded (PluginNotFoundError, PluginLoadError).
        TypeError: an argument of the wrong type (a platform or an option name that is
            not a str).
    """
    global _loaded
    _check_arguments(library, platform, options)
    path, wanted, by_path = plugins.resolve(library, platform)
    with _lock:
        if _loaded is not None:
            same = _loaded.library == path and wanted in (None, _loaded.platform)
            merged = _merge(plugins.defaults_for(_loaded.platform), options)
            if same and (options is None or dict(_loaded.options) == merged):
                return _loaded
            raise PluginError(
                f"a plugin is already loaded ({_loaded.platform}, {_loaded.library}, options "
                f"{dict(_loaded.options)}); cyxla.initialize asked for "
                f"{wanted or 'any platform'}, {path}, options {merged}. A process "
                "uses one plugin: call cyxla.initialize before the first compile_program"
            )
        # Load the plugin, then register the custom calls it should hold: jaxlib's
        # handlers, JAX's registrations and cyxla's (`_ffi.registry`).
        loaded = _create(path, wanted, options, by_path)
        _check_jaxlib(loaded, stacklevel=3)  # jaxlib newer: say so, to the caller
        mirror.follow_jax()
        registry.register_on_load(loaded.plugin, loaded.runtime, loaded.platform)
        # The process's runtime: cyxla_open_runtime and cyxla_load_program use it too.
        loaded.runtime._make_current()
        _loaded = loaded
        return _loaded


def runtime_for(platform: str) -> _core.Runtime:
    """The runtime to run a program for `platform` with, loading the plugin if needed."""
    current = _loaded or initialize(platform=platform)
    _check_jaxlib(current, stacklevel=4)  # to the caller of compile_program
    if current.platform != platform:
        raise PlatformMismatchError(
            f"the program was lowered for '{platform}', but this process loaded the "
            f"'{current.platform}' plugin ({current.library}); lower it for "
            f"'{current.platform}' (e.g. with jax.default_device) or run it in another process"
        )
    return current.runtime


def _check_jaxlib(plugin: LoadedPlugin, stacklevel: int) -> None:
    """Checks jaxlib against `plugin` (`compat.check_on_load`, warning at `stacklevel`
    counted from here) once JAX is imported: a process that only runs programs from files
    never imports it, and needs no check."""
    global _jaxlib_checked
    if not _jaxlib_checked and sources.jax_imported():
        compat.check_on_load(plugin.plugin, plugin.library, plugin.platform, stacklevel + 1)
        _jaxlib_checked = True


def library_identity(plugin: LoadedPlugin | None = None) -> dict[str, Any]:
    """What identifies the plugin library that compiles and loads executables, as the disk
    cache's key holds it (the core computes it, for Python and C alike).

    Its canonical path, size and modification time when this process first asked (a
    rebuilt or reinstalled library differs in one of them), its PJRT API version and its
    `xla_version` attribute. `plugin` defaults to the plugin this process loaded, loading
    the default one if there is none yet. InvalidArgumentError if the library is gone.
    """
    identified = plugin or loaded() or initialize()
    path, size, mtime_ns = _core.library_identity(identified.plugin)
    return {
        "path": path,
        "size": size,
        "mtime_ns": mtime_ns,
        "pjrt_version": list(identified.plugin.version),
        "xla_version": identified.plugin.attributes.get("xla_version"),
    }
