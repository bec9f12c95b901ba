"""The verdicts of FFI probe compiles, kept in the disk cache.

Loading a plugin registers jaxlib's handlers (and those JAX holds) and compiles a probe
program that calls them, since XLA drops the error of a registration it rejects. Which
handlers XLA takes depends only on the plugin library, on each handler's name, origin
and XLA FFI version, and on the versions of jaxlib and cyxla: all of them are the key,
so a later load of the same plugin with the same handlers reads the verdict instead of
compiling the probe again, and a rebuilt or upgraded plugin or jaxlib probes afresh.
A verdict that cannot be read or written is a miss: the probe runs, as without a cache.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from cyxla import _core
from cyxla._cache import store

__all__ = ["load", "source", "store_verdict"]

_KIND = "probes"


def plugin_identity(plugin: _core.Plugin) -> dict[str, Any]:
    """The plugin library as the verdict depends on it: a rebuilt one differs."""
    info = os.stat(plugin.path)
    return {
        "path": plugin.path,
        "size": info.st_size,
        "mtime_ns": info.st_mtime_ns,
        "pjrt_version": list(plugin.version),
        "xla_version": json.loads(json.dumps(plugin.attributes.get("xla_version"), default=str)),
    }


def source(plugin: _core.Plugin, targets: Sequence[tuple[str, str, Any]]) -> dict[str, Any] | None:
    """What a verdict on `targets` ((name, origin, XLA FFI versions) each) registered with
    `plugin` depends on, as JSON; None when the plugin library cannot be identified."""
    import jaxlib  # imported where used, as everything of JAX's in a process that only runs

    try:
        identity = plugin_identity(plugin)
    except OSError:
        return None
    return {
        "plugin": identity,
        "jaxlib": jaxlib.__version__,
        "cyxla": store.cyxla_version(),
        "targets": sorted(json.loads(json.dumps([list(t) for t in targets]))),
    }


def _key(document: Mapping[str, Any]) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def load(document: Mapping[str, Any]) -> dict[str, str] | None:
    """The rejected targets and why, as a probe found them for `document`; None on a miss."""
    try:
        if store.configured_directory() is None:
            return None
        entry = store.read(_KIND, _key(document))
    except (store.CacheRefusedError, store.EntryError, OSError):
        return None
    if entry is None or entry.header.get("source") != document:
        return None
    try:
        rejected = store.parse_json(entry.payload)
    except ValueError:
        return None
    if not isinstance(rejected, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in rejected.items()
    ):
        return None
    return rejected


def store_verdict(document: Mapping[str, Any], rejected: Mapping[str, str]) -> None:
    """Keeps a probe's verdict (the rejected targets and why) for `document`."""
    payload = json.dumps(dict(rejected), sort_keys=True).encode()
    try:
        if store.configured_directory() is None:
            return
        store.write(_KIND, _key(document), {"name": "FFI probe", "source": dict(document)}, payload)
    except Exception:  # a verdict not kept is a probe compiled again next time
        return
