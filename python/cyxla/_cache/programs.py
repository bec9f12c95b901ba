"""`store_lowered` and `load_lowered`: lowered programs kept on disk between runs.

A program is stored as a JSON header (its name, platform, specs, custom calls and output
structure) and its StableHLO bytes. Nothing read back is unpickled or imported, so an
entry can describe a program but never run code; the output structure is therefore
limited to the containers JAX builds in: tuples, lists, dicts, OrderedDicts and None.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import jax

from cyxla._cache import store
from cyxla._errors import UnsupportedProgramError
from cyxla._program import Program, decode_specs, encode_specs

__all__ = ["load_lowered", "store_lowered"]

_KIND = "programs"
_LEAF = "*"
#: The deepest nesting of lists and dicts in an encoded output structure (two or three
#: for each level of the tree): deeper ones are refused when stored, and an entry holding
#: one is ignored before anything recurses into it.
_MAX_NESTING = 512
#: The largest dimension an entry may hold (the core's are signed 64-bit).
_MAX_DIMENSION = (1 << 63) - 1


def _encode_tree(tree: Any) -> Any:
    node = tree.node_data()
    if node is None:
        return _LEAF
    node_type, data = node
    children = [_encode_tree(child) for child in tree.children()]
    if node_type is type(None):
        return None
    if node_type in (tuple, list):
        return {node_type.__name__: children}
    if node_type in (dict, OrderedDict):
        keys = list(data)
        if not all(type(k) in (str, int) for k in keys):
            raise UnsupportedProgramError(
                f"the program's output has a dict key that cannot be stored: {keys}; "
                "use str or int keys"
            )
        name = "dict" if node_type is dict else "ordered_dict"
        return {name: [keys, children]}
    raise UnsupportedProgramError(
        f"the program's output holds a {node_type.__name__}, which store_lowered cannot "
        "keep (it would have to import code to rebuild it); return tuples, lists, dicts "
        "or None"
    )


def _example(encoded: Any) -> Any:
    """A value with the encoded structure and 0 as every leaf; ValueError if malformed."""
    if encoded == _LEAF:
        return 0
    if encoded is None:
        return None
    if isinstance(encoded, dict) and len(encoded) == 1:
        ((name, value),) = encoded.items()
        if name in ("tuple", "list") and isinstance(value, list):
            children = [_example(child) for child in value]
            return tuple(children) if name == "tuple" else children
        if name in ("dict", "ordered_dict") and isinstance(value, list) and len(value) == 2:
            keys, children = value
            if isinstance(keys, list) and isinstance(children, list):
                items = zip(keys, map(_example, children), strict=True)
                return dict(items) if name == "dict" else OrderedDict(items)
    raise ValueError(f"malformed output structure {encoded!r}")


def _decode_tree(encoded: Any) -> Any:
    return jax.tree.structure(_example(encoded))


def _nesting(encoded: Any) -> int:
    """How deeply `encoded` nests lists and dicts (counted without recursing, and only up
    to one past `_MAX_NESTING`)."""
    nesting, level = 0, [encoded]
    while nesting <= _MAX_NESTING:
        level = [
            child
            for node in level
            if isinstance(node, (list, dict))
            for child in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            break
        nesting += 1
    return nesting


def _describe(program: Program) -> dict[str, Any]:
    """The header of `program`'s entry; UnsupportedProgramError if its output cannot be kept."""
    tree = _encode_tree(program.output_tree)
    if _nesting(tree) > _MAX_NESTING:
        raise UnsupportedProgramError(
            f"the output structure of {program.name} nests too deeply for store_lowered "
            f"(more than {_MAX_NESTING} lists and dicts)"
        )
    if _decode_tree(tree) != program.output_tree:  # only what round-trips is stored
        raise UnsupportedProgramError(
            f"the output structure {program.output_tree} of {program.name} cannot be stored"
        )
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
    if _nesting(description["output_tree"]) > _MAX_NESTING:
        raise ValueError(f"malformed output structure: nested deeper than {_MAX_NESTING}")
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
        output_tree=_decode_tree(description["output_tree"]),
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
