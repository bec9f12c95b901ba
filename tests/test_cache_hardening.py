"""The disk cache against hostile entries: pipes, bodies that pass the checksum but not the
schema, entries moved to another key, ambiguous key parts, unresolvable directories."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx
from cyxla.__main__ import main as cli
from cyxla._cache import store

#: Seconds a call may take before it counts as blocked on the cache.
_DEADLINE = 60.0


def _spec(*shape: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, np.dtype(np.float32))


def _program(scale: float = 2.0) -> cx.Program:
    def scaled(x: jax.Array) -> jax.Array:
        return jnp.tanh(x) * scale

    return cx.lower(scaled, [_spec(4, 8)])


def _x() -> np.ndarray:
    return np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)


def _entries(cache: Path, kind: str) -> list[Path]:
    return sorted((cache / kind).glob("*.entry"))


def _split(path: Path) -> tuple[dict[str, Any], bytes]:
    data = path.read_bytes()
    _, _, length, _ = store._PREFIX.unpack_from(data)
    header = json.loads(data[store._PREFIX.size : store._PREFIX.size + length])
    return header, data[store._PREFIX.size + length :]


def _write_raw(path: Path, header: bytes, payload: bytes) -> None:
    """An entry with these header bytes and a valid checksum."""
    digest = hashlib.sha256(header + payload).digest()
    prefix = store._PREFIX.pack(store._MAGIC, store.FORMAT_VERSION, len(header), digest)
    path.write_bytes(prefix + header + payload)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv(cx.CACHE_ENVIRONMENT_VARIABLE, str(directory))
    monkeypatch.delenv(store.MAX_BYTES_ENVIRONMENT_VARIABLE, raising=False)
    return directory


@pytest.fixture(autouse=True)
def _no_stray_warnings() -> Iterator[None]:
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="cyxla cache")
        yield


# ------------------------------------------------------------------ 1: pipes


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
    program = _program()
    cx.compile_program(program)
    (entry,) = _entries(cache, "executables")
    pipe = _pipe_in_place_of(entry)
    executable, stats = _within_deadline(lambda: cx.compile_program(program), pipe)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "is not a regular file" in stats.cache_error
    np.testing.assert_allclose(executable.run([_x()])[0], np.tanh(_x()) * 2.0, rtol=1e-5)


def test_pipe_entry_does_not_block_load_lowered(cache: Path) -> None:
    cx.store_lowered("pipe", _program())
    (entry,) = _entries(cache, "programs")
    pipe = _pipe_in_place_of(entry)
    with pytest.warns(UserWarning, match="is not a regular file"):
        assert _within_deadline(lambda: cx.load_lowered("pipe"), pipe) is None


def test_pipe_entry_does_not_block_cache_info(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cx.store_lowered("listed", _program())
    pipe = cache / "programs" / "pipe.entry"
    os.mkfifo(pipe, 0o600)
    assert _within_deadline(lambda: cli(["cache", "info"]), pipe) == 0
    shown = capsys.readouterr().out
    assert "2 files" in shown and "scaled" in shown
    assert store.peek(pipe) is None


def test_pipe_entry_is_cleared(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cx.store_lowered("listed", _program())
    os.mkfifo(cache / "programs" / "pipe.entry", 0o600)
    assert cli(["cache", "clear"]) == 0
    assert "removed 2 files" in capsys.readouterr().out
    assert list((cache / "programs").iterdir()) == []


# ------------------------------------------------------------------ 2: hostile bodies


def _nested(depth: int) -> str:
    return '{"tuple":[' * depth + '"*"' + "]}" * depth


#: Lowered-entry bodies with a valid checksum that must read as a miss: each replaces
#: one field of the description with raw JSON text.
_HOSTILE_PROGRAMS = {
    "deep nesting (the parser)": ("output_tree", _nested(100_000)),
    "deep nesting (the tree)": ("output_tree", _nested(400)),
    "an Infinity dimension": ("inputs", "[[11, [Infinity, 8]]]"),
    "a NaN element type": ("inputs", "[[NaN, [4, 8]]]"),
    "a huge dimension": ("inputs", "[[11, [100000000000000000000000000000, 8]]]"),
    "a negative dimension": ("inputs", "[[11, [-4, 8]]]"),
    "a float dimension": ("outputs", "[[11, [4.0, 8]]]"),
    "a bool dimension": ("outputs", "[[11, [true, 8]]]"),
    "a number too long to convert": ("inputs", "[[11, [" + "9" * 5000 + ", 8]]]"),
    "an element type by name": ("inputs", '[["F32", [4, 8]]]'),
    "specs as a dict": ("inputs", '{"a": 1}'),
    "a spec of three parts": ("inputs", "[[11, [4, 8], 1]]"),
    "custom calls as a string": ("custom_calls", '"abc"'),
    "a name that is a list": ("name", "[1, 2]"),
    "a platform that is a number": ("platform", "1e308"),
}


def _hostile_program_entry(cache: Path, key: str, field: str, text: str) -> Path:
    cx.store_lowered(key, _program())
    (entry,) = _entries(cache, "programs")
    header, payload = _split(entry)
    marker = "@@HOSTILE@@"
    header["program"][field] = marker
    raw = json.dumps(header, sort_keys=True).replace(json.dumps(marker), text)
    _write_raw(entry, raw.encode(), payload)
    return entry


@pytest.mark.parametrize("case", sorted(_HOSTILE_PROGRAMS))
def test_hostile_lowered_entry_is_a_miss(
    cache: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    field, text = _HOSTILE_PROGRAMS[case]
    _hostile_program_entry(cache, "hostile", field, text)
    with pytest.warns(UserWarning, match="cyxla cache: ignored"):
        assert cx.load_lowered("hostile") is None
    assert cli(["cache", "info"]) == 0
    assert "1 file," in capsys.readouterr().out
    assert cx.store_lowered("hostile", _program())  # and it is replaced
    assert cx.load_lowered("hostile") == _program()


#: Executable-entry header fields with a valid checksum that must read as a miss.
_HOSTILE_EXECUTABLES = {
    "deep nesting": ("inputs", "[" * 100_000 + "]" * 100_000),
    "an Infinity dimension": ("inputs", "[[11, [Infinity, 8]]]"),
    "a huge dimension": ("inputs", "[[11, [1e400, 8]]]"),
    "a float element type": ("inputs", "[[11.0, [4, 8]]]"),
    "inputs as a string": ("inputs", '"11"'),
    "a source of another type": ("source", "[1, 2]"),
    "a plugin of another type": ("plugin", '"cpu"'),
    "a payload length that is a bool": ("payload_length", "true"),
    "a key of another type": ("key", "1"),
}


@pytest.mark.parametrize("case", sorted(_HOSTILE_EXECUTABLES))
def test_hostile_executable_entry_is_a_miss(cache: Path, case: str) -> None:
    field, text = _HOSTILE_EXECUTABLES[case]
    program = _program()
    cx.compile_program(program)
    (entry,) = _entries(cache, "executables")
    header, payload = _split(entry)
    header[field] = "@@HOSTILE@@"
    raw = json.dumps(header, sort_keys=True).replace('"@@HOSTILE@@"', text)
    _write_raw(entry, raw.encode(), payload)
    executable, stats = cx.compile_program(program)
    assert not stats.cache_hit and stats.cache_error is not None
    np.testing.assert_allclose(executable.run([_x()])[0], np.tanh(_x()) * 2.0, rtol=1e-5)
    _, again = cx.compile_program(program)
    assert again.cache_hit  # replaced


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
    cx.store_lowered("first", _program())
    cx.store_lowered("second", _program(3.0))
    blocking = cache / "programs" / "0-blocking.entry"  # listed first
    blocking.mkdir()
    assert cli(["cache", "clear"]) == 1
    out = capsys.readouterr().out
    assert "removed 2 files" in out and "0-blocking.entry" in out
    assert [p.name for p in (cache / "programs").iterdir()] == [blocking.name]
    with pytest.warns(UserWarning, match="could not remove .*0-blocking.entry"):
        assert store.clear() == (0, 0)


# ------------------------------------------------------------------ 3: entries moved


def _move(source: Path, target: Path, key: str) -> None:
    """Rewrites `source` as the entry of `key` at `target`, with a recomputed checksum:
    what a naive copy under another key looks like."""
    header, payload = _split(source)
    header["key"] = key
    target.write_bytes(store._encode(header, payload))


def test_executable_entry_moved_to_another_key_is_a_miss(cache: Path) -> None:
    doubled, tripled = _program(2.0), _program(3.0)
    cx.compile_program(doubled)
    (doubled_entry,) = _entries(cache, "executables")
    cx.compile_program(tripled)
    (tripled_entry,) = [e for e in _entries(cache, "executables") if e != doubled_entry]
    tripled_key = _split(tripled_entry)[0]["key"]
    _move(doubled_entry, tripled_entry, tripled_key)
    executable, stats = cx.compile_program(tripled)
    assert not stats.cache_hit and stats.cache_error is not None
    np.testing.assert_allclose(executable.run([_x()])[0], np.tanh(_x()) * 3.0, rtol=1e-5)


def test_executable_entry_with_another_source_is_a_miss(cache: Path) -> None:
    """Even with the binding recomputed: the source recorded is compared with the program's."""
    doubled, tripled = _program(2.0), _program(3.0)
    cx.compile_program(doubled)
    (doubled_entry,) = _entries(cache, "executables")
    cx.compile_program(tripled)
    (tripled_entry,) = [e for e in _entries(cache, "executables") if e != doubled_entry]
    header, payload = _split(doubled_entry)
    header["key"] = _split(tripled_entry)[0]["key"]
    header["binding"] = store.binding("executables", header["key"], payload)
    tripled_entry.write_bytes(store._encode(header, payload))
    executable, stats = cx.compile_program(tripled)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "another program" in stats.cache_error
    np.testing.assert_allclose(executable.run([_x()])[0], np.tanh(_x()) * 3.0, rtol=1e-5)


def test_lowered_entry_moved_to_another_key_is_a_miss(cache: Path) -> None:
    cx.store_lowered("doubled", _program(2.0))
    cx.store_lowered("tripled", _program(3.0))
    directory = cache / "programs"
    _move(store.entry_path(directory, "doubled"), store.entry_path(directory, "tripled"), "tripled")
    with pytest.warns(UserWarning, match="binding does not match"):
        assert cx.load_lowered("tripled") is None


def test_entries_of_an_older_format_are_a_miss(cache: Path) -> None:
    cx.store_lowered("old", _program())
    (entry,) = _entries(cache, "programs")
    header, payload = _split(entry)
    raw = json.dumps(header).encode()
    digest = hashlib.sha256(raw + payload).digest()
    entry.write_bytes(store._PREFIX.pack(store._MAGIC, 1, len(raw), digest) + raw + payload)
    assert store.FORMAT_VERSION >= 2
    with pytest.warns(UserWarning, match="cache format 1"):
        assert cx.load_lowered("old") is None


# ------------------------------------------------------------------ 4: unambiguous keys


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


# ------------------------------------------------------------------ 5: the directory


def test_unresolvable_cache_directory_turns_the_cache_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(cx.CACHE_ENVIRONMENT_VARIABLE, "~cyxla-no-such-user/x")
    program = _program()
    with pytest.warns(UserWarning, match="cannot resolve the cache directory"):
        executable, stats = cx.compile_program(program)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "cannot resolve" in stats.cache_error
    np.testing.assert_allclose(executable.run([_x()])[0], np.tanh(_x()) * 2.0, rtol=1e-5)
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
