"""`python -m cyxla`: list plugins, report the environment, run the demo or the benchmark, show
and empty the disk cache, export a function as a program file, vet program files from
elsewhere; `--cmake-dir` and `--pkgconfig-dir` print where native builds find cyxla."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cyxla._abi import get_cmake_dir, get_pkgconfig_dir
from cyxla._cli import bench, cache, demo, export, info, plugins, verify

_COMMANDS = {
    "plugins": (plugins.main, "list the plugins cyxla finds (the default)"),
    "info": (info.main, "everything a bug report needs: versions, plugins, cache, ABI"),
    "demo": (demo.main, "lower, compile and run a small JAX function, next to jax.jit"),
    "bench": (bench.main, "time one call of small programs through every path, beside jax.jit"),
    "cache": (cache.main, "show (info, the default) or empty (clear) the disk cache"),
    "export": (export.main, "lower MODULE:FUNCTION at --arg specs and save it as a program file"),
    "verify": (verify.main, "load and compile program files in a child process, with limits"),
}
#: Commands that take arguments: these add them to their parser and get the parsed ones.
_ARGUMENTS = {
    "bench": bench.add_arguments,
    "cache": cache.add_arguments,
    "export": export.add_arguments,
    "plugins": plugins.add_arguments,
    "verify": verify.add_arguments,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cyxla", description=__doc__)
    # Where native builds find cyxla, as pybind11 and nanobind print it.
    parser.add_argument(
        "--cmake-dir", action="store_true", help="print the directory of cyxlaConfig.cmake"
    )
    parser.add_argument(
        "--pkgconfig-dir", action="store_true", help="print the directory of cyxla.pc"
    )
    commands = parser.add_subparsers(dest="command")
    for name, (_, help_text) in _COMMANDS.items():
        command = commands.add_parser(name, help=help_text)
        if name in _ARGUMENTS:
            _ARGUMENTS[name](command)
    args = parser.parse_args(argv)
    if args.cmake_dir or args.pkgconfig_dir:
        print(get_cmake_dir() if args.cmake_dir else get_pkgconfig_dir())
        return 0
    run, _ = _COMMANDS[args.command or "plugins"]
    return run(args) if args.command in _ARGUMENTS else run()


if __name__ == "__main__":
    sys.exit(main())
