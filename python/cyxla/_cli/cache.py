"""`python -m cyxla cache info|clear`: show or empty the disk cache."""

from __future__ import annotations

import argparse
import datetime
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cyxla._cache import store

#: The most characters of a program's name that `info` shows.
_NAME_WIDTH = 64


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        nargs="?",
        choices=("info", "clear"),
        default="info",
        help="info: where the cache is and what it holds (the default); clear: empty it",
    )


def _size(count: float) -> str:
    if count < 1024:
        return f"{count:.0f} bytes"
    for unit in ("KiB", "MiB"):
        count /= 1024
        if count < 1024:
            return f"{count:.1f} {unit}"
    return f"{count / 1024:.1f} GiB"


def _files(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"


def _where() -> str:
    """Which setting chose the directory."""
    variable = store.CACHE_ENVIRONMENT_VARIABLE
    if variable in os.environ:
        return f"{variable}={os.environ[variable]!r}"
    return f"the default; set {variable} to move it, or to 0 to turn the cache off"


def _directory() -> tuple[Path | None, str | None]:
    """The cache directory, or None and why it cannot be resolved (printed, not warned)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return store.configured_directory(), None
        except store.CacheRefusedError as error:
            return None, str(error)


def _name(header: Mapping[str, Any]) -> str:
    """The program's name in an unchecked header, or `?`."""
    program = header.get("program")
    name = header.get("name") or (program.get("name") if isinstance(program, dict) else "")
    return name[:_NAME_WIDTH] if isinstance(name, str) and name else "?"


def _info() -> int:
    directory, problem = _directory()
    if problem is not None:
        print(f"refused, so not used: {problem}")
        return 0
    if directory is None:
        print(f"the disk cache is off ({_where()})")
        return 0
    print(f"directory: {directory} ({_where()})")
    bound = store.max_bytes()
    print(f"size bound: {_size(bound)} ({store.MAX_BYTES_ENVIRONMENT_VARIABLE})")
    for kind in store.KINDS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the refusal is printed below instead
            try:
                store.open_store(kind, create=False)
            except store.CacheRefusedError as error:
                print(f"refused, so not used: {error}")
                break
    listing = sorted(store.entries(), key=lambda item: item.last_used, reverse=True)
    total = sum(item.size for item in listing)
    print(f"{_files(len(listing))}, {_size(total)}")
    for item in listing:
        header = store.peek(item.path) or {}
        used = datetime.datetime.fromtimestamp(item.last_used).isoformat(
            sep=" ", timespec="seconds"
        )
        name = _name(header)
        label = "temporary" if item.path.name.startswith(".tmp-") else item.kind[:-1]
        print(
            f"  {label:<10} {name:<24} {_size(item.size):>10}  last used {used}  "
            f"{item.path.name[:16]}"
        )
    return 0


def _clear() -> int:
    directory, problem = _directory()
    if problem is not None:
        print(f"refused, so not cleared: {problem}")
        return 1
    if directory is None:
        print(f"the disk cache is off ({_where()}); nothing to clear")
        return 0
    failures: list[str] = []
    removed, freed = store.clear(lambda path, error: failures.append(f"{path.name}: {error}"))
    print(f"removed {_files(removed)} ({_size(freed)}) from {directory}")
    for failure in failures:
        print(f"could not clear the cache at {directory}: {failure}")
    return 1 if failures else 0


def main(args: argparse.Namespace) -> int:
    return _clear() if args.action == "clear" else _info()
