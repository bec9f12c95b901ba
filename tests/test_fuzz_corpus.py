"""The fuzz targets' corpus (tests/fuzz/<target>/: the seeds, and every input a fuzzer
found that crashed or was misread, kept as a regression case), replayed through the same
readers from Python: each file is read or refused with the reader's own error, and what is
read agrees with an independent reading (Python's json, the writer's round trip)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import cyxla as cx
from cyxla import _core
from cyxla._cache import store
from cyxla._errors import PjrtError

from support import encode_entry, entry_path, hooks

CORPUS = Path(__file__).parent / "fuzz"


def _files(target: str) -> list[Path]:
    return sorted((CORPUS / target).iterdir())


def test_every_target_has_seeds() -> None:
    targets = (
        "program_file",
        "cache_entry",
        "json",
        "hlo_signature",
        "compiled_form",
        "elf_object",
        "lapack_handlers",  # call frames: fuzz/lapack_handlers.cpp alone reads them
        "plugin_record",
    )
    for target in targets:
        assert any(p.name.startswith("seed-") for p in _files(target)), target


@pytest.mark.parametrize("path", _files("program_file"), ids=lambda p: p.name)
def test_program_files(path: Path) -> None:
    data = path.read_bytes()
    try:
        contents = _core._read_program_file(data, path.name.encode())
    except cx.ProgramFileError as error:
        assert str(error).startswith(path.name + ": ")
        return
    # What the reader accepts, load_program loads as the reader read it.
    program = cx.load_program(path)
    assert len(program.inputs) == len(contents["inputs"])
    assert program.stablehlo == contents["stablehlo"]


@pytest.mark.parametrize("path", _files("hlo_signature"), ids=lambda p: p.name)
def test_hlo_modules(path: Path) -> None:
    data = path.read_bytes()
    # The first byte picks the format, as in fuzz/hlo_signature.cpp.
    fmt = "hlo_with_config" if data[:1] and data[0] & 1 else "hlo"
    try:
        signature = hooks.hlo_signature(fmt, data[1:])
    except PjrtError as error:
        assert "is not a readable HLO module" in str(error)
        return
    assert signature is not None
    parameters, aliases = signature
    for element_type, dims in parameters:
        assert element_type >= 0 and all(isinstance(d, int) for d in dims)
    for output, parameter in aliases:
        assert output >= 0 and parameter >= 0


@pytest.mark.parametrize("path", _files("json"), ids=lambda p: p.name)
def test_json_headers(path: Path, tmp_path: Path) -> None:
    text = path.read_bytes()
    entry = tmp_path / "peeked.entry"
    entry.write_bytes(encode_entry(text, b""))
    header = store.peek(entry)
    if header is None:
        return
    # A header the strict reader accepts is an object Python's json reads the same.
    assert header == json.loads(text)


@pytest.mark.parametrize("path", _files("cache_entry"), ids=lambda p: p.name)
def test_cache_entries(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(cx.CACHE_ENVIRONMENT_VARIABLE, str(cache))
    # The key fuzz/cache_entry.cpp reads; its entries' version is never this cyxla's.
    assert store.write("programs", "fuzz", {}, b"") is not None
    entry_path(cache, "programs", "fuzz").write_bytes(path.read_bytes())
    try:
        entry = store.read("programs", "fuzz")
    except store.EntryError:
        return
    assert entry is not None and entry.header["key"] == "fuzz"


#: The library fuzz/plugin_record.cpp asks for.
_FUZZ_LIBRARY = ("/fuzz/pjrt_c_api_cpu_plugin.so", 201000000, 1700000000)


@pytest.mark.parametrize("path", _files("plugin_record"), ids=lambda p: p.name)
def test_plugin_records(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", "surrogateescape")
    read = store._native._read_plugin_record
    try:
        again = read(text, *_FUZZ_LIBRARY)
    except (store.EntryError, UnicodeEncodeError):
        return
    # What the reader accepts writes back as a record it reads as the same facts, and
    # names the library asked for.
    assert read(again, *_FUZZ_LIBRARY) == again
    fields = json.loads(again)
    assert (fields["library"], fields["size"], fields["mtime_ns"]) == _FUZZ_LIBRARY


@pytest.mark.parametrize("path", _files("compiled_form"), ids=lambda p: p.name)
def test_compiled_forms(path: Path) -> None:
    data = path.read_bytes()
    runner, reason = hooks.runner_verdict(data)
    try:
        summary = hooks.compiled_summary(data)
    except PjrtError as error:
        # A refusal keeps PJRT, with the reader's message.
        assert runner == "pjrt" and reason.endswith(str(error))
        return
    assert runner in ("kernels", "pjrt") and reason
    # What the readers accept holds its objects, each an ELF object the ELF reader reads.
    details = hooks.compiled_details(data)
    assert summary["objects"] == len(details["objects"])
    for obj in details["objects"]:
        assert hooks.elf_object(obj["contents"])["size"] <= len(obj["contents"])


@pytest.mark.parametrize("path", _files("elf_object"), ids=lambda p: p.name)
def test_elf_objects(path: Path) -> None:
    data = path.read_bytes()
    try:
        elf = hooks.elf_object(data)
    except PjrtError as error:
        assert str(error).startswith("the ELF object is not one cyxla reads: ")
        return
    sections, symbols = elf["sections"], elf["symbols"]
    for target, entries in elf["relocations"]:
        assert 0 < target < len(sections)
        assert all(symbol < len(symbols) for _, _, symbol, _ in entries)
    # The kernel loader over what the reader accepts, as fuzz/elf_object.cpp runs it.
    try:
        mapped = hooks.load_object(data).mapped_bytes
    except PjrtError:
        return
    assert mapped % os.sysconf("SC_PAGE_SIZE") == 0
