"""`python -m cyxla cache info|clear`: show or empty the disk cache."""

from __future__ import annotations

import argparse
import datetime
import os
import warnings

from cyxla._cache import store


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


def _info() -> int:
    directory = store.cache_directory()
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
        program = header.get("program")
        name = header.get("name") or (program.get("name") if isinstance(program, dict) else "")
        name = str(name or "?")
        label = "temporary" if item.path.name.startswith(".tmp-") else item.kind[:-1]
        print(
            f"  {label:<10} {name:<24} {_size(item.size):>10}  last used {used}  "
            f"{item.path.name[:16]}"
        )
    return 0


def _clear() -> int:
    directory = store.cache_directory()
    if directory is None:
        print(f"the disk cache is off ({_where()}); nothing to clear")
        return 0
    try:
        removed, freed = store.clear()
    except OSError as error:
        print(f"could not clear the cache at {directory}: {error}")
        return 1
    print(f"removed {_files(removed)} ({_size(freed)}) from {directory}")
    return 0


def main(args: argparse.Namespace) -> int:
    return _clear() if args.action == "clear" else _info()
