"""Compiled executables in the disk cache: looked up before compiling, stored after."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cyxla import _backend, _core
from cyxla._cache import store as _store
from cyxla._cache.keys import executable_source, key_of, library_identity
from cyxla._program import Program, SpecRecords, output_mismatch

__all__ = ["Lookup", "load", "store"]

_KIND = "executables"


@dataclass(frozen=True)
class Lookup:
    """What the cache had for a program."""

    #: The loaded executable, or None on a miss.
    native: _core.Executable | None
    #: Seconds spent on the key, reading, checking and loading the entry.
    seconds: float
    #: Why an entry found was not used, or why the cache is off; None if nothing went wrong.
    error: str | None
    #: The key to store the compiled program under; None when the cache cannot be used.
    key: str | None
    identity: dict[str, Any] | None
    #: What the key digests (`executable_source`), kept in the entry stored.
    source: dict[str, Any] | None = None


def _same_specs(recorded: Any, specs: SpecRecords) -> bool:
    """Whether an entry's recorded input specs (JSON, unchecked) are `specs`: compared
    as JSON, so a value of another type (a float, Infinity, a string) never converts."""
    return recorded == [[t, d] for t, d in specs] and _plain_ints(recorded)


def _plain_ints(recorded: list[Any]) -> bool:
    # `==` takes True for 1 and 1.0 for 1; an entry holds ints.
    return all(type(t) is int and all(type(d) is int for d in dims) for t, dims in recorded)


def _donated(recorded: Any, outputs: int) -> list[int] | None:
    """An entry's recorded outputs written in place (`donated_outputs` of the program it
    was compiled from), or None unless they are distinct output indices."""
    if not isinstance(recorded, list) or len(set(recorded)) != len(recorded):
        return None
    if not all(type(k) is int and 0 <= k < outputs for k in recorded):
        return None
    return recorded


def load(
    program: Program,
    loaded: _backend.LoadedPlugin,
    compile_options: bytes,
    specs: SpecRecords,
) -> Lookup:
    """Looks `program` up; a damaged, foreign or unsafe entry is a miss with an error.
    The entry records which outputs the program writes in place, so a hit needs no
    reading of the StableHLO."""
    start = time.perf_counter()
    try:
        if _store.configured_directory() is None:
            return Lookup(None, 0.0, None, None, None)
    except _store.CacheRefusedError as error:
        return Lookup(None, time.perf_counter() - start, str(error), None, None)
    try:
        identity = library_identity(loaded)
    except OSError as error:  # the library moved since it was loaded: no key to trust
        return Lookup(
            None, time.perf_counter() - start, f"cannot identify the plugin: {error}", None, None
        )
    source = executable_source(
        program, compile_options, identity, loaded.options, _store.cyxla_version()
    )
    key = key_of(source)
    try:
        entry = _store.read(_KIND, key)
    except _store.CacheRefusedError as error:
        return Lookup(None, time.perf_counter() - start, str(error), None, None)
    except _store.EntryError as error:
        return Lookup(None, time.perf_counter() - start, str(error), key, identity, source)
    native, error = (None, None) if entry is None else _use(entry, loaded, program, specs, source)
    return Lookup(native, time.perf_counter() - start, error, key, identity, source)


def _use(
    entry: _store.Entry,
    loaded: _backend.LoadedPlugin,
    program: Program,
    specs: SpecRecords,
    source: dict[str, Any],
) -> tuple[_core.Executable | None, str | None]:
    """The executable in a checked entry, or None and why it cannot be used."""
    if entry.header.get("plugin") != source["plugin"]:
        plugin = entry.header.get("plugin")
        return None, f"{entry.path} was written by another plugin: {plugin!r:.300}"
    if entry.header.get("source") != source:
        return None, f"{entry.path} was compiled from another program or with other options"
    if not _same_specs(entry.header.get("inputs"), specs):
        inputs = entry.header.get("inputs")
        return None, f"{entry.path} was compiled for other inputs: {inputs!r:.300}"
    donated = _donated(entry.header.get("donated"), len(program.outputs))
    if donated is None:
        recorded = entry.header.get("donated")
        return None, f"{entry.path} records no outputs written in place: {recorded!r:.300}"
    try:
        native = loaded.runtime.deserialize(entry.payload, specs, donated)
    except Exception as failure:  # whatever the plugin says, compiling is the way out
        return None, f"the plugin could not load {entry.path}: {failure}"
    mismatch = output_mismatch(native, program)
    if mismatch is not None:
        return None, f"{entry.path} loaded with {mismatch}"
    return native, None


def store(
    lookup: Lookup,
    program: Program,
    native: _core.Executable,
    specs: SpecRecords,
    donated: Sequence[int],
) -> str | None:
    """Stores a compiled executable under the key `load` made, with the outputs it writes
    in place (`donated`); returns why not, if it failed."""
    if lookup.key is None:
        return None
    try:
        header = {
            "name": program.name,
            "platform": program.platform,
            "plugin": lookup.identity,
            "source": lookup.source,
            "inputs": specs,
            "donated": list(donated),
            "fingerprint": native.fingerprint().hex(),
        }
        _store.write(_KIND, lookup.key, header, native.serialize())
    except _store.CacheRefusedError as error:
        return str(error)
    except Exception as error:  # the program runs anyway; the next start compiles again
        return f"could not store the executable: {error}"
    return None
