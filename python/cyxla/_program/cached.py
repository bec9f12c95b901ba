"""`store_lowered` and `load_lowered`: lowered programs kept in the disk cache between runs.

A cache, not a file to hand around: an entry is found by a key that holds the versions
that lowered it (`cache_key`), a miss or a damaged entry is None (lower again), and the
cache may drop it. A program meant to be copied and loaded elsewhere is a program file
(`Program.save`, `load_program`), which raises what is wrong instead.

An entry's payload is the program's program file, the one serialization of a `Program`,
written and read by the core as `Program.save` and `load_program` do; its header holds
the program's name for `python -m cyxla cache`. Nothing read back is unpickled or
imported, so an entry can describe a program but never run code.
"""

from __future__ import annotations

import warnings

from cyxla._cache import store
from cyxla._errors import ProgramFileError
from cyxla._program.program import Program, program_file_bytes, program_from_file_bytes

__all__ = ["load_lowered", "store_lowered"]

_KIND = "programs"


def _check_key(key: str) -> None:
    if not isinstance(key, str) or not key:
        raise TypeError(f"a cache key is a non-empty str (see cyxla.cache_key), not {key!r}")


def store_lowered(key: str, program: Program) -> bool:
    """Keeps `program` in the disk cache under `key` (from `cache_key`) for `load_lowered`.

    Returns whether it was stored: not when the cache is off, or when the cache cannot
    be written (a warning says why; a cache problem never stops the caller). Raises
    UnsupportedProgramError if the program's output holds containers other than tuples,
    lists, dicts and None, or if it calls back into Python (`Program.callbacks`: functions
    of this process only).
    """
    _check_key(key)
    data = program_file_bytes(program, "store_lowered")
    try:
        return store.write(_KIND, key, {"name": program.name}, data) is not None
    except store.CacheRefusedError:
        return False  # already warned
    except (OSError, store.EntryTooLargeError) as error:
        warnings.warn(
            f"cyxla cache: could not store the program {program.name}: {error}", stacklevel=2
        )
        return False


def load_lowered(key: str) -> Program | None:
    """The program stored under `key` by `store_lowered`, or None if there is none.

    An entry that is damaged or unsafe to use also gives None, after a warning; storing
    the program again replaces it.
    """
    _check_key(key)
    try:
        entry = store.read(_KIND, key)
    except store.CacheRefusedError:
        return None  # already warned
    except store.EntryError as error:
        warnings.warn(f"cyxla cache: ignored an entry: {error}", stacklevel=2)
        return None
    if entry is None:
        return None
    try:
        return program_from_file_bytes(entry.payload, str(entry.path))
    except ProgramFileError as error:
        # A checksummed entry this cyxla cannot read: written by another format of entry,
        # or a buggy or altered build.
        warnings.warn(f"cyxla cache: ignored an entry: {error}", stacklevel=2)
        return None
