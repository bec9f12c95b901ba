"""`python -m cyxla`: list plugins, or run the demo."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cyxla import _cli_demo, _cli_plugins

_COMMANDS = {
    "plugins": (_cli_plugins.main, "list the plugins cyxla finds (the default)"),
    "demo": (_cli_demo.main, "lower, compile and run a small JAX function, next to jax.jit"),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cyxla", description=__doc__)
    commands = parser.add_subparsers(dest="command")
    for name, (_, help_text) in _COMMANDS.items():
        commands.add_parser(name, help=help_text)
    args = parser.parse_args(argv)
    run, _ = _COMMANDS[args.command or "plugins"]
    return run()


if __name__ == "__main__":
    sys.exit(main())
