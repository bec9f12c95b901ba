"""The disk cache's store, as Python calls it: a typed wrapper over the C++ store
(`src/cache/`), which a process without Python uses too.

An entry is one file, `<directory>/<kind>/<sha256(kind NUL key)>.entry`: a prefix (magic,
format version, header length, SHA-256 of everything after the prefix), a JSON header
(kind, key, payload length, cyxla's version, a digest binding kind, key and payload, and
what the caller records) and the payload. Entries are written to a temporary file and
renamed into place, and every read checks the length, checksum and key before it hands
the payload on, since payloads are native code and StableHLO that the plugin trusts.
The store's warnings (a refused directory, an unsafe entry, a size bound it cannot read)
come as `UserWarning("cyxla cache: ...")`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cyxla import _core

__all__ = [
    "CACHE_ENVIRONMENT_VARIABLE",
    "DEFAULT_MAX_BYTES",
    "FORMAT_VERSION",
    "KINDS",
    "MAX_BYTES_ENVIRONMENT_VARIABLE",
    "CacheRefusedError",
    "Entry",
    "EntryError",
    "EntryTooLargeError",
    "Listing",
    "cache_directory",
    "clear",
    "configured_directory",
    "cyxla_version",
    "entries",
    "max_bytes",
    "open_store",
    "parse_json",
    "peek",
    "read",
    "write",
]

_native: Any = _core._cache

#: The cache directory; an empty value or `0` turns the cache off.
CACHE_ENVIRONMENT_VARIABLE: str = _native.DIRECTORY_VARIABLE
#: The most bytes the cache keeps before it evicts the least recently used entries.
MAX_BYTES_ENVIRONMENT_VARIABLE: str = _native.MAX_BYTES_VARIABLE
DEFAULT_MAX_BYTES: int = _native.DEFAULT_MAX_BYTES
#: The layout of an entry; entries of another format are foreign (a miss).
FORMAT_VERSION: int = _native.FORMAT_VERSION
#: The kinds of entry, each in a subdirectory of the cache directory.
KINDS: tuple[str, ...] = _native.KINDS

#: The cache directory is unsafe or unusable, so the cache is off for this call.
CacheRefusedError: type[RuntimeError] = _native.CacheRefusedError
#: An entry is truncated, corrupted, foreign or unsafe; it is ignored and replaced.
EntryError: type[RuntimeError] = _native.EntryError
#: An entry alone is larger than the cache's size bound, so it is not stored.
EntryTooLargeError: type[RuntimeError] = _native.EntryTooLargeError


@dataclass(frozen=True)
class Entry:
    """A checked entry: its header and payload."""

    path: Path
    header: Mapping[str, Any]
    payload: bytes


@dataclass(frozen=True)
class Listing:
    """One file in the cache, as `entries` finds it."""

    kind: str
    path: Path
    size: int
    last_used: float


def configured_directory() -> Path | None:
    """`cache_directory`, but CacheRefusedError (after a warning) when the directory
    cannot be resolved, such as `CYXLA_CACHE_DIR=~nosuchuser/x`."""
    directory = _native.configured_directory()
    return None if directory is None else Path(directory)


def cache_directory() -> Path | None:
    """The directory of the disk cache, or None when the cache is off.

    `CYXLA_CACHE_DIR` (`cyxla.CACHE_ENVIRONMENT_VARIABLE`) if set; an empty value or `0`
    turns the cache off. Otherwise the user's cache directory: `$XDG_CACHE_HOME/cyxla`,
    else `~/.cache/cyxla` on Linux, `~/Library/Caches/cyxla` on macOS and
    `%LOCALAPPDATA%\\cyxla\\Cache` on Windows. The directory need not exist yet. A
    `CYXLA_CACHE_DIR` that cannot be resolved turns the cache off, after a warning.
    """
    try:
        return configured_directory()
    except CacheRefusedError:
        return None


def max_bytes() -> int:
    """The size bound: `CYXLA_CACHE_MAX_BYTES` (bytes, or with a K, M or G suffix); 1 GiB
    when it is not set, or after a warning when it cannot be read."""
    bound: int = _native.max_bytes()
    return bound


def cyxla_version() -> str:
    """The version of cyxla that writes and reads entries."""
    version: str = _native.CYXLA_VERSION
    return version


def open_store(kind: str, *, create: bool) -> Path | None:
    """The checked directory of `kind`'s entries; None when the cache is off, or when it
    does not exist and `create` is false. Raises CacheRefusedError (after a warning) when
    the cache directory or the kind's directory is unsafe or cannot be made, and
    ValueError for a kind not in KINDS."""
    directory = _native.open_store(kind, create)
    return None if directory is None else Path(directory)


def parse_json(data: bytes) -> Any:
    """JSON as entries write it; ValueError for anything else, including NaN, Infinity,
    numbers too long to convert and nesting too deep to parse (RecursionError)."""
    try:
        return json.loads(data, parse_constant=_no_constant)
    except RecursionError as error:
        raise ValueError("nested too deeply") from error


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a value an entry holds")


def read(kind: str, key: str) -> Entry | None:
    """The checked entry of `key`, or None if there is none or the cache is off.

    Raises EntryError for an entry that must not be used (it is left for `write` to
    replace) and CacheRefusedError for an unsafe directory.
    """
    found = _native.read(kind, key)
    if found is None:
        return None
    path, header, payload = found
    return Entry(Path(path), json.loads(header), payload)


def write(kind: str, key: str, header: Mapping[str, Any], payload: bytes) -> Path | None:
    """Stores an entry atomically and evicts old ones; returns its path, or None if the
    cache is off. `header` is recorded beside the store's own fields; it must be JSON.
    Raises OSError, CacheRefusedError or EntryTooLargeError when it cannot store."""
    text = json.dumps(dict(header), allow_nan=False)
    path = _native.write(kind, key, text, bytes(payload))
    return None if path is None else Path(path)


def entries() -> list[Listing]:
    """Every entry file and leftover temporary file in the cache, unchecked."""
    return [
        Listing(kind, Path(path), size, last_used)
        for kind, path, size, last_used in _native.entries()
    ]


def peek(path: Path) -> Mapping[str, Any] | None:
    """The header of the entry at `path` for display, unchecked; None if unreadable.
    Never waits on a pipe."""
    header = _native.peek(os.fsencode(path))
    return None if header is None else json.loads(header)


def clear(on_error: Callable[[Path, OSError], None] | None = None) -> tuple[int, int]:
    """Removes every entry and temporary file; returns (files removed, bytes freed).

    A file that cannot be removed (a directory named like an entry, say) is skipped and
    handed to `on_error`, or warned about; the others are removed all the same.
    """
    removed, freed, failures = _native.clear(on_error is None)
    if on_error is not None:
        for path, code in failures:
            on_error(Path(path), OSError(code, os.strerror(code), path))
    return removed, freed
