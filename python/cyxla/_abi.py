"""What extension modules need at build and import time: headers and the ABI check."""

from __future__ import annotations

import numbers
from pathlib import Path

from cyxla import _core
from cyxla._errors import AbiVersionError
from cyxla._version import __version__

__all__ = ["ABI_VERSION", "HOST_ALIGNMENT", "abi_version", "check_abi", "get_include"]

#: The version of the native API (include/cyxla/cyxla.h) this cyxla provides.
ABI_VERSION: int = _core.ABI_VERSION
#: Inputs at addresses that are multiples of this are read in place on the CPU.
HOST_ALIGNMENT: int = _core.HOST_ALIGNMENT


def abi_version() -> int:
    """The native API version of the loaded runtime (`CYXLA_ABI_VERSION` in cyxla.h)."""
    return int(_core.ABI_VERSION)


def check_abi(version: int) -> None:
    """Raises AbiVersionError unless a module built against `version` can run here.

    Call it at import time with the `ABI_VERSION` the module was compiled against (a
    Cython module cimports it from `cyxla._runtime`). Struct layouts are part of the
    version, which C compilers and Cython cannot check at import. A `version` that is
    not an integer (a str, a float, a bool) raises TypeError.
    """
    if isinstance(version, bool) or not isinstance(version, numbers.Integral):
        raise TypeError(
            f"check_abi: version must be an int (the ABI_VERSION the module was built "
            f"against), given {type(version).__name__} {version!r}"
        )
    oldest = int(_core.ABI_OLDEST_COMPATIBLE)
    current = abi_version()
    if not oldest <= int(version) <= current:
        advice = "upgrade cyxla" if version > current else "rebuild the module against this cyxla"
        raise AbiVersionError(
            f"the module was built against cyxla ABI version {version}, but the installed "
            f"cyxla {__version__} provides ABI version {current} (serving {oldest} to "
            f"{current}); {advice}"
        )


def get_include() -> list[str]:
    """Directories to build extension modules with: [C/C++ headers, Cython .pxd files].

    The first holds `cyxla/cyxla.h`, `cyxla/cyxla.hpp` and `cyxla/element_type.h`; pass the
    second to Cython with -I so that `cimport cyxla._runtime` finds the declarations.
    """
    package = Path(__file__).resolve().parent
    return [str(package / "include"), str(package.parent)]
