"""`python -m cyxla`: list plugins, report the environment, run the demo or the benchmark, show
and empty the disk cache, export a function as a program file, vet program files from
elsewhere; `--includes`, `--cmake-dir` and `--pkgconfig-dir` print where native builds find
cyxla."""

from __future__ import annotations

import argparse
import importlib
import sys
import sysconfig
from collections.abc import Sequence
from types import ModuleType

from cyxla._abi import abi_version, get_cmake_dir, get_include, get_pkgconfig_dir
from cyxla._version import __version__

#: Each command's module in cyxla._cli, and its line of help.
_COMMANDS = {
    "plugins": "list the plugins cyxla finds (the default)",
    "info": "everything a bug report needs: versions, plugins, cache, ABI; a program's runner",
    "demo": "lower, compile and run a small JAX function, next to jax.jit",
    "bench": "time one call of small programs through every path, beside jax.jit",
    "cache": "show (info, the default) or empty (clear) the disk cache",
    "export": "lower MODULE:FUNCTION at --arg specs and save it as a program file",
    "verify": "load and compile program files in a child process, with limits",
}
#: What `python -m cyxla COMMAND --help` says beyond the one line above: what the command
#: prints and its exit statuses (argparse exits 2 on bad arguments for every command).
_DESCRIPTIONS = {
    "plugins": """List every PJRT plugin cyxla can find, the installed ones first: its library,
whether it loads, its PJRT, StableHLO and XLA FFI versions, the wheel it came from, and
whether it fits jaxlib (in step, or older in ways cyxla bridges); then the ones that are
not installed, with the extra that installs each.

exit status: 0 when a plugin loads and is usable with jaxlib, 1 when none does (with
--path: 1 when the platform has no installed plugin)""",
    "info": """Print what a bug report needs, one `name: value` a line: the versions of cyxla,
Python, jax, jaxlib, NumPy and ml_dtypes, the StableHLO and XLA FFI versions jaxlib
writes, each plugin with its versions and its fit with jaxlib, the disk cache and the
native ABI version. Then, for each PROGRAM_FILE given, compile it (or load it from the
disk cache) and say which runner its calls take, which they would take and why, and
what the plugin compiled: target, thunk kinds, kernels, the symbols its objects need.

example:
  python -m cyxla info model.cyxla

exit status: 0, or 1 when a PROGRAM_FILE could not be loaded or compiled""",
    "demo": """Lower tanh(x @ w) + sin(x) for x: float32[8,16] and w: float32[16,16], compile
it with the plugin, run it from Python and from native code, and print the results beside
jax.jit's, with the time of a call through each.

exit status: 0 when the results agree with jax.jit's, 1 when they do not, 2 when no
plugin could be found or loaded (the reason on stderr)""",
    "bench": """Time one call of small programs (sin3, matmul100, mlp64, ew1m) through every
path a call can take, beside a minimal PJRT loop and jax.jit, in interleaved rounds; print
medians, per-round ratios and their spread. Progress goes to stderr. A full run takes
minutes.

exit status: 0, or 2 when --plot is asked for without matplotlib""",
    "cache": """Show where the disk cache is, which setting chose it (CYXLA_CACHE_DIR or the
default) and what it holds (info, the default), or remove its entries (clear).

exit status: 0, or 1 when clear refuses the directory or cannot remove a file""",
    "export": """Import MODULE, lower its FUNCTION at the argument specs given by --arg (one per
positional argument, in order), and save the program as a file that cyxla.load_program
and the C and C++ loaders (cyxla_load_program) read.

example:
  python -m cyxla export mymodel:predict --arg f32[16,64] --arg f32[64] -o model.cyxla

exit status: 0 when the file was written, 1 when lowering or writing failed, 2 when
MODULE:FUNCTION could not be imported or found (or the arguments are malformed)""",
    "verify": """Load and compile each program file in a child process with time and memory
limits (cyxla.verify_program_file), and print whether it was accepted or why it was
refused (the plugin crashed, with its signal and last words; it ran past the time; it
held more memory), so that a service can vet files from elsewhere before loading them.

example:
  python -m cyxla verify model.cyxla --timeout 60 --memory-limit 2048

exit status: 0 when every file is accepted, 1 when any is refused""",
}
#: Commands that take arguments: their modules add them to their parser (add_arguments),
#: and their main gets the parsed ones.
_ARGUMENTS = frozenset({"bench", "cache", "export", "info", "plugins", "verify"})


def _command(name: str) -> ModuleType:
    """A command's module, imported only for the command that runs: demo, bench and export
    import JAX, which plugins, info, cache and verify do not need (a second or more)."""
    return importlib.import_module(f"cyxla._cli.{name}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cyxla",
        description="Run JAX-compiled programs from native code through a PJRT plugin. "
        "With no command: list the plugins (as `plugins` does).",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"cyxla {__version__} (native ABI {abi_version()})",
    )
    # Where native builds find cyxla, as pybind11 and nanobind print it.
    parser.add_argument(
        "--includes",
        action="store_true",
        help="print the compiler flags of an extension module: -I for Python.h and cyxla.h",
    )
    parser.add_argument(
        "--cmake-dir", action="store_true", help="print the directory of cyxlaConfig.cmake"
    )
    parser.add_argument(
        "--pkgconfig-dir", action="store_true", help="print the directory of cyxla.pc"
    )
    commands = parser.add_subparsers(dest="command")
    # Top-level options take no values, so the first command name in argv is the command.
    given = sys.argv[1:] if argv is None else argv
    chosen = next((word for word in given if word in _COMMANDS), None)
    for name, help_text in _COMMANDS.items():
        command = commands.add_parser(
            name,
            help=help_text,
            description=_DESCRIPTIONS[name],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if name == chosen and name in _ARGUMENTS:
            _command(name).add_arguments(command)
    args = parser.parse_args(argv)
    if args.includes:
        directories = [sysconfig.get_paths()["include"], get_include()[0]]
        # Unquoted, as pybind11's: the shell splits $(python -m cyxla --includes) at spaces.
        print(" ".join(f"-I{directory}" for directory in directories))
        return 0
    if args.cmake_dir or args.pkgconfig_dir:
        print(get_cmake_dir() if args.cmake_dir else get_pkgconfig_dir())
        return 0
    run = _command(args.command or "plugins").main
    return run(args) if args.command in _ARGUMENTS else run()


if __name__ == "__main__":
    sys.exit(main())
