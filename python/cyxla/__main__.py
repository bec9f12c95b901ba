"""`python -m cyxla`: list plugins, run the demo or the benchmark, show and empty the disk cache."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cyxla import _cli_bench, _cli_cache, _cli_demo, _cli_plugins

_COMMANDS = {
    "plugins": (_cli_plugins.main, "list the plugins cyxla finds (the default)"),
    "demo": (_cli_demo.main, "lower, compile and run a small JAX function, next to jax.jit"),
    "bench": (_cli_bench.main, "time one call through native execute, run, raw PJRT and jax.jit"),
    "cache": (_cli_cache.main, "show (info, the default) or empty (clear) the disk cache"),
}
#: Commands that take arguments: these add them to their parser and get the parsed ones.
_ARGUMENTS = {"bench": _cli_bench.add_arguments, "cache": _cli_cache.add_arguments}


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
