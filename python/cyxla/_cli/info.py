"""`python -m cyxla info`: everything a bug report needs, one `name: value` a line (as
`jax.print_environment_info()` prints it): cyxla, Python, jax, jaxlib, numpy, the plugins
with their versions and their fit with jaxlib, the options programs compile with by default,
the disk cache and the native ABI; and for each program file named, which runner its calls
take and what its compiled form holds."""

from __future__ import annotations

import argparse
import os
import platform
import sys

from cyxla import _abi, _platforms
from cyxla._cache import store
from cyxla._errors import PluginNotFoundError
from cyxla._run import compat, plugins
from cyxla._version import __version__

__all__ = ["add_arguments", "lines", "main", "program_lines"]

#: The packages whose versions a report names.
_PACKAGES = ("jax", "jaxlib", "numpy", "ml_dtypes", "scipy")


def _version(value: object) -> str:
    if isinstance(value, list | tuple):
        return ".".join(map(str, value))
    return "unknown" if value is None else str(value)


def _plugin(library: str, platform: str | None = None) -> str:
    """The plugin at `library` (of cyxla's `platform`, where known): its wheel, its API
    versions and its fit with jaxlib."""
    try:
        plugin = plugins.load_library(library)
        verdict = compat.verdict(plugin, library, platform)
    except Exception as error:  # shown, not raised: a report must go on
        return f"{library}, not loadable: {type(error).__name__}: {error}"
    major, minor = plugin.version
    attributes = plugin.attributes
    if verdict.in_step:
        fit = "in step with jaxlib"
    elif verdict.usable:
        fit = f"usable with a newer jaxlib: {verdict.bridged()}"
    else:
        fit = f"version skew: {verdict.message()}"
    return (
        f"{compat.distribution_of(library) or 'no package'} ({library}), PJRT {major}.{minor}, "
        f"StableHLO {_version(attributes.get('stablehlo_minimum_version'))} to "
        f"{_version(attributes.get('stablehlo_current_version'))}, "
        f"XLA FFI {_version(verdict.plugin_ffi)}; {fit}"
    )


def lines() -> list[str]:
    """The report, one `name: value` a line."""
    found = [
        f"cyxla: {__version__}",
        f"python: {sys.version.split()[0]} ({sys.executable})",
        f"platform: {platform.platform()}",
    ]
    found += [f"{name}: {compat.package_version(name) or 'not installed'}" for name in _PACKAGES]
    found.append(f"tested pairing: {compat.tested_pairing()}")
    found.append(
        f"jaxlib APIs: StableHLO {_version(compat.jaxlib_stablehlo_version())}, "
        f"XLA FFI {_version(compat.jaxlib_ffi_version())}"
    )
    for entry in plugins.discover():
        try:
            library = entry.library_path()
        except PluginNotFoundError:
            continue
        found.append(f"plugin {entry.name} ({entry.platform}): {_plugin(library, entry.platform)}")
    override = os.environ.get(plugins.PLUGIN_ENVIRONMENT_VARIABLE)
    if override:
        found.append(f"plugin {plugins.PLUGIN_ENVIRONMENT_VARIABLE}: {_plugin(override)}")
    if not any(line.startswith("plugin ") for line in found):
        found.append("plugin: none installed (pip install 'cyxla[cpu]')")
    found += [
        f"compile defaults ({name}): {', '.join(map(str, defaults))}"
        for name, defaults in _platforms.COMPILE_DEFAULTS.items()
        if defaults
    ]
    directory = store.cache_directory()
    found.append(f"cache directory: {directory if directory is not None else 'off'}")
    found.append(f"native ABI version: {_abi.abi_version()}")
    found += [f"{name}: {value}" for name, value in sorted(os.environ.items()) if _ours(name)]
    return found


def _ours(name: str) -> bool:
    """Whether the environment variable `name` changes what cyxla or JAX does."""
    return name.startswith(("CYXLA_", "JAX_", "XLA_"))


def program_lines(path: str) -> list[str]:
    """What `python -m cyxla info PROGRAM_FILE` says of the program file at `path`: the
    runner its calls take, the one they would take and why, and what the plugin's
    compiled form holds (target, thunks, kernels, the symbols its objects need). Raises
    what loading or compiling the file raises."""
    from cyxla import _core
    from cyxla._program.program import load_program
    from cyxla._run.executable import compile_program

    executable, _ = compile_program(load_program(path))
    runner = executable.runner
    found = [
        f"program: {path}",
        f"  runner: {runner.name}",
        f"  would take: {runner.would_take} ({runner.reason})",
    ]
    summary = _core.compiled_summary_of(executable._native)
    if summary is None:
        return found
    kinds = ", ".join(f"{kind} x{count}" for kind, count in summary["thunk_kinds"].items())
    found += [
        f"  target: {summary['triple']} ({summary['cpu']})",
        f"  thunks: {kinds or 'none'}",
        f"  kernels: {', '.join(summary['kernels']) or 'none'}",
        f"  symbols needed: {', '.join(summary['undefined_symbols']) or 'none'}",
        f"  relocations: {', '.join(summary['relocation_types']) or 'none'}",
        f"  objects: {summary['objects']}, allocations: {summary['allocations']} "
        f"({summary['constant_allocations']} constant)",
    ]
    return found


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "programs",
        nargs="*",
        metavar="PROGRAM_FILE",
        help="program files to compile (or load from the disk cache) and describe",
    )


def main(args: argparse.Namespace) -> int:
    print("\n".join(lines()), flush=True)
    failed = 0
    for path in args.programs:
        try:
            print("\n".join(program_lines(path)), flush=True)
        except Exception as error:  # shown, not raised: the other files go on
            print(f"program: {path}\n  not loadable: {type(error).__name__}: {error}")
            failed += 1
    return 1 if failed else 0
