"""The disk cache: hits across processes, concurrency, damaged, hostile, moved and unsafe
entries, pipes in place of entries, keys, eviction, lowered programs and the `cache`
command."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import random
import re
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import cyxla as cx
from cyxla import _core
from cyxla.__main__ import main as cli
from cyxla._cache import store
from cyxla._jax.compile_options import compile_options
from cyxla._lower import cache_key as cache_keys
from cyxla._run import plugins as _plugins

from program_file_writer import pack, parts, replace_metadata
from support import (
    ENTRY_MAGIC,
    ENTRY_PREFIX,
    cache_seams,
    encode_entry,
    entry_binding,
    entry_path,
    plugin_library,
    run_cyxla,
    run_python,
    split_entry,
)

# ------------------------------------------------------------------ helpers

#: A program lowered and compiled in a fresh process. With BARRIER set, the process
#: waits before storing its entry until one other process has got as far, so both
#: compiled the program (both missed) and both write at once.
_CHILD = """
import json, os, time
import numpy as np
import jax, jax.numpy as jnp
import cyxla as cx

def affine(x, w):
    return jnp.tanh(x @ w) + 1.0

f32 = jnp.float32
program = cx.lower(affine, [jax.ShapeDtypeStruct((4, 8), f32), jax.ShapeDtypeStruct((8, 8), f32)])
barrier = os.environ.get("BARRIER")
if barrier:
    # Both processes start compile_program together, with the plugin loaded: both look
    # the program up before either has stored it, compile it, and write at once.
    cx.initialize()
    open(os.path.join(barrier, f"at-compile-{os.getpid()}"), "w").close()
    deadline = time.monotonic() + 120
    while sum(n.startswith("at-compile-") for n in os.listdir(barrier)) < 2:
        assert time.monotonic() < deadline, "the other process never came"
        time.sleep(0.001)

x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
w = np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8)
executable, stats = cx.compile_program(program)
(out,) = executable.run([x, w])
right = bool(np.allclose(out, np.tanh(x @ w) + 1.0, atol=1e-5))
print(json.dumps({"hit": stats.cache_hit, "error": stats.cache_error, "right": right,
                  "library": cx.library_identity()["path"]}))
"""


def _outcome(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _child(cache: Path, **env: str) -> dict[str, Any]:
    return _outcome(run_python(_CHILD, env={"CYXLA_CACHE_DIR": str(cache), **env}))


def _spec(*shape: int, dtype: Any = np.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, np.dtype(dtype))


def _program(scale: float = 2.0, n: int = 8) -> cx.Program:
    """A small program; each `scale` gives other StableHLO (a constant) and another key."""

    def scaled(x: jax.Array, w: jax.Array) -> jax.Array:
        return jnp.tanh(x @ w) * scale

    return cx.lower(scaled, [_spec(4, n), _spec(n, n)])


def _check(executable: cx.Executable, scale: float = 2.0, n: int = 8) -> None:
    x = np.linspace(-1, 1, 4 * n, dtype=np.float32).reshape(4, n)
    w = np.linspace(-0.5, 0.5, n * n, dtype=np.float32).reshape(n, n)
    (out,) = executable.run([x, w])
    np.testing.assert_allclose(out, np.tanh(x @ w) * scale, rtol=1e-5, atol=1e-6)


def _entries(cache: Path, kind: str = "executables") -> list[Path]:
    return sorted((cache / kind).glob("*.entry"))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache directory of this test's own (not created yet)."""
    directory = tmp_path / "cache"
    monkeypatch.setenv(cx.CACHE_ENVIRONMENT_VARIABLE, str(directory))
    monkeypatch.delenv(store.MAX_BYTES_ENVIRONMENT_VARIABLE, raising=False)
    return directory


def _payload(path: Path) -> bytes:
    data = path.read_bytes()
    _, _, length, _ = ENTRY_PREFIX.unpack_from(data)
    return data[ENTRY_PREFIX.size + length :]


def _rewrite_header(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Rewrites an entry's header with a valid checksum: a well-formed foreign entry."""
    header, payload = split_entry(path.read_bytes())
    change(header)
    path.write_bytes(encode_entry(header, payload))


#: Seconds a call may take before it counts as blocked on the cache.
_DEADLINE = 60.0


def _tanh_program(scale: float = 2.0) -> cx.Program:
    """A program of one input (tanh(x) * scale), whose entries the hostile-entry tests rewrite."""

    def scaled(x: jax.Array) -> jax.Array:
        return jnp.tanh(x) * scale

    return cx.lower(scaled, [_spec(4, 8)])


def _tanh_x() -> np.ndarray:
    return np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)


def _split(path: Path) -> tuple[dict[str, Any], bytes]:
    return split_entry(path.read_bytes())


def _write_raw(path: Path, header: bytes, payload: bytes) -> None:
    """An entry with these header bytes and a valid checksum."""
    path.write_bytes(encode_entry(header, payload))


# ------------------------------------------------------------------ directory


def test_cache_directory_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CYXLA_CACHE_DIR", str(tmp_path / "here"))
    assert cx.CACHE_ENVIRONMENT_VARIABLE == "CYXLA_CACHE_DIR"
    assert cx.cache_directory() == tmp_path / "here"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CYXLA_CACHE_DIR", "~/tilde/")
    assert cx.cache_directory() == tmp_path / "home" / "tilde"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CYXLA_CACHE_DIR", "relative")
    assert cx.cache_directory() == tmp_path / "relative"  # made absolute
    for off in ("", "0", " 0 "):
        monkeypatch.setenv("CYXLA_CACHE_DIR", off)
        assert cx.cache_directory() is None


def test_default_cache_directory_follows_xdg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CYXLA_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cx.cache_directory() == tmp_path / "home" / ".cache" / "cyxla"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cx.cache_directory() == tmp_path / "xdg" / "cyxla"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # ignored, as the spec says
    assert cx.cache_directory() == tmp_path / "home" / ".cache" / "cyxla"


def test_cache_is_created_private(cache: Path) -> None:
    cx.compile_program(_program())
    (entry,) = _entries(cache)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert stat.S_IMODE((cache / "executables").stat().st_mode) == 0o700
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_cache_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for off in ("", "0"):
        monkeypatch.setenv("CYXLA_CACHE_DIR", off)
        executable, stats = cx.compile_program(_program())
        _check(executable)
        assert (stats.cache_hit, stats.cache_error) == (False, None)
        assert stats.compile_seconds > 0
        assert not cx.store_lowered("off", _program())
        assert cx.load_lowered("off") is None
    assert list(tmp_path.iterdir()) == []


def test_unresolvable_cache_directory_turns_the_cache_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(cx.CACHE_ENVIRONMENT_VARIABLE, "~cyxla-no-such-user/x")
    program = _tanh_program()
    with pytest.warns(UserWarning, match="cannot resolve the cache directory"):
        executable, stats = cx.compile_program(program)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "cannot resolve" in stats.cache_error
    np.testing.assert_allclose(executable.run([_tanh_x()])[0], np.tanh(_tanh_x()) * 2.0, rtol=1e-5)
    with pytest.warns(UserWarning, match="cannot resolve the cache directory"):
        assert not cx.store_lowered("k", program)
    with pytest.warns(UserWarning, match="cannot resolve the cache directory"):
        assert cx.load_lowered("k") is None
    with pytest.warns(UserWarning, match="cannot resolve the cache directory"):
        assert cx.cache_directory() is None
    assert cli(["cache", "info"]) == 0
    assert "refused, so not used: cannot resolve" in capsys.readouterr().out
    assert cli(["cache", "clear"]) == 1
    assert "refused, so not cleared" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []  # nothing made under a literal `~...`


# ------------------------------------------------------------------ hits and misses


def test_hit_and_miss_across_processes(cache: Path) -> None:
    first = _child(cache)
    assert first == {**first, "hit": False, "error": None, "right": True}
    assert len(_entries(cache)) == 1
    second = _child(cache)
    assert second == {**second, "hit": True, "error": None, "right": True}


def test_hit_in_process_reports_its_statistics(cache: Path) -> None:
    program = _program()
    executable, miss = cx.compile_program(program)
    _check(executable)
    assert (miss.cache_hit, miss.cache_error) == (False, None)
    assert miss.compile_seconds > 0
    executable, hit = cx.compile_program(program)
    _check(executable)
    assert (hit.cache_hit, hit.cache_error, hit.compile_seconds) == (True, None, 0.0)
    assert hit.load_seconds > 0


def test_compile_options_are_part_of_the_key(cache: Path) -> None:
    program = _program()
    cx.compile_program(program)
    _, stats = cx.compile_program(program, options={"xla_backend_optimization_level": 1})
    assert not stats.cache_hit
    _, stats = cx.compile_program(program, options={"xla_backend_optimization_level": 1})
    assert stats.cache_hit
    assert len(_entries(cache)) == 2


def test_a_program_from_a_file_compiles_with_the_files_options(cache: Path, tmp_path: Path) -> None:
    """compile_program takes a loaded file's compile-options section, as the native loader
    does: the options are part of the key, so the statistics show which were used."""
    program = _program()
    cx.compile_program(program)  # stored under cyxla's default options
    path = tmp_path / "program.cyxla"
    program.save(path)
    _, stats = cx.compile_program(cx.load_program(path))
    assert stats.cache_hit  # the file holds the default options
    other = compile_options({"xla_backend_optimization_level": 1})
    metadata, stablehlo, _ = parts(path.read_bytes())
    path.write_bytes(pack(metadata, stablehlo, other))
    loaded = cx.load_program(path)
    executable, stats = cx.compile_program(loaded)
    assert not stats.cache_hit  # the file's options: another key
    _check(executable)
    _, stats = cx.compile_program(program, options={"xla_backend_optimization_level": 1})
    assert stats.cache_hit  # the same options, given by name
    _, stats = cx.compile_program(loaded, options={"xla_backend_optimization_level": 1})
    assert stats.cache_hit  # options given replace the file's


def test_two_processes_compiling_the_same_program_at_once(cache: Path, tmp_path: Path) -> None:
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {**os.environ, "CYXLA_CACHE_DIR": str(cache), "BARRIER": str(barrier)}
    code = textwrap.dedent(_CHILD)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outcomes = []
    for child in children:
        stdout, stderr = child.communicate(timeout=300)
        outcomes.append(
            _outcome(subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr))
        )
    # Both met at the barrier, then compiled and wrote at once (a hit is possible only if
    # one process compiled before the other looked, which the 20 ms compile makes rare).
    assert len(list(barrier.iterdir())) == 2
    assert all(o["error"] is None and o["right"] for o in outcomes)
    assert not all(o["hit"] for o in outcomes)
    assert len(_entries(cache)) == 1
    assert not [p for p in (cache / "executables").iterdir() if p.suffix != ".entry"]
    third = _child(cache)
    assert third == {**third, "hit": True, "error": None, "right": True}


def test_writers_and_readers_in_threads_see_whole_entries(cache: Path) -> None:
    payloads = [bytes([index]) * 300_000 for index in range(4)]
    seen: list[bytes] = []
    failures: list[Exception] = []
    stop = threading.Event()

    def writer(payload: bytes) -> None:
        for _ in range(15):
            store.write("programs", "contended", {}, payload)

    def reader() -> None:
        while not stop.is_set():
            try:
                entry = store.read("programs", "contended")
            except Exception as error:
                failures.append(error)
                return
            if entry is not None:
                seen.append(entry.payload)

    readers = [threading.Thread(target=reader) for _ in range(2)]
    writers = [threading.Thread(target=writer, args=(p,)) for p in payloads]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    assert failures == []
    assert seen and all(payload in payloads for payload in seen)
    assert len(list((cache / "programs").iterdir())) == 1  # no temporary file left


# ------------------------------------------------------------------ damaged entries


def _flip(position: int) -> Callable[[bytes], bytes]:
    def change(data: bytes) -> bytes:
        flipped = bytearray(data)
        flipped[position] ^= 0x10
        return bytes(flipped)

    return change


_DAMAGE: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "empty": (lambda d: b"", "truncated (0 bytes"),
    "truncated in the prefix": (lambda d: d[:30], "truncated (30 bytes"),
    "truncated in the header": (lambda d: d[: ENTRY_PREFIX.size + 10], "header is incomplete"),
    "truncated to half": (lambda d: d[: len(d) // 2], "corrupted or truncated"),
    "missing its last byte": (lambda d: d[:-1], "corrupted or truncated"),
    "bit flipped in the payload": (_flip(-100), "corrupted or truncated"),
    "bit flipped in the header": (_flip(ENTRY_PREFIX.size + 3), "corrupted or truncated"),
    "bit flipped in the checksum": (_flip(20), "corrupted or truncated"),
    "bit flipped in the magic": (_flip(1), "not a cyxla cache entry"),
    "another format version": (
        lambda d: d[:8] + (99).to_bytes(4, "little") + d[12:],
        "cache format 99",
    ),
}


@pytest.mark.parametrize("damage", list(_DAMAGE))
def test_damaged_entry_is_ignored_reported_and_replaced(cache: Path, damage: str) -> None:
    change, message = _DAMAGE[damage]
    program = _program()
    cx.compile_program(program)
    (entry,) = _entries(cache)
    entry.write_bytes(change(entry.read_bytes()))

    executable, stats = cx.compile_program(program)
    _check(executable)  # compiled afresh: right whatever the entry held
    assert not stats.cache_hit
    assert stats.cache_error is not None and message in stats.cache_error
    executable, stats = cx.compile_program(program)
    assert (stats.cache_hit, stats.cache_error) == (True, None)
    _check(executable)


_FOREIGN: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "another cyxla": (lambda h: h.update(cyxla_version="0.0.1"), "written by cyxla 0.0.1"),
    "another kind": (lambda h: h.update(kind="programs"), "for another key"),
}


@pytest.mark.parametrize("foreign", list(_FOREIGN))
def test_foreign_entry_is_ignored_reported_and_replaced(cache: Path, foreign: str) -> None:
    change, message = _FOREIGN[foreign]
    program = _program()
    cx.compile_program(program)
    (entry,) = _entries(cache)
    _rewrite_header(entry, change)

    executable, stats = cx.compile_program(program)
    _check(executable)
    assert not stats.cache_hit
    assert stats.cache_error is not None and message in stats.cache_error
    _, stats = cx.compile_program(program)
    assert stats.cache_hit


def test_entry_of_another_program_is_not_loaded(cache: Path) -> None:
    first, second = _program(2.0), _program(3.0)
    cx.compile_program(first)
    (first_entry,) = _entries(cache)
    cx.compile_program(second)
    (second_entry,) = [e for e in _entries(cache) if e != first_entry]
    shutil.copyfile(first_entry, second_entry)  # the other program's code, well formed

    executable, stats = cx.compile_program(second)
    _check(executable, scale=3.0)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "for another key" in stats.cache_error


# ------------------------------------------------------------------ hostile entries


def _nested(depth: int) -> str:
    return '{"tuple":[' * depth + '"*"' + "]}" * depth


def _hostile_program_entry(cache: Path, key: str, field: str, text: str) -> Path:
    """A program entry whose header `field` is the raw JSON `text`, with a valid checksum."""
    cx.store_lowered(key, _tanh_program())
    (entry,) = _entries(cache, "programs")
    header, payload = _split(entry)
    marker = "@@HOSTILE@@"
    header[field] = marker
    raw = json.dumps(header, sort_keys=True).replace(json.dumps(marker), text)
    _write_raw(entry, raw.encode(), payload)
    return entry


def _with_payload(entry: Path, change: Callable[[bytes], bytes]) -> None:
    """Changes an entry's payload, its header (length, binding) and checksum made right
    again: an entry that the store hands on."""
    header, payload = _split(entry)
    payload = change(payload)
    header["payload_length"] = len(payload)
    header["binding"] = entry_binding(header["kind"], header["key"], payload)
    entry.write_bytes(encode_entry(header, payload))


#: Program-entry payloads that the store hands on and the program-file reader refuses
#: (tests/test_program_file.py has every refusal), with a part of the warning.
_UNREADABLE_PROGRAMS: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "an altered program file": (_flip(-3), "altered or corrupted"),
    "an unknown platform": (
        lambda d: replace_metadata(d, "platform cpu", "platform abacus"),
        "unknown platform 'abacus'",
    ),
    "the StableHLO alone (as entries once held it)": (
        lambda d: parts(d)[1],
        "not a cyxla program file",
    ),
}


@pytest.mark.parametrize("case", sorted(_UNREADABLE_PROGRAMS))
def test_unreadable_lowered_entry_is_a_miss(
    cache: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    change, message = _UNREADABLE_PROGRAMS[case]
    cx.store_lowered("unreadable", _tanh_program())
    (entry,) = _entries(cache, "programs")
    _with_payload(entry, change)
    warning = f"cyxla cache: ignored an entry: {re.escape(str(entry))}: .*{re.escape(message)}"
    with pytest.warns(UserWarning, match=warning):
        assert cx.load_lowered("unreadable") is None
    assert cli(["cache", "info"]) == 0
    # Listed, as one program (the process's first plugin load may have kept its scan).
    rows = capsys.readouterr().out.splitlines()
    assert len([row for row in rows if row.lstrip().startswith("program ")]) == 1
    assert cx.store_lowered("unreadable", _tanh_program())  # and it is replaced
    assert cx.load_lowered("unreadable") == _tanh_program()


def test_a_lowered_entry_holds_the_programs_file(cache: Path, tmp_path: Path) -> None:
    program = _structured_program()
    cx.store_lowered("file", program)
    (entry,) = _entries(cache, "programs")
    header, payload = _split(entry)
    assert header["name"] == program.name
    program.save(tmp_path / "structured.cyxla")
    assert payload == (tmp_path / "structured.cyxla").read_bytes()


#: Executable-entry header fields with a valid checksum that must read as a miss.
_HOSTILE_EXECUTABLES = {
    "deep nesting": ("name", "[" * 100_000 + "]" * 100_000),
    "an Infinity": ("name", "Infinity"),
    "a huge number": ("name", "1e400"),
    "a payload length that is a bool": ("payload_length", "true"),
    "a key of another type": ("key", "1"),
    "a signature that is a list": ("signature", "[1]"),
    "a signature without aliases": ("signature", '{"parameters": [[11, [4, 8]]]}'),
    "a negative dimension in the signature": (
        "signature",
        '{"aliases": [], "parameters": [[11, [-4, 8]]]}',
    ),
    "a float in the signature": ("signature", '{"aliases": [], "parameters": [[11.0, [4, 8]]]}'),
    "a signature of another parameter": (
        "signature",
        '{"aliases": [], "parameters": [[4, [4, 8]]]}',
    ),
    # An output written into a parameter the executable does not have: the plugin's
    # parameter count refuses it (it would fail every call, and never be replaced).
    "a signature with a donated parameter too many": (
        "signature",
        '{"aliases": [[0, 1]], "parameters": [[11, [4, 8]], [11, [4, 8]]]}',
    ),
    # And the reverse: a program that writes in place, recorded as one that does not.
    "a signature without its donated parameter": (
        "signature",
        '{"aliases": [], "parameters": [[11, [256, 256]]]}',
    ),
}


@pytest.mark.parametrize("case", sorted(_HOSTILE_EXECUTABLES))
def test_hostile_executable_entry_is_a_miss(cache: Path, case: str) -> None:
    field, text = _HOSTILE_EXECUTABLES[case]
    program = _tanh_program()
    x = _tanh_x()
    if "donated parameter" in case and "256" in text:  # a program writing in place
        program = cx.lower(lambda v: jnp.tanh(v) * 2.0, [_spec(256, 256)])
        x = np.linspace(-1, 1, 256 * 256, dtype=np.float32).reshape(256, 256)
    cx.compile_program(program)
    (entry,) = _entries(cache, "executables")
    header, payload = _split(entry)
    header[field] = "@@HOSTILE@@"
    raw = json.dumps(header, sort_keys=True).replace('"@@HOSTILE@@"', text)
    _write_raw(entry, raw.encode(), payload)
    executable, stats = cx.compile_program(program)
    assert not stats.cache_hit and stats.cache_error is not None
    np.testing.assert_allclose(executable.run([x])[0], np.tanh(x) * 2.0, rtol=1e-5)
    executable, again = cx.compile_program(program)
    assert again.cache_hit  # replaced
    np.testing.assert_allclose(executable.run([x])[0], np.tanh(x) * 2.0, rtol=1e-5)


def test_cache_info_shows_a_hostile_name_as_unknown(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _hostile_program_entry(cache, "named", "name", '{"deep": ' + _nested(100_000) + "}")
    junk = cache / "programs" / "huge.entry"
    _write_raw(junk, b'{"name": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", b"")
    assert cli(["cache", "info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "2 files" in lines[2]
    assert sum(line.split()[:2] == ["program", "?"] for line in lines) == 2


def test_clear_skips_a_directory_named_like_an_entry(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cx.store_lowered("first", _tanh_program())
    cx.store_lowered("second", _tanh_program(3.0))
    blocking = cache / "programs" / "0-blocking.entry"  # listed first
    blocking.mkdir()
    assert cli(["cache", "clear"]) == 1
    out = capsys.readouterr().out
    assert "removed 2 files" in out and "0-blocking.entry" in out
    assert [p.name for p in (cache / "programs").iterdir()] == [blocking.name]
    with pytest.warns(UserWarning, match="could not remove .*0-blocking.entry"):
        assert store.clear() == (0, 0)


def test_clear_skips_an_entry_removed_meanwhile(cache: Path) -> None:
    """Another process's clear may remove an entry between the listing and the unlink."""
    cx.store_lowered("kept", _tanh_program())
    listed = store.entries()
    (entry,) = _entries(cache, "programs")
    others = [item for item in listed if item.path != entry]  # a scan's, say

    def remove(stage: str, name: str, fd: int) -> None:
        if stage == "listed":
            entry.unlink()  # by the other process

    with warnings.catch_warnings(), cache_seams(hook=remove):
        warnings.simplefilter("error")
        assert store.clear() == (len(others), sum(item.size for item in others))
    assert not any(item.path.exists() for item in listed)


def test_a_missing_entry_in_an_existing_store_is_a_miss(cache: Path) -> None:
    store.write("programs", "present", {}, b"x")
    assert store.read("programs", "absent") is None
    assert store.read("programs", "present") is not None


@pytest.mark.parametrize("swapped_in", ["a directory", "a symbolic link"])
def test_an_entry_swapped_after_its_check_is_refused(
    cache: Path, tmp_path: Path, swapped_in: str
) -> None:
    """What is opened is checked again: a directory swapped in between the check of the
    path and the open is refused by fstat (and its descriptor closed), a symbolic link by
    the open itself (O_NOFOLLOW)."""
    path = store.write("programs", "swapped", {}, b"x")
    assert path is not None
    elsewhere = tmp_path / "elsewhere.entry"
    opened: list[int] = []

    def swap(stage: str, name: str, fd: int) -> None:
        if stage == "checked" and Path(name) == path:
            path.rename(elsewhere)
            if swapped_in == "a directory":
                path.mkdir()
            else:
                path.symlink_to(elsewhere)
        elif stage == "opened":
            opened.append(fd)

    message = "is not a regular file" if swapped_in == "a directory" else "cannot open .*swapped"
    with cache_seams(hook=swap), pytest.raises(store.EntryError, match=message):
        store.read("programs", "swapped")
    assert len(opened) == (1 if swapped_in == "a directory" else 0)
    for descriptor in opened:
        with pytest.raises(OSError):
            os.fstat(descriptor)  # closed
    path.rmdir() if swapped_in == "a directory" else path.unlink()
    elsewhere.rename(path)
    assert store.read("programs", "swapped") is not None


# ------------------------------------------------------------------ entries moved to another key


def _move(source: Path, target: Path, key: str) -> None:
    """Rewrites `source` as the entry of `key` at `target`, with a recomputed checksum:
    what a naive copy under another key looks like."""
    header, payload = _split(source)
    header["key"] = key
    target.write_bytes(encode_entry(header, payload))


def test_executable_entry_moved_to_another_key_is_a_miss(cache: Path) -> None:
    doubled, tripled = _tanh_program(2.0), _tanh_program(3.0)
    cx.compile_program(doubled)
    (doubled_entry,) = _entries(cache, "executables")
    cx.compile_program(tripled)
    (tripled_entry,) = [e for e in _entries(cache, "executables") if e != doubled_entry]
    tripled_key = _split(tripled_entry)[0]["key"]
    _move(doubled_entry, tripled_entry, tripled_key)
    executable, stats = cx.compile_program(tripled)
    assert not stats.cache_hit and stats.cache_error is not None
    np.testing.assert_allclose(executable.run([_tanh_x()])[0], np.tanh(_tanh_x()) * 3.0, rtol=1e-5)


def test_executable_entry_with_another_source_is_a_miss(cache: Path) -> None:
    """Even with the binding recomputed: the program digest recorded is compared with the
    program's (a faulty writer's entry under the wrong key)."""
    doubled, tripled = _tanh_program(2.0), _tanh_program(3.0)
    cx.compile_program(doubled)
    (doubled_entry,) = _entries(cache, "executables")
    cx.compile_program(tripled)
    (tripled_entry,) = [e for e in _entries(cache, "executables") if e != doubled_entry]
    header, payload = _split(doubled_entry)
    header["key"] = _split(tripled_entry)[0]["key"]
    header["binding"] = entry_binding("executables", header["key"], payload)
    tripled_entry.write_bytes(encode_entry(header, payload))
    executable, stats = cx.compile_program(tripled)
    assert not stats.cache_hit
    assert stats.cache_error is not None
    assert "was compiled from another program or with other options" in stats.cache_error
    np.testing.assert_allclose(executable.run([_tanh_x()])[0], np.tanh(_tanh_x()) * 3.0, rtol=1e-5)


def test_lowered_entry_moved_to_another_key_is_a_miss(cache: Path) -> None:
    cx.store_lowered("doubled", _tanh_program(2.0))
    cx.store_lowered("tripled", _tanh_program(3.0))
    _move(
        entry_path(cache, "programs", "doubled"),
        entry_path(cache, "programs", "tripled"),
        "tripled",
    )
    with pytest.warns(UserWarning, match="binding does not match"):
        assert cx.load_lowered("tripled") is None


def test_entries_of_an_older_format_are_a_miss(cache: Path) -> None:
    cx.store_lowered("old", _tanh_program())
    (entry,) = _entries(cache, "programs")
    header, payload = _split(entry)
    entry.write_bytes(encode_entry(header, payload, version=1))
    assert store.FORMAT_VERSION >= 2
    with pytest.warns(UserWarning, match="cache format 1"):
        assert cx.load_lowered("old") is None


# ------------------------------------------------------------------ unsafe entries


def test_world_writable_cache_directory_is_refused(cache: Path) -> None:
    program = _program()
    cx.compile_program(program)
    (entry,) = _entries(cache)
    before = entry.stat().st_mtime_ns
    cache.chmod(0o777)
    try:
        with pytest.warns(UserWarning, match="can be written by other users"):
            executable, stats = cx.compile_program(program)
    finally:
        cache.chmod(0o700)
    _check(executable)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "other users" in stats.cache_error
    assert _entries(cache) == [entry] and entry.stat().st_mtime_ns == before  # untouched
    _, stats = cx.compile_program(program)
    assert stats.cache_hit


def test_writable_entry_directory_is_refused(cache: Path) -> None:
    program = _program()
    cx.compile_program(program)
    (cache / "executables").chmod(0o770)
    with pytest.warns(UserWarning, match="can be written by other users"):
        _, stats = cx.compile_program(program)
    assert not stats.cache_hit


def test_group_writable_entry_is_refused_and_replaced(cache: Path) -> None:
    program = _program()
    cx.compile_program(program)
    (entry,) = _entries(cache)
    entry.chmod(0o664)
    with pytest.warns(UserWarning, match="can be written by other users"):
        executable, stats = cx.compile_program(program)
    _check(executable)
    assert not stats.cache_hit
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600  # replaced by a private one
    _, stats = cx.compile_program(program)
    assert stats.cache_hit


def test_the_native_store_warns_of_an_unsafe_entry(cache: Path) -> None:
    """The C++ store gives the warning itself (it once gave none), to every caller."""
    path = store.write("programs", "unsafe", {}, b"x")
    assert path is not None
    path.chmod(0o664)
    with (
        pytest.warns(UserWarning, match="can be written by other users; it is not loaded"),
        pytest.raises(store.EntryError, match="can be written by other users"),
    ):
        _core._cache.read("programs", "unsafe")


def test_cache_owned_by_another_user_is_refused(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = _program()
    cx.compile_program(program)
    # Seen from another user's process, the cache belongs to someone else.
    with cache_seams(user=os.geteuid() + 1), pytest.warns(UserWarning, match="is owned by user"):
        executable, stats = cx.compile_program(program)
    _check(executable)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "owned by user" in stats.cache_error


def test_symbolic_link_entry_is_refused(cache: Path, tmp_path: Path) -> None:
    program = _program()
    cx.compile_program(program)
    (entry,) = _entries(cache)
    elsewhere = tmp_path / "elsewhere.entry"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)  # the right bytes, but not a file of the cache
    _, stats = cx.compile_program(program)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "cannot open" in stats.cache_error
    assert not entry.is_symlink()  # replaced by a real entry


# ------------------------------------------------------------------ pipes in place of entries


def _within_deadline(call: Callable[[], Any], pipe: Path) -> Any:
    """`call()`'s result; fails (instead of hanging) if it is still blocked after the
    deadline, after releasing it by opening the pipe's other end."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:  # reported by the test thread
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(_DEADLINE)
    if thread.is_alive():
        # A reader blocked in open() is released by a writer that opens and closes.
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(_DEADLINE)
        pytest.fail(f"blocked on the pipe {pipe}")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _pipe_in_place_of(entry: Path) -> Path:
    entry.unlink()
    os.mkfifo(entry, 0o600)
    return entry


def test_pipe_entry_does_not_block_compile_program(cache: Path) -> None:
    program = _tanh_program()
    cx.compile_program(program)
    (entry,) = _entries(cache, "executables")
    pipe = _pipe_in_place_of(entry)
    executable, stats = _within_deadline(lambda: cx.compile_program(program), pipe)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "is not a regular file" in stats.cache_error
    np.testing.assert_allclose(executable.run([_tanh_x()])[0], np.tanh(_tanh_x()) * 2.0, rtol=1e-5)


def test_pipe_entry_does_not_block_load_lowered(cache: Path) -> None:
    cx.store_lowered("pipe", _tanh_program())
    (entry,) = _entries(cache, "programs")
    pipe = _pipe_in_place_of(entry)
    with pytest.warns(UserWarning, match="is not a regular file"):
        assert _within_deadline(lambda: cx.load_lowered("pipe"), pipe) is None


def test_pipe_entry_does_not_block_cache_info(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cx.store_lowered("listed", _tanh_program())
    pipe = cache / "programs" / "pipe.entry"
    os.mkfifo(pipe, 0o600)
    assert _within_deadline(lambda: cli(["cache", "info"]), pipe) == 0
    shown = capsys.readouterr().out
    assert "2 files" in shown and "scaled" in shown
    assert store.peek(pipe) is None


def test_pipe_entry_is_cleared(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cx.store_lowered("listed", _tanh_program())
    os.mkfifo(cache / "programs" / "pipe.entry", 0o600)
    assert cli(["cache", "clear"]) == 0
    assert "removed 2 files" in capsys.readouterr().out
    assert list((cache / "programs").iterdir()) == []


# ------------------------------------------------------------------ size and eviction


_SIZES = {
    "1000": 1000,
    "512K": 512 << 10,
    "1k": 1 << 10,
    " 2K ": 2 << 10,
    "3m": 3 << 20,
    "64M": 64 << 20,
    "1_0M": 10 << 20,
    "2G": 2 << 30,
    "0": 0,
    "9" * 30: 2**63 - 1,  # so large that it bounds nothing
}


def test_max_bytes_parses_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    variable = store.MAX_BYTES_ENVIRONMENT_VARIABLE
    monkeypatch.delenv(variable, raising=False)
    assert store.max_bytes() == store.DEFAULT_MAX_BYTES == 1 << 30
    for text, value in _SIZES.items():
        monkeypatch.setenv(variable, text)
        assert store.max_bytes() == value, text
    for text in ("lots", "-5", "1.5M", "K", "1__0"):
        monkeypatch.setenv(variable, text)
        with pytest.warns(UserWarning, match=f"{variable}='{text}' is not a size"):
            assert store.max_bytes() == 1 << 30


def test_a_size_bound_it_cannot_read_warns_wherever_the_store_reads_it(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The native store reads the bound (once silently replaced there): every writer warns."""
    monkeypatch.setenv(store.MAX_BYTES_ENVIRONMENT_VARIABLE, "lots")
    with pytest.warns(UserWarning, match="is not a size"):
        assert _core._cache.max_bytes() == 1 << 30
    with pytest.warns(UserWarning, match="is not a size"):
        assert store.write("programs", "k", {}, b"x") is not None
    with pytest.warns(UserWarning, match="is not a size"):
        _, stats = cx.compile_program(_program())
    assert stats.cache_error is None and len(_entries(cache)) == 1


def test_eviction_removes_the_least_recently_used(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = b"x" * 10_000
    paths = {name: store.write("programs", name, {}, payload) for name in "abc"}
    size = paths["a"].stat().st_size
    monkeypatch.setenv(store.MAX_BYTES_ENVIRONMENT_VARIABLE, str(3 * size + size // 2))
    now = time.time()
    for age, name in [(300, "a"), (200, "b"), (100, "c")]:
        os.utime(paths[name], (now - age, now - age))
    assert store.read("programs", "a") is not None  # a use makes "a" the newest
    store.write("programs", "d", {}, payload)
    assert {name: store.read("programs", name) is not None for name in "abcd"} == {
        "a": True,
        "b": False,
        "c": True,
        "d": True,
    }


def test_eviction_weighs_every_kind_and_removes_dead_writers_files(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = store.write("executables", "new", {}, b"x" * 1000)
    assert written is not None
    size = written.stat().st_size
    now = time.time()

    def put(relative: str, nbytes: int, age: float) -> Path:
        file = cache / relative
        file.parent.mkdir(mode=0o700, exist_ok=True)
        file.write_bytes(b"x" * nbytes)
        os.utime(file, (now - age, now - age))
        return file

    oldest = put("programs/a.entry", 1000, 300)
    older = put("probes/b.entry", 1000, 200)
    newer = put("scans/c.entry", 1000, 100)
    stale = put("executables/.tmp-dead", 5000, 7200)  # a writer that died two hours ago
    fresh = put("executables/.tmp-live", 5000, 10)  # one writing now
    ignored = put("programs/notes.txt", 5000, 400)  # neither an entry nor temporary
    monkeypatch.setenv(store.MAX_BYTES_ENVIRONMENT_VARIABLE, str(size + 1500))
    written = store.write("executables", "new", {}, b"x" * 1000)

    everything = {p for p in cache.rglob("*") if not p.is_dir()}
    assert everything == {written, newer, fresh, ignored}
    assert not (oldest.exists() or older.exists() or stale.exists())


def test_compiled_entries_stay_within_the_bound(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cx.compile_program(_program(2.0))
    (entry,) = _entries(cache)
    bound = entry.stat().st_size * 3 // 2  # room for one executable, not two
    monkeypatch.setenv(store.MAX_BYTES_ENVIRONMENT_VARIABLE, str(bound))
    cx.compile_program(_program(3.0))
    assert len(_entries(cache)) == 1 and not entry.exists()
    _, stats = cx.compile_program(_program(2.0))
    assert not stats.cache_hit  # evicted, so compiled again
    assert sum(p.stat().st_size for p in _entries(cache)) <= bound


def test_entry_larger_than_the_bound_is_reported(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(store.MAX_BYTES_ENVIRONMENT_VARIABLE, "100")
    executable, stats = cx.compile_program(_program())
    _check(executable)
    assert stats.cache_error is not None and "larger than the cache's size bound" in (
        stats.cache_error
    )
    assert _entries(cache) == []
    with pytest.warns(UserWarning, match="size bound"):
        assert not cx.store_lowered("big", _program())


# ------------------------------------------------------------------ keys


def test_cache_key_changes_when_any_part_changes(
    monkeypatch: pytest.MonkeyPatch, x64: None
) -> None:
    base = cx.cache_key("model", _spec(4, 8), {"layers": 3})
    assert base == cx.cache_key("model", _spec(4, 8), {"layers": 3})
    keys = [
        base,
        cx.cache_key("model2", _spec(4, 8), {"layers": 3}),
        cx.cache_key("model", _spec(4, 9), {"layers": 3}),
        cx.cache_key("model", _spec(4, 8, dtype=np.float64), {"layers": 3}),
        cx.cache_key("model", _spec(4, 8), {"layers": 4}),
        cx.cache_key("model", _spec(4, 8), {"layers": 3}, distributions=["numpy"]),
    ]
    jax.config.update("jax_enable_x64", False)
    keys.append(cx.cache_key("model", _spec(4, 8), {"layers": 3}))
    jax.config.update("jax_enable_x64", True)
    assert len(set(keys)) == len(keys)

    real = cache_keys._distribution_version
    for name in ("jax", "jaxlib", "numpy"):
        monkeypatch.setattr(
            cache_keys,
            "_distribution_version",
            lambda d, name=name: "9.9" if d == name else real(d),
        )
        keys.append(cx.cache_key("model", _spec(4, 8), {"layers": 3}, distributions=["numpy"]))
    monkeypatch.setattr(cache_keys, "_distribution_version", real)
    monkeypatch.setattr(cache_keys, "cyxla_version", lambda: "9.9")
    keys.append(cx.cache_key("model", _spec(4, 8), {"layers": 3}))
    assert len(set(keys)) == len(keys)


def test_cache_key_refuses_parts_without_a_stable_text() -> None:
    with pytest.raises(TypeError, match="has no stable text"):
        cx.cache_key(object())
    with pytest.raises(TypeError, match="string keys"):
        cx.cache_key({1: "one"})
    # Values of the same text but another type are other keys.
    assert (
        len(
            {
                cx.cache_key(1),
                cx.cache_key("1"),
                cx.cache_key(1.0),
                cx.cache_key(b"1"),
                cx.cache_key(True),
                cx.cache_key(np.int32(1)),
            }
        )
        == 5
    )  # np.int32(1) is 1


def test_library_identity_describes_the_loaded_plugin() -> None:
    loaded = cx.initialize()
    identity = cx.library_identity()
    info = os.stat(loaded.library)
    assert identity == {
        "path": loaded.library,
        "size": info.st_size,
        "mtime_ns": info.st_mtime_ns,
        "pjrt_version": list(loaded.plugin.version),
        "xla_version": loaded.plugin.attributes.get("xla_version"),
    }


def test_another_plugin_build_does_not_hit(cache: Path, tmp_path: Path) -> None:
    """A copy of the plugin is another build to the cache until its identity matches."""
    original = _plugins.entry_for("cpu").library_path()
    copy = tmp_path / "copy" / "pjrt_c_api_cpu_plugin.so"
    copy.parent.mkdir()
    shutil.copy2(original, copy)
    with_copy = {"CYXLA_PJRT_PLUGIN": str(copy), "CYXLA_PLATFORM": "cpu"}

    try:
        first = _child(cache, **with_copy)
        assert (first["hit"], first["right"]) == (False, True)
        assert Path(first["library"]) == copy.resolve()
        assert _child(cache, **with_copy)["hit"]
        assert not _child(cache)["hit"]  # the installed library: another identity
        os.utime(copy, ns=(time.time_ns(), time.time_ns()))  # as if rebuilt in place
        assert not _child(cache, **with_copy)["hit"]
        assert len(_entries(cache)) == 3
    finally:
        copy.unlink()  # 200 MB: not left for pytest's kept temporary directories


# ------------------------------------------------------------------ keys that tell types apart


def _pairs() -> list[tuple[str, Any, Any]]:
    array = np.zeros((4, 8), np.float32)
    return [
        ("complex vs dict", 1 + 0j, {"complex": [1.0, 0.0]}),
        ("complex vs list", 1 + 2j, [1.0, 2.0]),
        ("bytes vs its digest", b"x", hashlib.sha256(b"x").hexdigest()),
        ("bytes vs dict", b"x", {"bytes": hashlib.sha256(b"x").hexdigest()}),
        ("bytes vs str", b"x", "x"),
        ("dtype vs str", np.dtype(np.float32), "<f4"),
        ("dtype vs dict", np.dtype(np.float32), {"dtype": "<f4"}),
        ("dtype vs its name", np.dtype(np.float32), "float32"),
        ("tuple vs list", (1, 2), [1, 2]),
        ("array vs dict", array, {"shape": [4, 8], "dtype": "float32"}),
        ("array vs list", array, [[4, 8], "float32"]),
        ("spec vs dict", _spec(4, 8), {"shape": [4, 8], "dtype": "float32"}),
        ("None vs str", None, "null"),
        ("int vs str", 1, "1"),
        ("int vs float", 1, 1.0),
        ("bool vs int", True, 1),
        ("nested", [{"a": 1 + 0j}], [{"a": {"complex": [1.0, 0.0]}}]),
        ("nested tuples", {"a": (b"x", np.dtype(np.int8))}, {"a": ["x", "|i1"]}),
        ("dict vs list of pairs", {"a": 1}, [["a", 1]]),
        ("float inf vs str", float("inf"), "inf"),
    ]


@pytest.mark.parametrize("name", [name for name, _, _ in _pairs()])
def test_cache_key_tells_types_apart(name: str) -> None:
    ((_, one, other),) = [pair for pair in _pairs() if pair[0] == name]
    assert cx.cache_key(one) != cx.cache_key(other)
    assert cx.cache_key(one) == cx.cache_key(one)


def test_cache_key_encodings_are_pairwise_distinct() -> None:
    values = [v for _, one, other in _pairs() for v in (one, other)]
    keys = {}
    for value in values:
        keys.setdefault(cx.cache_key(value), []).append(repr(value))
    # Equal only where the values are equal: np.float32 arrays and specs of one shape.
    assert all(len(set(reprs)) == 1 or "array" in reprs[0] for reprs in keys.values()), keys


def test_cache_key_keeps_equal_values_equal() -> None:
    assert cx.cache_key({"b": 1, "a": 2}) == cx.cache_key({"a": 2, "b": 1})
    assert cx.cache_key(np.float32(0.5)) == cx.cache_key(0.5)
    assert cx.cache_key(np.zeros((4, 8), np.float32)) == cx.cache_key(_spec(4, 8))
    assert cx.cache_key(float("nan")) == cx.cache_key(float("nan"))
    # Another sequence keys as the list of its items (a tuple stays apart from both).
    assert cx.cache_key(range(3)) == cx.cache_key([0, 1, 2]) != cx.cache_key((0, 1, 2))


# ------------------------------------------------------------------ lowered programs


def _structured(x: jax.Array, w: jax.Array) -> dict[str, Any]:
    y = x @ w
    return {
        "sum": jnp.sum(y),
        "parts": (y, [x * 2, None]),
        "ordered": collections.OrderedDict(b=y + 1, a=w),
    }


def _structured_program() -> cx.Program:
    return cx.lower(_structured, [_spec(2, 3, dtype=ml_dtypes.bfloat16), _spec(3, 3)])


def test_lowered_program_round_trips(cache: Path) -> None:
    program = _structured_program()
    key = cx.cache_key("structured")
    assert cx.load_lowered(key) is None
    assert cx.store_lowered(key, program)
    loaded = cx.load_lowered(key)
    assert loaded is not None
    assert loaded == program  # every field but the output tree
    assert loaded.output_tree == program.output_tree
    assert loaded.inputs[0].dtype == np.dtype(ml_dtypes.bfloat16)

    x = np.arange(6, dtype=np.float32).reshape(2, 3).astype(ml_dtypes.bfloat16)
    w = np.eye(3, dtype=np.float32)
    executable, _ = cx.compile_program(loaded)
    result = jax.tree.unflatten(loaded.output_tree, executable.run([x, w]))
    assert result["parts"][1][1] is None
    assert list(result["ordered"]) == ["b", "a"]
    np.testing.assert_allclose(result["parts"][0], x.astype(np.float32), rtol=1e-2)


def test_lowered_program_in_another_process(cache: Path) -> None:
    key_parts = ("affine-model", _spec(4, 8), _spec(8, 8))
    cx.store_lowered(cx.cache_key(*key_parts), _program())
    result = run_python(
        """
        import json
        import jax, numpy as np
        import cyxla as cx

        spec = lambda *shape: jax.ShapeDtypeStruct(shape, np.dtype(np.float32))
        program = cx.load_lowered(cx.cache_key("affine-model", spec(4, 8), spec(8, 8)))
        x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
        w = np.linspace(-0.5, 0.5, 64, dtype=np.float32).reshape(8, 8)
        (out,) = cx.compile_program(program)[0].run([x, w])
        print(json.dumps({"right": bool(np.allclose(out, np.tanh(x @ w) * 2, atol=1e-5)),
                          "missing": cx.load_lowered(cx.cache_key("other")) is None}))
        """,
        env={"CYXLA_CACHE_DIR": str(cache)},
    )
    assert _outcome(result) == {"right": True, "missing": True}


def test_damaged_lowered_entry_gives_none_and_is_replaced(cache: Path) -> None:
    program = _program()
    cx.store_lowered("damaged", program)
    (entry,) = _entries(cache, "programs")
    entry.write_bytes(_flip(-5)(entry.read_bytes()))
    with pytest.warns(UserWarning, match="corrupted"):
        assert cx.load_lowered("damaged") is None
    cx.store_lowered("damaged", program)
    assert cx.load_lowered("damaged") == program


def test_lowered_entry_under_another_key_gives_none(cache: Path) -> None:
    cx.store_lowered("one", _program())
    (entry,) = _entries(cache, "programs")
    target = entry_path(cache, "programs", "two")
    shutil.copyfile(entry, target)
    target.chmod(0o600)
    with pytest.warns(UserWarning, match="for another key"):
        assert cx.load_lowered("two") is None


def test_store_lowered_refuses_outputs_it_cannot_rebuild(cache: Path) -> None:
    pair = collections.namedtuple("pair", "a b")
    program = cx.lower(lambda x: pair(x, x + 1), [_spec(2)])
    with pytest.raises(cx.UnsupportedProgramError, match="cannot keep"):
        cx.store_lowered("pair", program)
    with pytest.raises(TypeError, match="non-empty str"):
        cx.load_lowered("")


# ------------------------------------------------------------------ the cache command


def test_cache_command_shows_and_clears(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cx.compile_program(_program())
    cx.store_lowered("shown", _program())
    assert cli(["cache", "info"]) == 0
    shown = capsys.readouterr().out
    assert str(cache) in shown and "2 files" in shown and "scaled" in shown
    assert "executable" in shown and "program" in shown
    assert cli(["cache", "clear"]) == 0
    assert "removed 2 files" in capsys.readouterr().out
    assert _entries(cache) == [] and _entries(cache, "programs") == []
    assert cli(["cache"]) == 0  # info is the default
    assert "0 files" in capsys.readouterr().out


def test_cache_command_reports_an_unsafe_or_disabled_cache(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cx.store_lowered("x", _program())
    cache.chmod(0o777)
    try:
        assert cli(["cache", "info"]) == 0
    finally:
        cache.chmod(0o700)
    assert "refused, so not used" in capsys.readouterr().out
    monkeypatch.setenv("CYXLA_CACHE_DIR", "0")
    assert cli(["cache", "info"]) == 0
    assert "is off" in capsys.readouterr().out


def test_cache_command_runs_as_a_module(cache: Path) -> None:
    cx.store_lowered("module", _program())
    result = run_cyxla("cache", "info", env={"CYXLA_CACHE_DIR": str(cache)})
    assert result.returncode == 0, result.stderr
    assert f"directory: {cache}" in result.stdout and "1 file," in result.stdout


def test_cache_sizes_are_shown_in_binary_units() -> None:
    from cyxla._cli import cache as cli_cache

    assert cli_cache._size(1023) == "1023 bytes"
    assert cli_cache._size(1536) == "1.5 KiB"
    assert cli_cache._size(5 * 1024**2) == "5.0 MiB"
    assert cli_cache._size(3 * 1024**3) == "3.0 GiB"
    assert cli_cache._size(4096 * 1024**3) == "4096.0 GiB"


# ------------------------------------------------------------------ edges of the store


def test_default_cache_directory_on_windows_and_macos(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store resolves each platform's default (chosen by its sys.platform name here)."""
    directory_on = _core._cache.configured_directory
    monkeypatch.delenv("CYXLA_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("USERPROFILE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # not read on either
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "local"))
    assert Path(directory_on("win32")) == tmp_path / "local" / "cyxla" / "Cache"
    monkeypatch.delenv("LOCALAPPDATA")
    windows = tmp_path / "home" / "AppData" / "Local" / "cyxla" / "Cache"
    assert Path(directory_on("win32")) == windows
    monkeypatch.setenv("USERPROFILE", str(tmp_path / "profile"))
    assert (
        Path(directory_on("win32"))
        == tmp_path / "profile" / "AppData" / "Local" / "cyxla" / "Cache"
    )
    assert Path(directory_on("darwin")) == tmp_path / "home" / "Library" / "Caches" / "cyxla"
    assert Path(directory_on("linux")) == tmp_path / "xdg" / "cyxla"
    assert directory_on() == str(cx.cache_directory())  # the host's: Linux's here
    monkeypatch.setenv("CYXLA_CACHE_DIR", str(tmp_path / "set"))  # wins on every platform
    assert {directory_on(p) for p in ("win32", "darwin", "linux")} == {str(tmp_path / "set")}


def test_unknown_kind_of_entry_is_refused(cache: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown kind of cache entry 'models'"):
        store.open_store("models", create=True)
    assert not cache.exists()


def test_entry_directory_that_is_a_link_is_refused(cache: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cache.mkdir(mode=0o700)
    (cache / "programs").symlink_to(elsewhere)
    with pytest.warns(UserWarning, match=r"programs is not a directory; the cache is not used"):
        assert not cx.store_lowered("linked", _program())
    with pytest.warns(UserWarning, match="is not a directory"):
        assert cx.load_lowered("linked") is None
    assert list(elsewhere.iterdir()) == []


def test_cache_directory_that_cannot_be_made_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("CYXLA_CACHE_DIR", str(tmp_path / "file" / "cache"))
    with pytest.warns(UserWarning, match="cannot use the cache directory .*file/cache"):
        assert not cx.store_lowered("nowhere", _program())
    with pytest.warns(UserWarning, match="cannot use the cache directory"):
        executable, stats = cx.compile_program(_program())
    _check(executable)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "cannot use the cache directory" in stats.cache_error


def test_store_refused_after_a_miss_is_reported(cache: Path) -> None:
    """The lookup finds no entry directory; storing then finds the cache unsafe."""
    cache.mkdir()
    cache.chmod(0o777)
    try:
        with pytest.warns(UserWarning, match="can be written by other users"):
            executable, stats = cx.compile_program(_program())
    finally:
        cache.chmod(0o700)
    _check(executable)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "can be written by other users" in stats.cache_error
    assert list(cache.iterdir()) == []


def test_lowered_programs_in_a_refused_cache(cache: Path) -> None:
    cx.store_lowered("refused", _program())
    cache.chmod(0o777)
    try:
        with pytest.warns(UserWarning, match="can be written by other users"):
            assert not cx.store_lowered("refused", _program())
        with pytest.warns(UserWarning, match="can be written by other users"):
            assert cx.load_lowered("refused") is None
    finally:
        cache.chmod(0o700)
    assert cx.load_lowered("refused") == _program()


def _reencode(path: Path, header: bytes) -> None:
    """Rewrites an entry with these header bytes and a matching checksum."""
    path.write_bytes(encode_entry(header, _payload(path)))


def test_entry_with_an_unreadable_header_is_ignored(cache: Path) -> None:
    cx.store_lowered("unreadable", _program())
    (entry,) = _entries(cache, "programs")
    _reencode(entry, b"{not json")
    with pytest.warns(UserWarning, match="has an unreadable header"):
        assert cx.load_lowered("unreadable") is None
    _reencode(entry, b"[1, 2]")
    with pytest.warns(UserWarning, match="a header that does not describe its payload"):
        assert cx.load_lowered("unreadable") is None


def test_entry_whose_header_misstates_its_payload_is_ignored(cache: Path) -> None:
    cx.store_lowered("misstated", _program())
    (entry,) = _entries(cache, "programs")
    _rewrite_header(entry, lambda h: h.update(payload_length=h["payload_length"] - 1))
    with pytest.warns(UserWarning, match="a header that does not describe its payload"):
        assert cx.load_lowered("misstated") is None


def test_entry_that_is_a_pipe_is_not_read(cache: Path) -> None:
    cx.store_lowered("pipe", _program())
    (entry,) = _entries(cache, "programs")
    entry.unlink()
    os.mkfifo(entry, 0o600)
    # A writer holds the pipe open, so opening it to read does not wait.
    writer = os.open(entry, os.O_RDWR)
    try:
        with pytest.warns(UserWarning, match="is not a regular file"):
            assert cx.load_lowered("pipe") is None
    finally:
        os.close(writer)


def test_directory_in_place_of_an_entry(cache: Path) -> None:
    """Not loaded, not replaced (the rename fails and leaves no temporary file), and
    compiling goes on."""
    program = _program()
    cx.compile_program(program)
    (entry,) = _entries(cache)
    entry.unlink()
    entry.mkdir(mode=0o700)
    executable, stats = cx.compile_program(program)
    _check(executable)
    assert not stats.cache_hit
    assert stats.cache_error is not None
    assert "is not a regular file" in stats.cache_error
    assert "could not store the executable" in stats.cache_error
    assert sorted(p.name for p in (cache / "executables").iterdir()) == [entry.name]
    cx.store_lowered("directory", program)
    (lowered,) = _entries(cache, "programs")
    lowered.unlink()
    lowered.mkdir(mode=0o700)
    with pytest.warns(UserWarning, match="could not store the program scaled: .*directory"):
        assert not cx.store_lowered("directory", program)
    assert [p.name for p in (cache / "programs").iterdir()] == [lowered.name]


def test_entry_that_cannot_be_read_is_ignored(cache: Path, tmp_path: Path) -> None:
    cx.store_lowered("failing", _program())
    unreadable = os.open(tmp_path / "write-only", os.O_WRONLY | os.O_CREAT, 0o600)

    def fail_reads(stage: str, name: str, fd: int) -> None:
        if stage == "opened":
            os.dup2(unreadable, fd)  # a regular file of this user, which read() refuses

    try:
        with cache_seams(hook=fail_reads), pytest.warns(UserWarning, match=r"cannot read .*"):
            assert cx.load_lowered("failing") is None
    finally:
        os.close(unreadable)
    assert cx.load_lowered("failing") == _program()


def test_entries_and_clear_of_a_cache_that_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CYXLA_CACHE_DIR", "0")
    assert list(store.entries()) == []
    assert store.clear() == (0, 0)


def test_stale_temporary_files_are_removed_and_other_files_kept(cache: Path) -> None:
    cx.store_lowered("first", _program())
    programs = cache / "programs"
    stale, fresh, other = programs / ".tmp-stale", programs / ".tmp-fresh", programs / "notes"
    for path in (stale, fresh, other):
        path.write_bytes(b"x" * 10)
    hours_ago = time.time() - 2 * 3600
    os.utime(stale, (hours_ago, hours_ago))
    listed = {item.path.name: item for item in store.entries()}
    assert set(listed) == {stale.name, fresh.name, _entries(cache, "programs")[0].name}
    assert listed[stale.name].size == 10 and listed[stale.name].kind == "programs"
    cx.store_lowered("second", _program(3.0))
    assert not stale.exists()  # left by a process that died while writing it
    assert fresh.exists() and other.exists()  # perhaps being written; not the cache's
    assert len(_entries(cache, "programs")) == 2


def test_eviction_keeps_the_entry_it_just_wrote(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even when the clock makes it look older than the others."""
    cx.store_lowered("old", _program())
    (old,) = _entries(cache, "programs")
    later = time.time() + 3600
    os.utime(old, (later, later))
    monkeypatch.setenv(store.MAX_BYTES_ENVIRONMENT_VARIABLE, str(old.stat().st_size + 100))
    assert cx.store_lowered("new", _program(3.0))
    (kept,) = _entries(cache, "programs")
    assert kept == entry_path(cache, "programs", "new")
    assert cx.load_lowered("new") == _program(3.0)


def test_peek_shows_headers_and_tolerates_junk(cache: Path, tmp_path: Path) -> None:
    cx.store_lowered("peeked", _program())
    (entry,) = _entries(cache, "programs")
    header = store.peek(entry)
    assert header is not None
    assert (header["key"], header["name"]) == ("peeked", "scaled")
    junk = tmp_path / "junk"
    cases = {
        b"short": "shorter than a prefix",
        b"x" * 100: "bad magic",
        ENTRY_PREFIX.pack(ENTRY_MAGIC, 1, 9, b"\0" * 32) + b"{not json": "bad JSON",
        ENTRY_PREFIX.pack(ENTRY_MAGIC, 1, 6, b"\0" * 32) + b"[1, 2]": "not an object",
    }
    for data, why in cases.items():
        junk.write_bytes(data)
        assert store.peek(junk) is None, why
    assert store.peek(tmp_path / "missing") is None
    assert store.peek(tmp_path) is None  # a directory


def test_cache_command_shows_junk_files_by_their_kind(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cx.store_lowered("listed", _program())
    (cache / "programs" / "junk.entry").write_bytes(b"junk")
    (cache / "programs" / ".tmp-left").write_bytes(b"")
    assert cli(["cache", "info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "3 files" in lines[2]
    assert any(line.split()[:2] == ["program", "?"] for line in lines)
    assert any(line.split()[:2] == ["program", "scaled"] for line in lines)
    assert any(line.split()[:2] == ["temporary", "?"] for line in lines)


def test_cache_command_names_the_default_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CYXLA_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cli(["cache", "info"]) == 0
    out = capsys.readouterr().out
    directory = tmp_path / "home" / ".cache" / "cyxla"
    assert f"directory: {directory} (the default; set CYXLA_CACHE_DIR to move it" in out
    assert "0 files" in out
    assert not directory.exists()  # info creates nothing


def test_cache_command_clear_when_off_or_failing(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cx.store_lowered("kept", _program())
    blocking = cache / "programs" / "blocking.entry"
    blocking.mkdir()  # named like an entry, but unlink cannot remove a directory
    assert cli(["cache", "clear"]) == 1
    assert f"could not clear the cache at {cache}: " in capsys.readouterr().out
    blocking.rmdir()
    assert cli(["cache", "clear"]) == 0
    assert _entries(cache, "programs") == []
    capsys.readouterr()
    monkeypatch.setenv("CYXLA_CACHE_DIR", "0")
    assert cli(["cache", "clear"]) == 0
    assert "the disk cache is off (CYXLA_CACHE_DIR='0'); nothing to clear" in (
        capsys.readouterr().out
    )


_MOVED_PLUGIN = """
import json, os, sys
import jax, jax.numpy as jnp, numpy as np
import cyxla as cx
library = sys.argv[1]
cx.initialize(library, platform="cpu")
os.unlink(library)  # the library this process runs is gone from its path
program = cx.lower(jnp.sin, [jax.ShapeDtypeStruct((3,), jnp.float32)])
executable, stats = cx.compile_program(program)
x = np.array([0.5, 1.0, 2.0], np.float32)
right = bool(np.allclose(executable.run([x])[0], np.sin(x)))
print(json.dumps({"hit": stats.cache_hit, "error": stats.cache_error, "right": right}))
"""


def test_plugin_library_that_moved_is_not_identified(cache: Path, tmp_path: Path) -> None:
    """No key can be trusted, so the program is compiled and nothing is stored."""
    library = tmp_path / "plugin.so"
    shutil.copyfile(plugin_library(), library)
    result = subprocess.run(
        [sys.executable, "-c", _MOVED_PLUGIN, str(library)],
        env={**os.environ, "CYXLA_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    outcome = _outcome(result)
    assert (outcome["hit"], outcome["right"]) == (False, True)
    assert outcome["error"] == (
        f"cannot identify the plugin library {library}: it is no longer there"
    )
    assert _entries(cache) == []


def test_cached_executable_with_other_outputs_is_not_used(cache: Path) -> None:
    """An entry that passes every check but holds another program's code (as a buggy or
    altered build could write) is caught by the outputs of what the plugin loaded."""
    inputs = [_spec(4, 8), _spec(8, 8)]
    product = cx.lower(lambda x, w: x @ w, inputs)  # f32[4,8]
    total = cx.lower(lambda x, w: jnp.sum(x @ w), inputs)  # f32[]
    cx.compile_program(product)
    (product_entry,) = _entries(cache)
    cx.compile_program(total)
    (total_entry,) = [e for e in _entries(cache) if e != product_entry]
    header, _ = _split(total_entry)
    header["payload_length"] = len(_payload(product_entry))
    header["binding"] = entry_binding("executables", header["key"], _payload(product_entry))
    total_entry.write_bytes(encode_entry(header, _payload(product_entry)))

    executable, stats = cx.compile_program(total)
    assert not stats.cache_hit
    assert stats.cache_error is not None
    assert "the output specs are (f32[]), but the compiled program returns (f32[4,8])" in (
        stats.cache_error
    )
    x = np.ones((4, 8), np.float32)
    (out,) = executable.run([x, np.ones((8, 8), np.float32)])
    assert out.shape == () and out == pytest.approx(256.0)
    _, stats = cx.compile_program(total)  # the entry was replaced by the right one
    assert (stats.cache_hit, stats.cache_error) == (True, None)


def test_store_lowered_refuses_dict_keys_it_cannot_keep(cache: Path) -> None:
    program = cx.lower(lambda x: {(1, 2): x, (3, 4): x + 1}, [_spec(2)])
    with pytest.raises(cx.UnsupportedProgramError, match=r"dict key that cannot be stored"):
        cx.store_lowered("tuple-keys", program)
    assert not cache.exists()
    # int keys can be kept, and come back as ints.
    program = cx.lower(lambda x: {2: x, 1: x + 1}, [_spec(2)])
    assert cx.store_lowered("int-keys", program)
    loaded = cx.load_lowered("int-keys")
    assert loaded is not None and loaded.output_tree == program.output_tree


def test_store_lowered_refuses_a_structure_that_does_not_round_trip(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard behind the encoding: what would come back different is not stored."""
    from cyxla._program import output_tree as _output_tree

    monkeypatch.setattr(_output_tree, "_encode", lambda tree, writer: {"tuple": ["*"]})
    with pytest.raises(cx.UnsupportedProgramError, match=r"output structure .* cannot be stored"):
        cx.store_lowered("lossy", _structured_program())
    assert not cache.exists()


def test_cache_key_parts_of_every_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cx.cache_key(1 + 2j) != cx.cache_key(1 - 2j)
    dtypes = [np.float32, np.float64, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn]
    assert len({cx.cache_key(np.dtype(d)) for d in dtypes}) == len(dtypes)
    missing = "cyxla-test-no-such-distribution"
    assert cache_keys._distribution_version(missing) is None
    assert cx.cache_key("m", distributions=[missing]) == cx.cache_key("m", distributions=[missing])
    assert cx.cache_key("m", distributions=[missing]) != cx.cache_key("m")


# ------------------------------------------------------------------ the entry format


def _store_fields(key: str, payload: bytes) -> dict[str, Any]:
    return {
        "kind": "programs",
        "key": key,
        "payload_length": len(payload),
        "binding": entry_binding("programs", key, payload),
        "cyxla_version": cx.__version__,
    }


def test_an_entry_laid_out_by_the_documented_format_is_read(cache: Path) -> None:
    """Entries are FORMAT_VERSION 2 as documented: one written independently reads."""
    store.write("programs", "other", {}, b"")  # makes the directories
    payload = bytes(range(256)) * 3
    header = {**_store_fields("laid out", payload), "program": {"name": "é"}}
    entry_path(cache, "programs", "laid out").write_bytes(encode_entry(header, payload))
    entry = store.read("programs", "laid out")
    assert entry is not None and entry.payload == payload
    assert entry.header["program"] == {"name": "é"}


def test_names_and_checksums_are_sha256(cache: Path) -> None:
    """Keys and payloads of every length the hash pads differently, against hashlib."""
    generator = random.Random(12)
    for length in [*range(130), 1 << 20, 3 * (1 << 20) + 17]:
        key = generator.randbytes(min(length, 200)).hex()[:length]
        payload = generator.randbytes(length)
        written = store.write("programs", key, {}, payload)
        assert written == entry_path(cache, "programs", key), length
        data = written.read_bytes()
        assert data[16:48] == hashlib.sha256(data[48:]).digest(), length
        assert split_entry(data)[0]["binding"] == entry_binding("programs", key, payload)
        written.unlink()


def _nested_arrays(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


#: Header bytes that are not strict JSON, or not UTF-8, or nested too deep to read.
_NOT_STRICT = [
    b"",
    b"NaN",
    b"[Infinity]",
    b"[-Infinity]",
    b'{"a": 1} x',
    b"[01]",
    b"[1.]",
    b"[.5]",
    b"[1e]",
    b"[+1]",
    b"[1,]",
    b'{"a" 1}',
    b"{'a': 1}",
    b'"\x01"',
    b'"\\x"',
    b'"\\ud800"',
    b'"\\ud800\\u0041"',
    b'"\xff"',
    b'"\xc0\xaf"',  # an overlong "/"
    b'"\xed\xa0\x80"',  # a surrogate in UTF-8
    _nested_arrays(257),
    str(2**63).encode(),
    b"[tru]",
    b'"unterminated',
]


@pytest.mark.parametrize("text", _NOT_STRICT)
def test_a_header_that_is_not_strict_json_is_unreadable(cache: Path, text: bytes) -> None:
    store.write("programs", "strict", {}, b"x")
    entry_path(cache, "programs", "strict").write_bytes(encode_entry(text, b"x"))
    with pytest.raises(store.EntryError, match="has an unreadable header"):
        store.read("programs", "strict")


def test_a_header_nested_within_the_bound_is_read(cache: Path) -> None:
    store.write("programs", "deep", {}, b"x")
    fields = json.dumps(_store_fields("deep", b"x"))[1:-1].encode()
    header = b'{"deep": ' + _nested_arrays(255) + b", " + fields + b"}"  # 256 levels
    entry_path(cache, "programs", "deep").write_bytes(encode_entry(header, b"x"))
    entry = store.read("programs", "deep")
    assert entry is not None and entry.header["deep"] == json.loads(_nested_arrays(255))


def test_mutated_entries_are_read_or_refused_never_anything_else(cache: Path) -> None:
    """A small deterministic fuzz of the reader: bytes edited, cut and inserted, with the
    checksum recomputed half the time so that the header parser sees them too."""
    generator = random.Random(19)
    written = store.write("programs", "fuzzed", {"program": {"name": "f", "dims": [1, 2.5]}}, b"p")
    assert written is not None
    original = written.read_bytes()
    for _ in range(2000):
        data = bytearray(original)
        for _ in range(generator.randint(1, 4)):
            at = generator.randrange(len(data) + 1)
            choice = generator.random()
            if choice < 0.5 and at < len(data):
                data[at] = generator.randrange(256)
            elif choice < 0.75:
                data[at:at] = generator.randbytes(generator.randint(1, 8))
            else:
                del data[at : at + generator.randint(1, 8)]
        if generator.random() < 0.5 and len(data) >= ENTRY_PREFIX.size:
            data[16:48] = hashlib.sha256(bytes(data[48:])).digest()
        written.write_bytes(bytes(data))
        try:
            entry = store.read("programs", "fuzzed")
        except store.EntryError:
            continue
        assert entry is not None and entry.header["key"] == "fuzzed"


@pytest.fixture(autouse=True)
def _no_stray_warnings() -> Iterator[None]:
    """Cache warnings are expected only where a test asks for them with pytest.warns."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="cyxla cache")
        yield


def test_headers_round_trip_every_kind_of_value(cache: Path) -> None:
    """What a caller records comes back as json.loads reads what the store wrote: text with
    quotes, backslashes, control characters and text beyond ASCII, integers, floats
    (shortest round-trip text, an integral one still a float), booleans, null, lists and
    objects."""
    recorded = {
        "text": 'a "quoted" \\ back\nslash\r\t\b\f \x01\x1f\x7f é 😀',
        "integers": [0, -1, 2**62],
        "floats": [0.1, -2.5e-300, 1e22, 3.0, 1 / 3],
        "flags": [True, False, None],
        "nested": {"list": [{"a": []}], "empty": {}},
    }
    path = store.write("programs", "round trip", recorded, b"payload")
    assert path is not None
    entry = store.read("programs", "round trip")
    assert entry is not None
    for name, value in recorded.items():
        assert entry.header[name] == value, name
    assert type(entry.header["floats"][3]) is float
    assert store.peek(path) == entry.header
