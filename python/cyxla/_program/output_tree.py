"""The output structure of a program as JSON: what a program file (and so the program
cache) keeps of `Program.output_tree`, in its output_tree line.

Nothing read back is unpickled or imported, so a stored structure can describe a result
but never run code; it is therefore limited to the containers JAX builds in: tuples,
lists, dicts, OrderedDicts and None. The program-file reader (src/program/program_file.cpp)
checks a stored one, its nesting and its leaves, before `decode_tree` sees it.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from cyxla import _core
from cyxla._errors import UnsupportedProgramError

__all__ = ["MAX_NESTING", "decode_tree", "encode_tree", "flat_tuple"]

_LEAF = "*"
#: The deepest nesting of lists and dicts in an encoded output structure (two or three
#: for each level of the tree): deeper ones are refused when written, and by the reader.
MAX_NESTING: int = _core.OUTPUT_TREE_MAX_NESTING


def _encode(tree: Any, writer: str) -> Any:
    node = tree.node_data()
    if node is None:
        return _LEAF
    node_type, data = node
    children = [_encode(child, writer) for child in tree.children()]
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
        f"the program's output holds a {node_type.__name__}, which {writer} cannot keep "
        "(it would have to import code to rebuild it); return tuples, lists, dicts or None"
    )


def _levels(tree: Any) -> int:
    """How deeply containers nest in `tree` (a `jax.tree` structure), counted without
    recursing, and only up to one past `MAX_NESTING`."""
    depth, level = 0, [tree]
    while depth <= MAX_NESTING:
        level = [child for node in level for child in node.children()]
        if not level:
            break
        depth += 1
    return depth


def encode_tree(tree: Any, name: str, writer: str) -> str:
    """`tree` (a `jax.tree` structure) as JSON text; UnsupportedProgramError naming
    `writer` if it holds other containers, nests too deeply, or does not decode to itself."""
    too_deep = UnsupportedProgramError(
        f"the output structure of {name} nests too deeply for {writer} "
        f"(more than {MAX_NESTING} lists and dicts)"
    )
    # Each level of containers encodes as two or three of lists and dicts: a tree too deep
    # for that is refused before encoding it, which recurses (past Python's stack, once).
    if _levels(tree) > MAX_NESTING // 2:
        raise too_deep
    encoded = _encode(tree, writer)
    if _nesting(encoded) > MAX_NESTING:
        raise too_deep
    if _structure(encoded) != tree:  # only what round-trips is stored
        raise UnsupportedProgramError(f"the output structure {tree} of {name} cannot be stored")
    return json.dumps(encoded, separators=(",", ":"))


def _example(encoded: Any) -> Any:
    """A value with the encoded structure and 0 as every leaf."""
    if encoded == _LEAF:
        return 0
    if encoded is None:
        return None
    ((name, value),) = encoded.items()
    if name in ("tuple", "list"):
        children = [_example(child) for child in value]
        return tuple(children) if name == "tuple" else children
    keys, children = value
    items = zip(keys, map(_example, children), strict=True)
    return dict(items) if name == "dict" else OrderedDict(items)


def _structure(encoded: Any) -> Any:
    import jax  # on first use: a process that only runs programs never imports JAX

    return jax.tree.structure(_example(encoded))


def flat_tuple(leaves: int) -> str:
    """The JSON text of a tuple of `leaves` leaves, as `encode_tree` writes it."""
    return json.dumps({"tuple": [_LEAF] * leaves}, separators=(",", ":"))


def decode_tree(text: str) -> Any:
    """The `jax.tree` structure of an output_tree line that the program-file reader
    accepted (it refuses anything but a structure of the file's outputs)."""
    return _structure(json.loads(text))


def _nesting(encoded: Any) -> int:
    """How deeply `encoded` nests lists and dicts (counted without recursing, and only up
    to one past `MAX_NESTING`)."""
    depth, level = 0, [encoded]
    while depth <= MAX_NESTING:
        level = [
            child
            for node in level
            if isinstance(node, (list, dict))
            for child in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            break
        depth += 1
    return depth
