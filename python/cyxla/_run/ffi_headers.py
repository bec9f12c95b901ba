"""The XLA FFI headers to build custom-call handlers against for the installed plugin:
jaxlib's where the plugin's XLA runs their version, else older ones installed beside them
(jax 0.12's are XLA FFI 0.5, newer than the 0.11.2 CPU plugin's 0.4)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from cyxla import _core
from cyxla._errors import PluginVersionError
from cyxla._ffi.headers import header_ffi_version
from cyxla._run import plugins

__all__ = ["ffi_include_dir"]

#: Packages that ship XLA FFI headers under `include/`, oldest XLA first after jaxlib:
#: tensorflow-cpu 2.21 (the `aot` extra) ships XLA FFI 0.2.
_OLDER_HEADERS = ("tensorflow",)


def _package_include(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)  # found, not imported
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "include"


def ffi_include_dir(platform: str = "cpu") -> str:
    """The directory of XLA FFI headers (`xla/ffi/api/ffi.h`) to build a custom-call
    handler against for the installed plugin of `platform`: `jax.ffi.include_dir()` when
    the plugin's XLA runs their XLA FFI version, else the include directory of an older
    XLA installed beside it (tensorflow-cpu's, from the `aot` extra).

    Raises PluginVersionError, naming both versions, when no installed headers are old
    enough; PluginNotFoundError when no plugin of `platform` is installed.
    """
    import jax.ffi  # where it is asked for: a lean process never builds handlers

    plugin = plugins.load_library(plugins.entry_for(platform).library_path())
    runs = _core._ffi_version(plugin)
    jaxlib = Path(jax.ffi.include_dir())
    jaxlib_version = header_ffi_version(jaxlib)
    if runs is None or jaxlib_version is None or jaxlib_version <= tuple(runs):
        return str(jaxlib)
    for name in _OLDER_HEADERS:
        include = _package_include(name)
        version = None if include is None else header_ffi_version(include)
        if version is not None and version <= tuple(runs):
            return str(include)
    raise PluginVersionError(
        f"jaxlib's XLA FFI headers ({jaxlib}) are version {jaxlib_version[0]}."
        f"{jaxlib_version[1]}, newer than the {platform} plugin's XLA runs "
        f"({runs[0]}.{runs[1]}), and no older headers are installed: install "
        "'cyxla[aot]' (tensorflow-cpu's headers), or build against a jaxlib no newer "
        "than the plugin"
    )
