"""What a new process keeps from the last one so that loading the plugin is short: the
FFI probe's verdict and the plugin entry points found, in the disk cache. Each is used
by a process with the same plugin, jaxlib and installed distributions, and not after
any of them changes; either way the process runs the same programs as before."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import cyxla as cx
from cyxla._cache import store
from cyxla._ffi import probes
from cyxla._run import plugin_scans as scans

from support import last_json, run_python

#: Counts the probe compiles and entry-point scans of one process, changes what the
#: test says, then loads the plugin and runs a program that calls jaxlib's LAPACK
#: handlers (which only a verified registration runs), checked against NumPy.
_CHILD = """
import json, sys
import numpy as np
import jax, jax.numpy as jnp
from importlib import metadata
import cyxla as cx
from cyxla._ffi import probes
from cyxla._ffi import plugin as ffi_plugin, registry

counts = {"probes": 0, "scans": 0}
probe, scan = ffi_plugin._probe, metadata.entry_points

def counted_probe(*args):
    counts["probes"] += 1
    return probe(*args)

def counted_scan(*args, **kwargs):
    counts["scans"] += kwargs.get("group") == "cyxla.plugins"  # JAX scans its own group
    return scan(*args, **kwargs)

ffi_plugin._probe = counted_probe
metadata.entry_points = counted_scan
CHANGE
program = cx.lower(jnp.linalg.inv, [jax.ShapeDtypeStruct((3, 3), jnp.float32)])
a = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]], np.float32)
(inverse,) = cx.compile_program(program)[0].run([a])
# Rejections other than jax 0.12's own handlers, built for a newer XLA FFI than the
# 0.11.2 plugin runs (docs/installation.md: the gap cyxla bridges).
newer = lambda r: r.handler_ffi_version > r.plugin_ffi_version
rejected = sorted(n for n, r in registry.registrations().items() if r.error and not newer(r))
print(json.dumps({**counts, "right": bool(np.allclose(inverse, np.linalg.inv(a), atol=1e-5)),
                  "registered": len(registry.registrations()), "rejected": rejected}))
"""


def _child(cache: Path, change: str = "", **env: str) -> dict[str, Any]:
    result: subprocess.CompletedProcess[str] = run_python(
        _CHILD.replace("CHANGE", textwrap.dedent(change)),
        env={"CYXLA_CACHE_DIR": str(cache), **env},
    )
    return last_json(result)


def test_the_second_process_reads_the_probe_verdict_and_the_scan(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _child(cache)
    assert first["probes"] >= 1 and first["scans"] == 1
    second = _child(cache)
    assert (second["probes"], second["scans"]) == (0, 0)
    for run in (first, second):
        assert run["right"] and run["rejected"] == []
    assert second["registered"] == first["registered"] > 0
    assert {p.parent.name for p in cache.glob("*/*.entry")} >= {"probes", "scans"}


def test_another_plugin_identity_or_jaxlib_probes_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _child(cache)
    rebuilt = _child(
        cache,
        """
        identity = probes.plugin_identity
        probes.plugin_identity = lambda plugin: {**identity(plugin), "mtime_ns": 1}
        """,
    )
    assert rebuilt["probes"] >= 1 and rebuilt["right"]
    upgraded = _child(cache, "import jaxlib; jaxlib.__version__ = '0.0.1'")
    assert upgraded["probes"] >= 1 and upgraded["right"]
    assert _child(cache)["probes"] == 0  # the first verdict is still there


def test_a_new_distribution_scans_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    site = tmp_path / "site"
    site.mkdir()
    _child(cache, PYTHONPATH=str(site))
    assert _child(cache, PYTHONPATH=str(site))["scans"] == 0
    info = site / "unrelated-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: unrelated\nVersion: 1.0\n")
    assert _child(cache, PYTHONPATH=str(site))["scans"] == 1


def test_a_cache_off_probes_and_scans_every_time(tmp_path: Path) -> None:
    for _ in range(2):
        run = _child(tmp_path, CYXLA_CACHE_DIR="0")
        assert run["probes"] >= 1 and run["scans"] == 1 and run["right"]


# ------------------------------------------------------ the verdict store, in this process


def test_a_damaged_or_foreign_probe_verdict_is_a_miss(cache: Path) -> None:
    document = {"plugin": {"path": "/x/plugin.so"}, "targets": [["t", "jaxlib", [0, 4]]]}
    probes.store_verdict(document, {"t": "rejected: why"})
    assert probes.load(document) == {"t": "rejected: why"}
    key = probes._key(document)
    header = {"name": "FFI probe", "source": document}
    for payload in (b"not json", b"[1, 2]", b'{"t": 3}'):
        store.write("probes", key, header, payload)
        assert probes.load(document) is None, payload
    # An entry written for another source under the same key (a collision) is not used.
    store.write("probes", key, {"name": "FFI probe", "source": {"other": 1}}, b"{}")
    assert probes.load(document) is None


def test_a_truncated_probe_verdict_is_a_miss_and_is_replaced(cache: Path) -> None:
    document = {"plugin": {"path": "/x/plugin.so"}, "targets": [["t", "jaxlib", [0, 4]]]}
    probes.store_verdict(document, {"t": "rejected: why"})
    (entry,) = cache.glob("probes/*.entry")
    entry.write_bytes(entry.read_bytes()[:-3])  # the store refuses it (EntryError)
    assert probes.load(document) is None
    probes.store_verdict(document, {"t": "rejected: again"})  # the probe's next verdict
    assert probes.load(document) == {"t": "rejected: again"}


def test_an_unresolvable_cache_directory_keeps_no_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cx.CACHE_ENVIRONMENT_VARIABLE, "~no-such-user-of-cyxla/cache")
    with pytest.warns(UserWarning, match="cannot resolve the cache directory"):
        assert probes.load({"a": 1}) is None


def test_a_plugin_library_that_is_gone_has_no_verdict_key(tmp_path: Path) -> None:
    class Gone:
        path = str(tmp_path / "missing.so")

    assert probes.source(Gone(), []) is None  # type: ignore[arg-type]


def test_a_verdict_that_cannot_be_written_is_dropped(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any) -> None:
        raise OSError("read-only file system")

    monkeypatch.setattr(store, "write", refuse)
    probes.store_verdict({"a": 1}, {"t": "why"})  # the probe just runs again next time
    assert probes.load({"a": 1}) is None


# ---------------------------------------------------------- the scan store, in this process


def test_a_damaged_or_malformed_scan_is_a_miss_and_is_replaced(cache: Path) -> None:
    document = scans.source("cyxla.plugins")
    found = [("cpu", "some_plugin:register")]
    scans.store_points(document, found)
    assert scans.load(document) == found
    key = scans._key(document)
    for payload in (b"not json", b'{"cpu": 1}', b'[["cpu"]]', b'[["cpu", 1]]', b"[1]"):
        store.write("scans", key, {"name": "plugin scan"}, payload)
        assert scans.load(document) is None, payload
    (entry,) = cache.glob("scans/*.entry")
    entry.write_bytes(entry.read_bytes()[:-3])  # the store refuses it (EntryError)
    assert scans.load(document) is None
    scans.store_points(document, found)  # what the next scan finds replaces it
    assert scans.load(document) == found


def test_a_scan_that_cannot_be_written_is_dropped(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any) -> None:
        raise OSError("read-only file system")

    monkeypatch.setattr(store, "write", refuse)
    document = scans.source("cyxla.plugins")
    scans.store_points(document, [("cpu", "some_plugin:register")])  # scanned again next time
    assert scans.load(document) is None


def test_an_archive_on_the_path_is_keyed_by_its_modification_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A zip file or egg on sys.path holds its distributions inside: replacing it
    (a new modification time) changes what a scan depends on, so it scans again."""
    archive = tmp_path / "plugins.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip archive
    monkeypatch.setattr(sys, "path", [*sys.path, str(archive)])
    before = scans.source("cyxla.plugins")
    assert before["path"][-1] == [str(archive), archive.stat().st_mtime_ns]
    os.utime(archive, ns=(1, archive.stat().st_mtime_ns + 1_000_000_000))
    after = scans.source("cyxla.plugins")
    assert after["path"][-1] == [str(archive), archive.stat().st_mtime_ns]
    assert scans._key(after) != scans._key(before)
