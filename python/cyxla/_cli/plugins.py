"""`python -m cyxla plugins`: every plugin cyxla can find, whether it loads, and whether it
fits jaxlib: in step, usable (older than jaxlib in ways cyxla bridges) or skewed
(`cyxla._run.compat`'s verdict, the one a load warns with). Exits non-zero when no plugin
is both loadable and usable. `--path PLATFORM` prints only the library of
the installed plugin of that platform, for scripts that deploy an application with it."""

from __future__ import annotations

import argparse
import os
import sys

from cyxla import _core
from cyxla._errors import PluginNotFoundError
from cyxla._run import backend, compat, plugins


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--path",
        metavar="PLATFORM",
        help="print only the library of the installed plugin of PLATFORM (cpu, cuda, ...)",
    )


def main(args: argparse.Namespace | None = None) -> int:
    if args is not None and args.path is not None:
        return _print_path(args.path)
    rows: list[tuple[str, str, str, str]] = []
    override = os.environ.get(plugins.PLUGIN_ENVIRONMENT_VARIABLE)
    if override:
        rows.append((plugins.PLUGIN_ENVIRONMENT_VARIABLE, "?", override, ""))
    for entry in plugins.discover():
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
    usable = 0
    for index, (name, platform, path, status) in enumerate(rows):
        if not status:
            try:
                plugin = plugins.load_library(path)
                status = "loadable: " + _describe(plugin)
            except Exception as error:  # shown, not raised: listing must go on
                status = f"not loadable: {type(error).__name__}: {error}"
            else:
                line, fits = _verdict(plugin, path, platform)
                status += "\n  " + line
                usable += fits
        rows[index] = (name, platform, path, status)
    # What is installed first; what could be (one line each: how to install it) after.
    rows.sort(key=lambda row: row[2] == "-")
    for name, platform, path, status in rows:
        print(f"{name} ({platform})\n  library: {path}\n  {status}")
    loaded = backend.loaded()
    if loaded is not None:
        print(f"loaded in this process: {loaded.platform} from {loaded.library}")
    if not usable:
        print("no usable plugin: none loads and is usable with jaxlib")
        return 1
    return 0


def _print_path(platform: str) -> int:
    try:
        print(plugins.entry_for(platform).library_path())
    except PluginNotFoundError as error:
        print(f"python -m cyxla plugins: {error}", file=sys.stderr)
        return 1
    return 0


def _verdict(plugin: _core.Plugin, path: str, platform: str) -> tuple[str, bool]:
    """The line on how the plugin fits jaxlib, and whether it is usable."""
    try:
        verdict = compat.verdict(plugin, path, platform)
    except Exception as error:  # shown, not raised: listing must go on
        return f"versions unknown: {type(error).__name__}: {error}", False
    package = f"package: {compat.distribution_of(path) or 'none (a library given by path)'}\n  "
    if verdict.in_step:
        return f"{package}in step with jaxlib: {verdict.summary()}", True
    if verdict.usable:
        return f"{package}usable with a newer jaxlib: {verdict.bridged()}", True
    kind = "refused" if verdict.fatal else "VersionSkewWarning at load"
    return f"{package}version skew ({kind}): {verdict.message()}", False
