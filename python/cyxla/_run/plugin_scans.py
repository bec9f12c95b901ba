"""The plugin entry points found by the last scan, kept in the disk cache.

Finding the `cyxla.plugins` entry points reads the metadata of every installed
distribution, which costs a new process more than loading a cached executable. What a
scan finds depends on the distributions in the directories of `sys.path`: installing,
upgrading or removing one adds, replaces or removes its `.dist-info` (or `.egg-info`)
directory. The names and modification times of those directories, the paths and the
interpreter are the key, so any such change scans again; listing them costs about a
millisecond. (An entry_points.txt edited in place is not noticed: reinstall.)
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

from cyxla._cache import store

__all__ = ["load", "source", "store_points"]

_KIND = "scans"


def _distributions(entry: str) -> Any:
    """What identifies the distributions that the `sys.path` entry `entry` holds."""
    try:
        with os.scandir(entry or ".") as listing:
            return sorted(
                [item.name, item.stat().st_mtime_ns]
                for item in listing
                if item.name.endswith((".dist-info", ".egg-info"))
            )
    except NotADirectoryError:  # a zip file or an egg
        return os.stat(entry).st_mtime_ns
    except OSError:
        return None


def source(group: str) -> dict[str, Any]:
    """What a scan of `group` depends on, as JSON."""
    return {
        "group": group,
        "python": [sys.executable, sys.version],
        "path": [[os.path.abspath(e or "."), _distributions(e)] for e in sys.path],
        "cyxla": store.cyxla_version(),
    }


def _key(document: dict[str, Any]) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def load(document: dict[str, Any]) -> list[tuple[str, str]] | None:
    """The (name, value) of each entry point an earlier scan found; None on a miss."""
    try:
        if store.configured_directory() is None:
            return None
        # The store checks that the entry is the one of this key (its binding).
        entry = store.read(_KIND, _key(document))
        if entry is None:
            return None
        points = store.parse_json(entry.payload)
    except (store.CacheRefusedError, store.EntryError, OSError, ValueError):
        return None
    if not isinstance(points, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) for s in p) for p in points
    ):
        return None
    return [(name, value) for name, value in points]


def store_points(document: dict[str, Any], points: list[tuple[str, str]]) -> None:
    """Keeps what a scan found for `document`."""
    try:
        if store.configured_directory() is None:
            return
        payload = json.dumps([list(p) for p in points]).encode()
        store.write(_KIND, _key(document), {"name": "plugin scan"}, payload)
    except Exception:  # not kept: the next process scans again
        return
