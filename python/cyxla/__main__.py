"""`python -m cyxla`: list plugins, report the environment, run the demo or the benchmark, show
and empty the disk cache."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cyxla._cli import bench, cache, demo, info, plugins

_COMMANDS = {
    "plugins": (plugins.main, "list the plugins cyxla finds (the default)"),
    "info": (info.main, "everything a bug report needs: versions, plugins, cache, ABI"),
    "demo": (demo.main, "lower, compile and run a small JAX function, next to jax.jit"),
    "bench": (bench.main, "time one call of small programs through every path, beside jax.jit"),
    "cache": (cache.main, "show (info, the default) or empty (clear) the disk cache"),
}
#: Commands that take arguments: these add them to their parser and get the parsed ones.
_ARGUMENTS = {"bench": bench.add_arguments, "cache": cache.add_arguments}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cyxla", description=__doc__)
    commands = parser.add_subparsers(dest="command")
    for name, (_, help_text) in _COMMANDS.items():
        command = commands.add_parser(name, help=help_text)
        if name in _ARGUMENTS:
            _ARGUMENTS[name](command)
    args = parser.parse_args(argv)
    run, _ = _COMMANDS[args.command or "plugins"]
    return run(args) if args.command in _ARGUMENTS else run()


if __name__ == "__main__":
    sys.exit(main())
