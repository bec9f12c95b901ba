"""The XLA FFI version of a directory of XLA FFI headers (`xla/ffi/api/c_api.h`), as
jaxlib and tensorflow-cpu ship them."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["header_ffi_version"]


def header_ffi_version(include: str | Path) -> tuple[int, int] | None:
    """XLA_FFI_API_MAJOR.MINOR of the headers under `include`, or None without them."""
    try:
        header = (Path(include) / "xla/ffi/api/c_api.h").read_text()
    except OSError:
        return None
    major = re.search(r"#define XLA_FFI_API_MAJOR (\d+)", header)
    minor = re.search(r"#define XLA_FFI_API_MINOR (\d+)", header)
    if major is None or minor is None:
        return None
    return int(major.group(1)), int(minor.group(1))
