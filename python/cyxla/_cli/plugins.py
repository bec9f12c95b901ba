"""`python -m cyxla plugins`: every plugin cyxla can find, and whether it loads."""

from __future__ import annotations

import os

from cyxla import _backend, _core, _plugins
from cyxla._errors import PluginNotFoundError


def _describe(plugin: _core.Plugin) -> str:
    attributes = plugin.attributes
    major, minor = plugin.version

    def version(name: str) -> str:
        value = attributes.get(name)
        if isinstance(value, list):
            return ".".join(map(str, value))
        return "?" if value is None else str(value)

    return (
        f"PJRT {major}.{minor}, xla_version {version('xla_version')}, StableHLO "
        f"{version('stablehlo_minimum_version')} to {version('stablehlo_current_version')}"
    )


def main() -> int:
    rows: list[tuple[str, str, str, str]] = []
    override = os.environ.get(_plugins.PLUGIN_ENVIRONMENT_VARIABLE)
    if override:
        rows.append((_plugins.PLUGIN_ENVIRONMENT_VARIABLE, "?", override, ""))
    for entry in _plugins.discover():
        try:
            path = entry.library_path()
        except PluginNotFoundError:
            rows.append(
                (
                    entry.name,
                    entry.platform,
                    "-",
                    f"not installed: pip install 'cyxla[{entry.extra}]'",
                )
            )
            continue
        rows.append((entry.name, entry.platform, path, ""))
    for index, (name, platform, path, status) in enumerate(rows):
        if not status:
            try:
                status = "loadable: " + _describe(_plugins.load_library(path))
            except Exception as error:  # shown, not raised: listing must go on
                status = f"not loadable: {type(error).__name__}: {error}"
        rows[index] = (name, platform, path, status)
    for name, platform, path, status in rows:
        print(f"{name} ({platform})\n  library: {path}\n  {status}")
    loaded = _backend.loaded()
    if loaded is not None:
        print(f"loaded in this process: {loaded.platform} from {loaded.library}")
    return 0
