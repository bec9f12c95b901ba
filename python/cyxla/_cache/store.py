"""The disk cache's store: where it lives, its entries' format, and who may write them.

An entry is one file: a fixed prefix (magic, format version, header length, SHA-256 of
everything after the prefix), a JSON header (kind, key, payload length and what the
caller records) and the payload. Entries are written to a temporary file in the same
directory and renamed into place, so readers see a whole entry or none; every read
checks the length, checksum and key before it hands the payload on, since payloads are
native code and StableHLO that the plugin trusts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import struct
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cyxla._version import __version__

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
    "binding",
    "cache_directory",
    "clear",
    "configured_directory",
    "cyxla_version",
    "entries",
    "entry_path",
    "max_bytes",
    "open_store",
    "parse_json",
    "peek",
    "read",
    "write",
]

#: The cache directory; an empty value or `0` turns the cache off.
CACHE_ENVIRONMENT_VARIABLE = "CYXLA_CACHE_DIR"
#: The most bytes the cache keeps before it evicts the least recently used entries.
MAX_BYTES_ENVIRONMENT_VARIABLE = "CYXLA_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 1 << 30
#: Bumped whenever the layout of an entry changes; older entries then read as foreign.
#: 2 (2026-12): headers bind key and payload (`binding`), executables record the key's
#: source document, and specs are written with element types as numbers.
FORMAT_VERSION = 2
#: The kinds of entry, each in a subdirectory of the cache directory.
KINDS = ("executables", "programs", "probes", "scans")

_MAGIC = b"CYXLA\x00CE"
_PREFIX = struct.Struct("<8sII32s")  # magic, format version, header length, SHA-256
_SUFFIX = ".entry"
_TEMPORARY_PREFIX = ".tmp-"
#: A temporary file this old was left by a process that died while writing it.
_STALE_TEMPORARY_SECONDS = 3600.0


class CacheRefusedError(RuntimeError):
    """The cache directory is unsafe or unusable, so the cache is off for this call."""


class EntryTooLargeError(RuntimeError):
    """An entry alone is larger than the cache's size bound, so it is not stored."""


class EntryError(RuntimeError):
    """An entry is truncated, corrupted, foreign or unsafe; it is ignored and replaced."""


@dataclass(frozen=True)
class Entry:
    """A checked entry: its header and payload."""

    path: Path
    header: Mapping[str, Any]
    payload: bytes


def configured_directory() -> Path | None:
    """`cache_directory`, but CacheRefusedError (after a warning) when the directory
    cannot be resolved, such as `CYXLA_CACHE_DIR=~nosuchuser/x`."""
    configured = os.environ.get(CACHE_ENVIRONMENT_VARIABLE)
    if configured is not None and configured.strip() in ("", "0"):
        return None
    try:
        if configured is None:
            return _default_directory()
        return Path(configured).expanduser().absolute()
    except (RuntimeError, OSError, ValueError) as error:  # RuntimeError: no such user
        setting = f"{CACHE_ENVIRONMENT_VARIABLE}={configured!r}" if configured else "the default"
        raise _refuse(f"cannot resolve the cache directory ({setting}): {error}") from error


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


def _default_directory() -> Path:
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "cyxla" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "cyxla"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    # The XDG spec says to ignore a relative path.
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "cyxla"


def max_bytes() -> int:
    """The size bound: `CYXLA_CACHE_MAX_BYTES` (bytes, or with a K, M or G suffix)."""
    text = os.environ.get(MAX_BYTES_ENVIRONMENT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1].upper(), 1)
    number = text[:-1] if scale > 1 else text
    try:
        value = int(number) * scale
    except ValueError:
        value = -1
    if value < 0:
        warnings.warn(
            f"cyxla cache: {MAX_BYTES_ENVIRONMENT_VARIABLE}={text!r} is not a size such as "
            f"1073741824 or 512M; using {DEFAULT_MAX_BYTES} bytes",
            stacklevel=2,
        )
        return DEFAULT_MAX_BYTES
    return value


def cyxla_version() -> str:
    """The version of cyxla that writes and reads entries (a function: tests replace it)."""
    return __version__


def _user() -> int | None:
    """The effective user id, or None where there are none (Windows)."""
    return os.geteuid() if hasattr(os, "geteuid") else None


def _unsafe(info: os.stat_result, what: str, path: Path) -> str | None:
    """Why `info` may not be trusted: someone else owns it or others can write it."""
    user = _user()
    if user is None:
        return None
    if info.st_uid != user:
        return f"{what} {path} is owned by user {info.st_uid}, not by this user ({user})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{what} {path} can be written by other users (mode {stat.filemode(info.st_mode)})"
    return None


def _refuse(message: str) -> CacheRefusedError:
    # A warning as well as the statistics: a cache that is quietly off is a slow start.
    warnings.warn(f"cyxla cache: {message}; the cache is not used", stacklevel=3)
    return CacheRefusedError(message)


def _make_private_directory(path: Path) -> None:
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)


def open_store(kind: str, *, create: bool) -> Path | None:
    """The checked directory of `kind`'s entries; None when the cache is off, or when it
    does not exist and `create` is false. Raises CacheRefusedError (after a warning) when
    the cache directory or the kind's directory is unsafe or cannot be made."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of cache entry {kind!r}; expected one of {KINDS}")
    root = configured_directory()
    if root is None:
        return None
    directory = root / kind
    try:
        if create:
            root.parent.mkdir(parents=True, exist_ok=True)
            _make_private_directory(root)
        elif not directory.is_dir():
            return None
        problem = _unsafe(root.stat(), "the cache directory", root)
        if problem is None:
            if create:
                _make_private_directory(directory)
            # lstat: the kind's directory must be a real directory, not a link elsewhere.
            info = directory.lstat()
            if not stat.S_ISDIR(info.st_mode):
                problem = f"{directory} is not a directory"
            else:
                problem = _unsafe(info, "the cache directory", directory)
    except OSError as error:
        raise _refuse(f"cannot use the cache directory {root}: {error}") from error
    if problem is not None:
        raise _refuse(problem)
    return directory


def entry_path(directory: Path, key: str) -> Path:
    """The file of `key`'s entry: a hash, so any key string makes a safe file name."""
    digest = hashlib.sha256(f"{directory.name}\0{key}".encode()).hexdigest()
    return directory / f"{digest}{_SUFFIX}"


def binding(kind: str, key: str, payload: bytes) -> str:
    """A digest of the kind, key and payload together, kept in the checksummed header.

    The checksum alone proves an entry whole, not that it is the entry of its key: an
    entry whose `key` field (and checksum) was rewritten would pass it. Nothing without a
    secret stops a writer who knows this format; the directory's ownership check does.
    """
    digest = hashlib.sha256(f"{kind}\0{key}\0".encode())
    digest.update(payload)
    return digest.hexdigest()


def _encode(header: Mapping[str, Any], payload: bytes) -> bytes:
    header_bytes = json.dumps(
        dict(header), sort_keys=True, separators=(",", ":"), allow_nan=False
    ).encode()
    digest = hashlib.sha256(header_bytes)
    digest.update(payload)
    prefix = _PREFIX.pack(_MAGIC, FORMAT_VERSION, len(header_bytes), digest.digest())
    return prefix + header_bytes + payload


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a value an entry holds")


def parse_json(data: bytes) -> Any:
    """JSON as entries write it; ValueError for anything else, including NaN, Infinity,
    numbers too long to convert and nesting too deep to parse (RecursionError)."""
    try:
        return json.loads(data, parse_constant=_no_constant)
    except RecursionError as error:
        raise ValueError("nested too deeply") from error


#: The header fields the store writes, with their types.
_HEADER_FIELDS: Mapping[str, type] = {
    "kind": str,
    "key": str,
    "payload_length": int,
    "cyxla_version": str,
    "binding": str,
}


def _header_problem(header: Any, payload: bytes) -> str | None:
    if not isinstance(header, dict):
        return "a header that does not describe its payload"
    for field, kind in _HEADER_FIELDS.items():
        value = header.get(field)
        if type(value) is not kind:  # not isinstance: True is not a length
            return f"a header that does not describe its payload ({field}: {value!r:.80})"
    if header["payload_length"] != len(payload):
        return "a header that does not describe its payload"
    return None


def _decode(path: Path, data: bytes, kind: str, key: str) -> Entry:
    """Checks `data` read from `path` and splits it; EntryError says what is wrong."""
    if len(data) < _PREFIX.size:
        raise EntryError(f"{path} is truncated ({len(data)} bytes, no complete prefix)")
    magic, version, header_length, digest = _PREFIX.unpack_from(data)
    if magic != _MAGIC:
        raise EntryError(f"{path} is not a cyxla cache entry (bad magic number)")
    if version != FORMAT_VERSION:
        raise EntryError(
            f"{path} was written in cache format {version}; this cyxla reads format "
            f"{FORMAT_VERSION}"
        )
    body = memoryview(data)[_PREFIX.size :]
    if header_length > len(body):
        raise EntryError(f"{path} is truncated (its header is incomplete)")
    if hashlib.sha256(body).digest() != digest:
        # Checked before parsing anything: a truncated payload fails here too.
        raise EntryError(f"{path} is corrupted or truncated (its SHA-256 does not match)")
    try:
        header = parse_json(bytes(body[:header_length]))
    except ValueError as error:
        raise EntryError(f"{path} has an unreadable header: {error}") from error
    payload = bytes(body[header_length:])
    problem = _header_problem(header, payload)
    if problem is not None:
        raise EntryError(f"{path} has {problem}")
    if header["kind"] != kind or header["key"] != key:
        raise EntryError(
            f"{path} holds the {header['kind']:.40} entry for another key; it is not this "
            f"{kind} entry"
        )
    if header["binding"] != binding(kind, key, payload):
        raise EntryError(f"{path} was moved from another key (its binding does not match)")
    if header["cyxla_version"] != cyxla_version():
        raise EntryError(
            f"{path} was written by cyxla {header['cyxla_version']:.40}, not by this cyxla "
            f"{cyxla_version()}"
        )
    return Entry(path, header, payload)


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """A descriptor open for reading on the regular file at `path`, and its status.

    Never waits: a pipe or device is refused from `lstat` before it is opened, and opened
    with O_NONBLOCK in case it was swapped in meanwhile; `fstat` on the open descriptor
    then checks the file read is the file checked. FileNotFoundError if there is none;
    EntryError for anything but a regular file, or a file that cannot be opened.
    """
    try:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            raise EntryError(f"cannot open {path}: a symbolic link is not followed")
        if not stat.S_ISREG(mode):
            raise EntryError(f"{path} is not a regular file")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        descriptor = os.open(path, flags | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise
    except OSError as error:  # a symbolic link (ELOOP), or no permission
        raise EntryError(f"cannot open {path}: {error}") from error
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise EntryError(f"{path} is not a regular file")
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, info


def read(kind: str, key: str) -> Entry | None:
    """The checked entry of `key`, or None if there is none or the cache is off.

    Raises EntryError for an entry that must not be used (it is left for `write` to
    replace) and CacheRefusedError for an unsafe directory.
    """
    directory = open_store(kind, create=False)
    if directory is None:
        return None
    path = entry_path(directory, key)
    try:
        descriptor, info = _open_regular(path)
    except FileNotFoundError:
        return None
    try:
        problem = _unsafe(info, "the entry", path)
        if problem is not None:
            warnings.warn(f"cyxla cache: {problem}; it is not loaded", stacklevel=2)
            raise EntryError(problem)
        file = os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise
    with file:
        try:
            data = file.read()
        except OSError as error:
            raise EntryError(f"cannot read {path}: {error}") from error
    entry = _decode(path, data, kind, key)
    with contextlib.suppress(OSError):
        os.utime(path)  # the modification time is the last use, for eviction
    return entry


def write(kind: str, key: str, header: Mapping[str, Any], payload: bytes) -> Path | None:
    """Stores an entry atomically and evicts old ones; returns its path, or None if the
    cache is off. Raises OSError, CacheRefusedError or EntryTooLargeError when it cannot
    store."""
    directory = open_store(kind, create=True)
    if directory is None:
        return None
    data = _encode(
        {
            **header,
            "kind": kind,
            "key": key,
            "payload_length": len(payload),
            "binding": binding(kind, key, payload),
            "cyxla_version": cyxla_version(),
            "created": time.time(),
        },
        payload,
    )
    bound = max_bytes()
    if len(data) > bound:
        raise EntryTooLargeError(
            f"the {kind[:-1]} entry ({len(data)} bytes) is larger than the cache's size "
            f"bound ({bound} bytes, {MAX_BYTES_ENVIRONMENT_VARIABLE})"
        )
    path = entry_path(directory, key)
    descriptor, temporary = tempfile.mkstemp(prefix=_TEMPORARY_PREFIX, dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        # Atomic: a concurrent writer of the same key wins or loses whole.
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _evict(bound, keep=path)
    return path


@dataclass(frozen=True)
class Listing:
    """One file in the cache, as `entries` finds it."""

    kind: str
    path: Path
    size: int
    last_used: float


def entries() -> Iterator[Listing]:
    """Every entry file and leftover temporary file in the cache, unchecked."""
    root = cache_directory()
    if root is None:
        return
    for kind in KINDS:
        try:
            names = os.listdir(root / kind)
        except OSError:
            continue
        for name in names:
            if not (name.endswith(_SUFFIX) or name.startswith(_TEMPORARY_PREFIX)):
                continue
            path = root / kind / name
            try:
                info = path.lstat()
            except OSError:
                continue  # removed meanwhile by another process
            yield Listing(kind, path, info.st_size, info.st_mtime)


def _evict(bound: int, keep: Path) -> None:
    """Removes the least recently used entries until the cache fits in `bound` bytes."""
    listing = list(entries())
    now = time.time()
    live = []
    for item in listing:
        if item.path.name.startswith(_TEMPORARY_PREFIX):
            if now - item.last_used > _STALE_TEMPORARY_SECONDS:
                with contextlib.suppress(OSError):
                    item.path.unlink()
            continue
        live.append(item)
    total = sum(item.size for item in live)
    for item in sorted(live, key=lambda i: i.last_used):
        if total <= bound:
            break
        if item.path == keep:
            continue
        with contextlib.suppress(FileNotFoundError):
            item.path.unlink()
        total -= item.size


def peek(path: Path) -> Mapping[str, Any] | None:
    """The header of the entry at `path` for display, unchecked; None if unreadable.
    Never waits on a pipe (see `_open_regular`)."""
    try:
        descriptor, _ = _open_regular(path)
        with os.fdopen(descriptor, "rb") as file:
            prefix = file.read(_PREFIX.size)
            if len(prefix) < _PREFIX.size:
                return None
            magic, _, header_length, _ = _PREFIX.unpack(prefix)
            if magic != _MAGIC:
                return None
            header = parse_json(file.read(header_length))
    except (OSError, ValueError, EntryError):
        return None
    return header if isinstance(header, dict) else None


def clear(on_error: Callable[[Path, OSError], None] | None = None) -> tuple[int, int]:
    """Removes every entry and temporary file; returns (files removed, bytes freed).

    A file that cannot be removed (a directory named like an entry, say) is skipped and
    handed to `on_error`, or warned about; the others are removed all the same.
    """
    removed = freed = 0
    for item in entries():
        try:
            item.path.unlink()
        except FileNotFoundError:
            continue  # removed meanwhile by another process
        except OSError as error:
            if on_error is None:
                warnings.warn(f"cyxla cache: could not remove {item.path}: {error}", stacklevel=2)
            else:
                on_error(item.path, error)
            continue
        removed += 1
        freed += item.size
    return removed, freed
