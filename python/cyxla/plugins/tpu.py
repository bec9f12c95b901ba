"""Google's TPU plugin, from `libtpu` (the `tpu` extra)."""

from __future__ import annotations

import importlib
import pathlib

PLATFORM = "tpu"
EXTRA = "tpu"


def library_path() -> str:
    libtpu = importlib.import_module("libtpu")
    path = pathlib.Path(libtpu.get_library_path())
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed libtpu")
    return str(path)
