"""libcyxla.so as installed: one runtime for Python and C, the C API its only public
exports, and the CMake and pkg-config files that find it."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

import cyxla as cx
from cyxla import _core

from support import Api, run_cyxla, table


def test_the_capsule_hands_out_libcyxlas_own_table() -> None:
    library = ctypes.CDLL(cx.get_library())
    library.cyxla_get_api.restype = ctypes.c_void_p
    assert library.cyxla_get_api() == ctypes.addressof(table())
    assert Api.from_address(library.cyxla_get_api()).abi_version == cx.ABI_VERSION == 2


def test_the_extension_module_links_the_installed_library() -> None:
    maps = Path("/proc/self/maps").read_text()
    libraries = {line.split()[-1] for line in maps.splitlines() if line.endswith("/libcyxla.so")}
    assert libraries == {str(Path(cx.get_library()).resolve())}
    assert Path(_core.__file__).parent / "lib" / "libcyxla.so" == Path(cx.get_library())


@pytest.mark.skipif(shutil.which("nm") is None, reason="binutils' nm is not installed")
def test_only_the_c_api_and_the_core_for_cyxlas_module_are_exported() -> None:
    result = subprocess.run(
        ["nm", "-D", "--defined-only", "--demangle", cx.get_library()],
        capture_output=True,
        text=True,
        check=True,
    )
    names = [line.split(" ", 2)[2] for line in result.stdout.splitlines()]
    c_names = [n for n in names if "::" not in n and "(" not in n]
    assert c_names == ["cyxla_get_api"]
    others = [n for n in names if n not in c_names]
    assert others and all(
        n.startswith(
            ("cyxla::", "typeinfo for cyxla::", "typeinfo name for cyxla::", "vtable for cyxla::")
        )
        for n in others
    ), [n for n in others if "cyxla::" not in n[:30]]


def test_cmake_and_pkgconfig_files_are_where_get_cmake_dir_says() -> None:
    cmake_dir = Path(cx.get_cmake_dir())
    assert (cmake_dir / "cyxlaConfig.cmake").is_file()
    assert (cmake_dir / "cyxlaConfigVersion.cmake").is_file()
    pc = Path(cx.get_pkgconfig_dir()) / "cyxla.pc"
    assert f"Version: {cx.__version__}" in pc.read_text()
    assert run_cyxla("--cmake-dir").stdout.strip() == str(cmake_dir)
    assert run_cyxla("--pkgconfig-dir").stdout.strip() == str(pc.parent)
