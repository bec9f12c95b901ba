"""`python -m cyxla verify FILE...`: whether each program file loads and compiles, tried in
a child process with time and memory limits (`verify_program_file`), so that a service
can vet files from elsewhere before it loads them. Exits 0 when every file is accepted,
1 otherwise."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from cyxla._verify.verdict import verify_program_file

__all__ = ["add_arguments", "main"]


def _positive(kind: type[int] | type[float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value > 0:
            raise argparse.ArgumentTypeError(f"expected a number > 0, given {text!r}")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="program files to check")
    parser.add_argument(
        "--timeout",
        type=_positive(float),
        default=120.0,
        metavar="SECONDS",
        help="refuse a file whose loading and compiling takes longer (default 120)",
    )
    parser.add_argument(
        "--memory-limit",
        type=_positive(int),
        default=4096,
        metavar="MIB",
        help="refuse a file whose loading and compiling holds more memory (default 4096)",
    )


def main(args: argparse.Namespace) -> int:
    refused = 0
    for file in args.files:
        verdict = verify_program_file(
            file, timeout=args.timeout, memory_limit=args.memory_limit << 20
        )
        print(verdict, flush=True)
        refused += not verdict.accepted
    return 1 if refused else 0
