"""What native code needs at build and import time: headers, the ABI check, and where
libcyxla and its CMake and pkg-config files are."""

from __future__ import annotations

import numbers
from pathlib import Path

from cyxla import _core
from cyxla._errors import AbiVersionError
from cyxla._version import __version__

__all__ = [
    "ABI_VERSION",
    "HOST_ALIGNMENT",
    "abi_version",
    "check_abi",
    "get_cmake_dir",
    "get_include",
    "get_library",
    "get_pkgconfig_dir",
]

#: The version of the native API (include/cyxla/cyxla.h) this cyxla provides.
ABI_VERSION: int = _core.ABI_VERSION
#: Inputs at addresses that are multiples of this are read in place on the CPU.
HOST_ALIGNMENT: int = _core.HOST_ALIGNMENT


def abi_version() -> int:
    """The native API version of the loaded runtime (`CYXLA_ABI_VERSION` in cyxla.h)."""
    return int(_core.ABI_VERSION)


def check_abi(version: int) -> None:
    """Raises AbiVersionError unless a module built against `version` can run here.

    Call it at import time: struct layouts are part of the version, which C compilers
    and Cython cannot check at import.

    Args:
        version: The `ABI_VERSION` the module was compiled against (a Cython module
            cimports it from `cyxla._runtime`).

    Raises:
        AbiVersionError: this cyxla does not serve `version` (older than the oldest it
            serves, or newer than its own); the message names both.
        TypeError: `version` is not an int (a str, a float, a bool).
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
    return [str(_installed() / "include"), str(Path(__file__).resolve().parent.parent)]


def _installed() -> Path:
    """Where the built files are: beside the extension module (in an editable install the
    Python files stay in the source tree, the built ones do not)."""
    return Path(_core.__file__).resolve().parent


def get_cmake_dir() -> str:
    """The directory of cyxla's CMake package (`cyxlaConfig.cmake`).

    Add it to `CMAKE_PREFIX_PATH` or pass it as `-Dcyxla_DIR=...`, then
    `find_package(cyxla CONFIG REQUIRED)` gives the target `cyxla::cyxla` (libcyxla and
    its headers). `python -m cyxla --cmake-dir` prints it.
    """
    return str(_installed() / "share" / "cmake" / "cyxla")


def get_pkgconfig_dir() -> str:
    """The directory of `cyxla.pc`: add it to `PKG_CONFIG_PATH` for `pkg-config cyxla`.
    `python -m cyxla --pkgconfig-dir` prints it."""
    return str(_installed() / "lib" / "pkgconfig")


def get_library() -> str:
    """The path of libcyxla.so, the runtime that C and C++ applications link and that
    cyxla's extension module uses too."""
    return str(_installed() / "lib" / "libcyxla.so")
