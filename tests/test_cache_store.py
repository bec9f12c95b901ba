"""The disk cache's store (cyxla._cache.store; src/cache/store.cpp, entry.cpp, settings.cpp):
where it lives, the entry format, damaged and unsafe entries, files of other kinds in place
of entries, threads, and the size bound. What is stored is tested in test_cache_executables.py
and test_cache_lowered.py; the `cache` command in test_cache_command.py."""

from __future__ import annotations

import hashlib
import json
import os
import random
import stat
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cyxla as cx
from cyxla import _core
from cyxla.__main__ import main as cli
from cyxla._cache import store

from support import (
    ENTRY_MAGIC,
    ENTRY_PREFIX,
    cache_entries,
    cache_seams,
    check_scaled,
    encode_entry,
    entry_binding,
    entry_path,
    flip,
    read_entry,
    scaled_program,
    split_entry,
    tanh_program,
    tanh_x,
    write_entry,
)

pytestmark = pytest.mark.usefixtures("no_stray_cache_warnings")


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


def test_default_cache_directory_of_each_platform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """XDG's on Linux (the host's); the store resolves the others' by sys.platform name."""
    directory_on = _core._cache.configured_directory
    monkeypatch.delenv("CYXLA_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cx.cache_directory() == tmp_path / "home" / ".cache" / "cyxla"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # ignored, as the spec says
    assert cx.cache_directory() == tmp_path / "home" / ".cache" / "cyxla"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # not read but on Linux
    assert cx.cache_directory() == tmp_path / "xdg" / "cyxla"
    monkeypatch.delenv("USERPROFILE", raising=False)
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


def test_cache_is_created_private(cache: Path) -> None:
    cx.compile_program(scaled_program())
    (entry,) = cache_entries(cache)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert stat.S_IMODE((cache / "executables").stat().st_mode) == 0o700
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_cache_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for off in ("", "0"):
        monkeypatch.setenv("CYXLA_CACHE_DIR", off)
        executable, stats = cx.compile_program(scaled_program())
        check_scaled(executable)
        assert (stats.cache_hit, stats.cache_error) == (False, None)
        assert stats.compile_seconds > 0
        assert not cx.store_lowered("off", scaled_program())
        assert cx.load_lowered("off") is None
        assert list(store.entries()) == [] and store.clear() == (0, 0)
    assert list(tmp_path.iterdir()) == []


def test_unresolvable_cache_directory_turns_the_cache_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(cx.CACHE_ENVIRONMENT_VARIABLE, "~cyxla-no-such-user/x")
    program = tanh_program()
    with pytest.warns(UserWarning, match="cannot resolve the cache directory"):
        executable, stats = cx.compile_program(program)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "cannot resolve" in stats.cache_error
    np.testing.assert_allclose(executable.run([tanh_x()])[0], np.tanh(tanh_x()) * 2.0, rtol=1e-5)
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


def test_cache_directory_that_cannot_be_made_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("CYXLA_CACHE_DIR", str(tmp_path / "file" / "cache"))
    with pytest.warns(UserWarning, match="cannot use the cache directory .*file/cache"):
        assert not cx.store_lowered("nowhere", scaled_program())
    with pytest.warns(UserWarning, match="cannot use the cache directory"):
        executable, stats = cx.compile_program(scaled_program())
    check_scaled(executable)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "cannot use the cache directory" in stats.cache_error


def test_unknown_kind_of_entry_is_refused(cache: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown kind of cache entry 'models'"):
        store.open_store("models", create=True)
    assert not cache.exists()


def test_a_missing_entry_in_an_existing_store_is_a_miss(cache: Path) -> None:
    store.write("programs", "present", {}, b"x")
    assert store.read("programs", "absent") is None
    assert store.read("programs", "present") is not None


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


def test_peek_shows_headers_and_tolerates_junk(cache: Path, tmp_path: Path) -> None:
    cx.store_lowered("peeked", scaled_program())
    (entry,) = cache_entries(cache, "programs")
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


# ------------------------------------------------------------------ damaged entries


def _with_header(**fields: Any) -> Callable[[bytes], bytes]:
    """A well-formed foreign entry: header fields changed, the checksum valid."""

    def change(data: bytes) -> bytes:
        header, payload = split_entry(data)
        return encode_entry({**header, **fields}, payload)

    return change


#: Damaged and foreign executable entries, with a part of what the miss reports.
_DAMAGE: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "empty": (lambda d: b"", "truncated (0 bytes"),
    "truncated in the prefix": (lambda d: d[:30], "truncated (30 bytes"),
    "truncated in the header": (lambda d: d[: ENTRY_PREFIX.size + 10], "header is incomplete"),
    "truncated to half": (lambda d: d[: len(d) // 2], "corrupted or truncated"),
    "missing its last byte": (lambda d: d[:-1], "corrupted or truncated"),
    "bit flipped in the payload": (flip(-100), "corrupted or truncated"),
    "bit flipped in the header": (flip(ENTRY_PREFIX.size + 3), "corrupted or truncated"),
    "bit flipped in the checksum": (flip(20), "corrupted or truncated"),
    "bit flipped in the magic": (flip(1), "not a cyxla cache entry"),
    "another format version": (
        lambda d: d[:8] + (99).to_bytes(4, "little") + d[12:],
        "cache format 99",
    ),
    "written by another cyxla": (_with_header(cyxla_version="0.0.1"), "written by cyxla 0.0.1"),
    "of another kind": (_with_header(kind="programs"), "for another key"),
}


@pytest.mark.parametrize("damage", list(_DAMAGE))
def test_damaged_or_foreign_entry_is_ignored_reported_and_replaced(
    cache: Path, damage: str
) -> None:
    change, message = _DAMAGE[damage]
    program = scaled_program()
    cx.compile_program(program)
    (entry,) = cache_entries(cache)
    entry.write_bytes(change(entry.read_bytes()))

    executable, stats = cx.compile_program(program)
    check_scaled(executable)  # compiled afresh: right whatever the entry held
    assert not stats.cache_hit
    assert stats.cache_error is not None and message in stats.cache_error
    executable, stats = cx.compile_program(program)
    assert (stats.cache_hit, stats.cache_error) == (True, None)
    check_scaled(executable)


#: Headers (with a valid checksum) that do not describe their entry, with the warning.
_BAD_HEADERS: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any] | bytes], str]] = {
    "not JSON": (lambda h: b"{not json", "has an unreadable header"),
    "not an object": (lambda h: b"[1, 2]", "a header that does not describe its payload"),
    "a payload length one short": (
        lambda h: {**h, "payload_length": h["payload_length"] - 1},
        "a header that does not describe its payload",
    ),
}


@pytest.mark.parametrize("case", list(_BAD_HEADERS))
def test_entry_whose_header_does_not_describe_it_is_ignored(cache: Path, case: str) -> None:
    change, message = _BAD_HEADERS[case]
    cx.store_lowered("bad header", scaled_program())
    (entry,) = cache_entries(cache, "programs")
    header, payload = read_entry(entry)
    write_entry(entry, change(header), payload)
    with pytest.warns(UserWarning, match=message):
        assert cx.load_lowered("bad header") is None


def test_entry_that_cannot_be_read_is_ignored(cache: Path, tmp_path: Path) -> None:
    cx.store_lowered("failing", scaled_program())
    unreadable = os.open(tmp_path / "write-only", os.O_WRONLY | os.O_CREAT, 0o600)

    def fail_reads(stage: str, name: str, fd: int) -> None:
        if stage == "opened":
            os.dup2(unreadable, fd)  # a regular file of this user, which read() refuses

    try:
        with cache_seams(hook=fail_reads), pytest.warns(UserWarning, match=r"cannot read .*"):
            assert cx.load_lowered("failing") is None
    finally:
        os.close(unreadable)
    assert cx.load_lowered("failing") == scaled_program()


# ------------------------------------------------------------------ unsafe entries


@pytest.mark.parametrize("directory", ["the cache", "its executables"])
def test_writable_cache_directory_is_refused(cache: Path, directory: str) -> None:
    program = scaled_program()
    cx.compile_program(program)
    (entry,) = cache_entries(cache)
    before = entry.stat().st_mtime_ns
    writable, mode = (cache, 0o777) if directory == "the cache" else (entry.parent, 0o770)
    writable.chmod(mode)
    try:
        with pytest.warns(UserWarning, match="can be written by other users"):
            executable, stats = cx.compile_program(program)
    finally:
        writable.chmod(0o700)
    check_scaled(executable)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "other users" in stats.cache_error
    assert cache_entries(cache) == [entry] and entry.stat().st_mtime_ns == before  # untouched
    _, stats = cx.compile_program(program)
    assert stats.cache_hit


def test_store_refused_after_a_miss_is_reported(cache: Path) -> None:
    """The lookup finds no entry directory; storing then finds the cache unsafe."""
    cache.mkdir()
    cache.chmod(0o777)
    try:
        with pytest.warns(UserWarning, match="can be written by other users"):
            executable, stats = cx.compile_program(scaled_program())
    finally:
        cache.chmod(0o700)
    check_scaled(executable)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "can be written by other users" in stats.cache_error
    assert list(cache.iterdir()) == []


def test_group_writable_entry_is_refused_and_replaced(cache: Path) -> None:
    program = scaled_program()
    cx.compile_program(program)
    (entry,) = cache_entries(cache)
    entry.chmod(0o664)
    with pytest.warns(UserWarning, match="can be written by other users"):
        executable, stats = cx.compile_program(program)
    check_scaled(executable)
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
    program = scaled_program()
    cx.compile_program(program)
    # Seen from another user's process, the cache belongs to someone else.
    with cache_seams(user=os.geteuid() + 1), pytest.warns(UserWarning, match="is owned by user"):
        executable, stats = cx.compile_program(program)
    check_scaled(executable)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "owned by user" in stats.cache_error


def test_entry_directory_that_is_a_link_is_refused(cache: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cache.mkdir(mode=0o700)
    (cache / "programs").symlink_to(elsewhere)
    with pytest.warns(UserWarning, match=r"programs is not a directory; the cache is not used"):
        assert not cx.store_lowered("linked", scaled_program())
    with pytest.warns(UserWarning, match="is not a directory"):
        assert cx.load_lowered("linked") is None
    assert list(elsewhere.iterdir()) == []


# ------------------------------------------------------------------ things in place of entries


def test_symbolic_link_entry_is_refused(cache: Path, tmp_path: Path) -> None:
    program = scaled_program()
    cx.compile_program(program)
    (entry,) = cache_entries(cache)
    elsewhere = tmp_path / "elsewhere.entry"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)  # the right bytes, but not a file of the cache
    _, stats = cx.compile_program(program)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "cannot open" in stats.cache_error
    assert not entry.is_symlink()  # replaced by a real entry


def test_directory_in_place_of_an_entry(cache: Path) -> None:
    """Not loaded, not replaced (the rename fails and leaves no temporary file), and
    compiling goes on."""
    program = scaled_program()
    cx.compile_program(program)
    (entry,) = cache_entries(cache)
    entry.unlink()
    entry.mkdir(mode=0o700)
    executable, stats = cx.compile_program(program)
    check_scaled(executable)
    assert not stats.cache_hit
    assert stats.cache_error is not None
    assert "is not a regular file" in stats.cache_error
    assert "could not store the executable" in stats.cache_error
    assert sorted(p.name for p in (cache / "executables").iterdir()) == [entry.name]
    cx.store_lowered("directory", program)
    (lowered,) = cache_entries(cache, "programs")
    lowered.unlink()
    lowered.mkdir(mode=0o700)
    with pytest.warns(UserWarning, match="could not store the program scaled: .*directory"):
        assert not cx.store_lowered("directory", program)
    assert [p.name for p in (cache / "programs").iterdir()] == [lowered.name]


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


#: Seconds a call may take before it counts as blocked on the cache.
_DEADLINE = 60.0


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
    program = tanh_program()
    cx.compile_program(program)
    (entry,) = cache_entries(cache, "executables")
    pipe = _pipe_in_place_of(entry)
    executable, stats = _within_deadline(lambda: cx.compile_program(program), pipe)
    assert not stats.cache_hit
    assert stats.cache_error is not None and "is not a regular file" in stats.cache_error
    np.testing.assert_allclose(executable.run([tanh_x()])[0], np.tanh(tanh_x()) * 2.0, rtol=1e-5)


def test_pipe_entry_does_not_block_load_lowered(cache: Path) -> None:
    cx.store_lowered("pipe", tanh_program())
    (entry,) = cache_entries(cache, "programs")
    pipe = _pipe_in_place_of(entry)
    with pytest.warns(UserWarning, match="is not a regular file"):
        assert _within_deadline(lambda: cx.load_lowered("pipe"), pipe) is None


def test_pipe_entry_does_not_block_cache_info_and_is_cleared(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cx.store_lowered("listed", tanh_program())
    pipe = cache / "programs" / "pipe.entry"
    os.mkfifo(pipe, 0o600)
    assert _within_deadline(lambda: cli(["cache", "info"]), pipe) == 0
    shown = capsys.readouterr().out
    assert "2 files" in shown and "scaled" in shown
    assert store.peek(pipe) is None
    assert cli(["cache", "clear"]) == 0
    assert "removed 2 files" in capsys.readouterr().out
    assert list((cache / "programs").iterdir()) == []


# ------------------------------------------------------------------ size, eviction and clearing


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
        _, stats = cx.compile_program(scaled_program())
    assert stats.cache_error is None and len(cache_entries(cache)) == 1


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


def test_eviction_keeps_the_entry_it_just_wrote(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even when the clock makes it look older than the others."""
    cx.store_lowered("old", scaled_program())
    (old,) = cache_entries(cache, "programs")
    later = time.time() + 3600
    os.utime(old, (later, later))
    monkeypatch.setenv(store.MAX_BYTES_ENVIRONMENT_VARIABLE, str(old.stat().st_size + 100))
    assert cx.store_lowered("new", scaled_program(3.0))
    (kept,) = cache_entries(cache, "programs")
    assert kept == entry_path(cache, "programs", "new")
    assert cx.load_lowered("new") == scaled_program(3.0)


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


def test_stale_temporary_files_are_removed_and_other_files_kept(cache: Path) -> None:
    cx.store_lowered("first", scaled_program())
    programs = cache / "programs"
    stale, fresh, other = programs / ".tmp-stale", programs / ".tmp-fresh", programs / "notes"
    for path in (stale, fresh, other):
        path.write_bytes(b"x" * 10)
    hours_ago = time.time() - 2 * 3600
    os.utime(stale, (hours_ago, hours_ago))
    listed = {item.path.name: item for item in store.entries() if item.kind == "programs"}
    assert set(listed) == {stale.name, fresh.name, cache_entries(cache, "programs")[0].name}
    assert listed[stale.name].size == 10 and listed[stale.name].kind == "programs"
    cx.store_lowered("second", scaled_program(3.0))
    assert not stale.exists()  # left by a process that died while writing it
    assert fresh.exists() and other.exists()  # perhaps being written; not the cache's
    assert len(cache_entries(cache, "programs")) == 2


def test_compiled_entries_stay_within_the_bound(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cx.compile_program(scaled_program(2.0))
    (entry,) = cache_entries(cache)
    bound = entry.stat().st_size * 3 // 2  # room for one executable, not two
    monkeypatch.setenv(store.MAX_BYTES_ENVIRONMENT_VARIABLE, str(bound))
    cx.compile_program(scaled_program(3.0))
    assert len(cache_entries(cache)) == 1 and not entry.exists()
    _, stats = cx.compile_program(scaled_program(2.0))
    assert not stats.cache_hit  # evicted, so compiled again
    assert sum(p.stat().st_size for p in cache_entries(cache)) <= bound


def test_entry_larger_than_the_bound_is_reported(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(store.MAX_BYTES_ENVIRONMENT_VARIABLE, "100")
    executable, stats = cx.compile_program(scaled_program())
    check_scaled(executable)
    assert stats.cache_error is not None and "larger than the cache's size bound" in (
        stats.cache_error
    )
    assert cache_entries(cache) == []
    with pytest.warns(UserWarning, match="size bound"):
        assert not cx.store_lowered("big", scaled_program())


def test_clear_skips_an_entry_removed_meanwhile(cache: Path) -> None:
    """Another process's clear may remove an entry between the listing and the unlink."""
    cx.store_lowered("kept", tanh_program())
    listed = store.entries()
    (entry,) = cache_entries(cache, "programs")
    others = [item for item in listed if item.path != entry]  # a scan's, say

    def remove(stage: str, name: str, fd: int) -> None:
        if stage == "listed":
            entry.unlink()  # by the other process

    with warnings.catch_warnings(), cache_seams(hook=remove):
        warnings.simplefilter("error")
        assert store.clear() == (len(others), sum(item.size for item in others))
    assert not any(item.path.exists() for item in listed)
