"""The keys of lowered programs in the disk cache (`cache_key`). Executable keys are made
by the core (src/cache/executable_key.cpp), for Python and C alike."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from typing import Any

import jax
import numpy as np

from cyxla._cache.store import cyxla_version

__all__ = ["cache_key"]


def _distribution_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _tagged(value: Any) -> list[Any]:
    """`value` as `[tag, content]`, where the tag names its type, or TypeError.

    Every value is tagged, containers too, so no two values of other types share an
    encoding: `1+0j` is not `{"complex": [1.0, 0.0]}`, `b"x"` is not a str, a dtype is
    not its name, a tuple is not a list, an array is not a dict of its shape and dtype.
    Floats are written with `repr`, so every float (inf and nan too) has one text.
    """
    if value is None:
        return ["none"]
    if isinstance(value, bool):  # before int: bool is an int
        return ["bool", value]
    if isinstance(value, int):
        return ["int", str(value)]
    if isinstance(value, float):
        return ["float", repr(value)]
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, complex):
        return ["complex", repr(value.real), repr(value.imag)]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ["bytes", hashlib.sha256(value).hexdigest()]
    if isinstance(value, np.generic):  # before the shape test: a scalar has a shape too
        return _tagged(value.item())
    if isinstance(value, np.dtype):
        return ["dtype", value.str if value.kind != "V" else value.name]
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("cache key parts may be mappings with string keys only")
        return ["map", [[k, _tagged(value[k])] for k in sorted(value)]]
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # arrays, ShapeDtypeStruct
        return ["array", [int(d) for d in value.shape], str(np.dtype(value.dtype))]
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_tagged(v) for v in value]]
    if isinstance(value, Sequence):
        return ["list", [_tagged(v) for v in value]]
    raise TypeError(
        f"a cache key part of type {type(value).__name__} has no stable text; pass str, "
        "bytes, numbers, None, dtypes, shapes or sequences and mappings of them"
    )


def _digest(document: Mapping[str, Any]) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def cache_key(*parts: Any, distributions: Iterable[str] = ()) -> str:
    """A key for `store_lowered` and `load_lowered` made from `parts` and versions.

    `parts` describe what was lowered (a name, argument shapes and dtypes, settings):
    strings, bytes, numbers, None, dtypes, arrays or `jax.ShapeDtypeStruct`s (their
    shape and dtype), and lists, tuples and string-keyed dicts of those. Values of other
    types give other keys, even where their text is alike: a tuple is not a list, a
    complex number is not a dict, an array is not its shape. The key also
    holds the versions of JAX, jaxlib and cyxla, whether JAX's 64-bit mode is on (it
    changes what tracing produces), and the version of each installed distribution
    named in `distributions` (None for one that is missing), such as the package whose
    JAX code is lowered or the plugin's. Any change gives another key.
    """
    names = sorted(set(distributions))
    return _digest(
        {
            "parts": _tagged(list(parts)),
            "jax": _distribution_version("jax"),
            "jaxlib": _distribution_version("jaxlib"),
            "cyxla": cyxla_version(),
            "x64": bool(jax.config.jax_enable_x64),
            "distributions": {name: _distribution_version(name) for name in names},
        }
    )
