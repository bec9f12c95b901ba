"""The `cache` command (cyxla._cli.cache): `python -m cyxla cache info` and `cache clear`."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

import cyxla as cx
from cyxla.__main__ import main as cli
from cyxla._cache import store

from support import (
    cache_entries,
    read_entry,
    run_cyxla,
    scaled_program,
    tanh_program,
    write_entry,
)

pytestmark = pytest.mark.usefixtures("no_stray_cache_warnings")


def test_cache_command_shows_and_clears(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cx.compile_program(scaled_program())
    cx.store_lowered("shown", scaled_program())
    assert cli(["cache", "info"]) == 0
    shown = capsys.readouterr().out
    assert str(cache) in shown and "2 files" in shown and "scaled" in shown
    assert "executable" in shown and "program" in shown
    assert cli(["cache", "clear"]) == 0
    assert "removed 2 files" in capsys.readouterr().out
    assert cache_entries(cache) == [] and cache_entries(cache, "programs") == []
    assert cli(["cache"]) == 0  # info is the default
    assert "0 files" in capsys.readouterr().out


def test_cache_command_reports_an_unsafe_or_disabled_cache(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cx.store_lowered("x", scaled_program())
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
    cx.store_lowered("module", scaled_program())
    result = run_cyxla("cache", "info", env={"CYXLA_CACHE_DIR": str(cache)})
    assert result.returncode == 0, result.stderr
    assert f"directory: {cache}" in result.stdout and "1 file," in result.stdout


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


def test_cache_sizes_are_shown_in_binary_units() -> None:
    from cyxla._cli import cache as cli_cache

    assert cli_cache._size(1023) == "1023 bytes"
    assert cli_cache._size(1536) == "1.5 KiB"
    assert cli_cache._size(5 * 1024**2) == "5.0 MiB"
    assert cli_cache._size(3 * 1024**3) == "3.0 GiB"
    assert cli_cache._size(4096 * 1024**3) == "4096.0 GiB"


def _nested(depth: int) -> str:
    return '{"tuple":[' * depth + '"*"' + "]}" * depth


def _hostile_program_entry(cache: Path, key: str, field: str, text: str) -> Path:
    """A program entry whose header `field` is the raw JSON `text`, with a valid checksum."""
    cx.store_lowered(key, tanh_program())
    (entry,) = cache_entries(cache, "programs")
    header, payload = read_entry(entry)
    marker = "@@HOSTILE@@"
    header[field] = marker
    raw = json.dumps(header, sort_keys=True).replace(json.dumps(marker), text)
    write_entry(entry, raw.encode(), payload)
    return entry


def test_cache_info_shows_unreadable_entries_by_their_kind(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Entries it cannot name (a hostile name, nesting past the bound, junk) are listed as
    `program ?`, a temporary file as `temporary ?`, beside the entries it can name."""
    _hostile_program_entry(cache, "named", "name", '{"deep": ' + _nested(100_000) + "}")
    cx.store_lowered("listed", tanh_program(3.0))
    programs = cache / "programs"
    write_entry(programs / "huge.entry", b'{"name": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", b"")
    (programs / "junk.entry").write_bytes(b"junk")
    (programs / ".tmp-left").write_bytes(b"")
    assert cli(["cache", "info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    files = [path for path in cache.rglob("*") if path.is_file()]  # with a plugin scan, maybe
    assert len(files) >= 5 and f"{len(files)} files" in lines[2]
    kinds = collections.Counter(tuple(line.split()[:2]) for line in lines)
    assert kinds[("program", "?")] == 3
    assert kinds[("program", "scaled")] == 1
    assert kinds[("temporary", "?")] == 1


def test_cache_clear_skips_what_it_cannot_remove_and_says_so(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cx.store_lowered("first", tanh_program())
    cx.store_lowered("second", tanh_program(3.0))
    blocking = cache / "programs" / "0-blocking.entry"  # listed first
    blocking.mkdir()  # named like an entry, but unlink cannot remove a directory
    assert cli(["cache", "clear"]) == 1
    out = capsys.readouterr().out
    assert "removed 2 files" in out
    assert f"could not clear the cache at {cache}: 0-blocking.entry" in out
    assert [p.name for p in (cache / "programs").iterdir()] == [blocking.name]
    with pytest.warns(UserWarning, match="could not remove .*0-blocking.entry"):
        assert store.clear() == (0, 0)
    blocking.rmdir()
    assert cli(["cache", "clear"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("CYXLA_CACHE_DIR", "0")
    assert cli(["cache", "clear"]) == 0
    assert "the disk cache is off (CYXLA_CACHE_DIR='0'); nothing to clear" in (
        capsys.readouterr().out
    )
