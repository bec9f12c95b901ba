"""`store_lowered` and `load_lowered`: lowered programs kept in the disk cache between runs.

A cache, not a file to hand around: an entry is found by a key that holds the versions
that lowered it (`cache_key`), a miss or a damaged entry is None (lower again), and the
cache may drop it. A program meant to be copied and loaded elsewhere is a program file
(`Program.save`, `load_program`), which raises what is wrong instead.

A program is stored as a JSON header (its name, platform, specs, custom calls and output
structure, the last as `cyxla._output_tree` writes it, as program files do) and its
StableHLO bytes. Nothing read back is unpickled or imported, so an entry can describe a
program but never run code.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from cyxla._cache import store
from cyxla._output_tree import MAX_NESTING, decode_tree, encode_tree, nesting
from cyxla._program import Program, decode_specs, encode_specs

__all__ = ["load_lowered", "store_lowered"]

_KIND = "programs"
#: The largest dimension an entry may hold (the core's are signed 64-bit).
_MAX_DIMENSION = (1 << 63) - 1


def _describe(program: Program) -> dict[str, Any]:
    """The header of `program`'s entry; UnsupportedProgramError if its output cannot be kept."""
    tree = encode_tree(program.output_tree, program.name, "store_lowered")
    return {
        "name": program.name,
        "platform": program.platform,
        "stablehlo_version": program.stablehlo_version,
        "inputs": encode_specs(program.inputs),
        "outputs": encode_specs(program.outputs),
        "custom_calls": list(program.custom_calls),
        "output_tree": tree,
    }


def _check_specs(encoded: Any, field: str) -> None:
    """ValueError unless `encoded` is a list of `[element type, [dimensions]]` of ints."""
    if not isinstance(encoded, list):
        raise ValueError(f"{field} is not a list")
    for spec in encoded:
        if not (isinstance(spec, list) and len(spec) == 2 and isinstance(spec[1], list)):
            raise ValueError(f"{field} holds {spec!r:.80}, not [element type, [dimensions]]")
        if not all(type(n) is int and 0 <= n <= _MAX_DIMENSION for n in [spec[0], *spec[1]]):
            raise ValueError(f"{field} holds {spec!r:.80}, not integers in range")


def _check_description(description: Any) -> Mapping[str, Any]:
    """`description` if it has the shape `_describe` writes; KeyError, TypeError or
    ValueError if not, before anything converts or recurses into it."""
    if not isinstance(description, dict):
        raise TypeError(f"the description is a {type(description).__name__}, not a dict")
    for field in ("name", "platform", "stablehlo_version"):
        if not isinstance(description[field], str):
            raise ValueError(f"{field} is not a str")
    _check_specs(description["inputs"], "inputs")
    _check_specs(description["outputs"], "outputs")
    calls = description["custom_calls"]
    if not (isinstance(calls, list) and all(isinstance(c, str) for c in calls)):
        raise ValueError("custom_calls is not a list of str")
    if nesting(description["output_tree"]) > MAX_NESTING:
        raise ValueError(f"malformed output structure: nested deeper than {MAX_NESTING}")
    return description


def _program(description: Mapping[str, Any], stablehlo: bytes) -> Program:
    return Program(
        stablehlo=stablehlo,
        stablehlo_version=str(description["stablehlo_version"]),
        platform=str(description["platform"]),
        inputs=decode_specs(description["inputs"]),
        outputs=decode_specs(description["outputs"]),
        custom_calls=tuple(str(c) for c in description["custom_calls"]),
        name=str(description["name"]),
        output_tree=decode_tree(description["output_tree"]),
    )


def _check_key(key: str) -> None:
    if not isinstance(key, str) or not key:
        raise TypeError(f"a cache key is a non-empty str (see cyxla.cache_key), not {key!r}")


def store_lowered(key: str, program: Program) -> bool:
    """Keeps `program` in the disk cache under `key` (from `cache_key`) for `load_lowered`.

    Returns whether it was stored: not when the cache is off, or when the cache cannot
    be written (a warning says why; a cache problem never stops the caller). Raises
    UnsupportedProgramError if the program's output holds containers other than tuples,
    lists, dicts and None.
    """
    _check_key(key)
    description = _describe(program)
    try:
        return store.write(_KIND, key, {"program": description}, program.stablehlo) is not None
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
        return _program(_check_description(entry.header["program"]), entry.payload)
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError) as error:
        # A checksummed entry this cyxla cannot read: written by a buggy or altered build.
        warnings.warn(
            f"cyxla cache: ignored {entry.path}: unreadable program ({error!r})", stacklevel=2
        )
        return None
