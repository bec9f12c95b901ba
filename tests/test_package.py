"""The distribution: its metadata and the package agree on what is written once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import cyxla as cx
from cyxla import _benchmark, _core

from support import compile_c, installed_header


def test_the_version_is_written_once() -> None:
    """pyproject.toml reads the version from cyxla/_version.py: metadata and cyxla agree."""
    from importlib import metadata

    assert metadata.version("cyxla") == cx.__version__
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and "\nversion =" not in pyproject


@pytest.mark.skipif(sys.version_info < (3, 12), reason="the stable ABI is used from 3.12 on")
def test_the_extension_modules_use_the_stable_abi() -> None:
    """The wheel is tagged cp312-abi3 (pyproject.toml): its modules must be the stable
    ABI's, which every later Python loads, not ones named for this Python alone."""
    for module in (_core, _benchmark):
        assert Path(module.__file__).name.endswith(".abi3.so"), module.__file__


def test_c_sources_build_against_the_headers_get_include_names(tmp_path: Path) -> None:
    """The public headers lie where `cx.get_include()` says, beside the built modules. In
    the README's editable install those are in site-packages while `cyxla/__init__.py` is
    the source tree's, so a path taken from `cx.__file__` finds no headers: the tests' C
    helpers, which also include the private PJRT declarations of src/, compiled there."""
    include = Path(cx.get_include()[0])
    assert (include / "cyxla" / "element_type.h").is_file()
    assert installed_header().parents[1] == include
    source = tmp_path / "both.c"
    source.write_text(
        '#include "cyxla/cyxla.h"\n#include "pjrt/pjrt_c_api.h"\n'
        "int main(void) { return (int)sizeof(PJRT_Api) == 0; }\n"
    )
    compile_c(source, tmp_path / "both")


#: What a test build adds (src/python/bind_testing.cpp and bind_compiled.cpp, the store's
#: seams in src/cache/store.hpp).
_TEST_HOOK_NAMES = (
    b"set_store_seams",
    b"execute_exact",
    b"writes_in_place",
    b"wire_fields",
    b"7testing5seams",
)


def test_a_wheel_carries_no_test_hooks() -> None:
    """The test hooks are built in only with CMake's CYXLA_TESTING: a wheel for users has
    no `_core._testing`, and neither its module nor libcyxla holds their names (the
    mangled name of the store's seams among them). CI's wheel pairing runs this."""
    if hasattr(_core, "_testing"):
        pytest.skip("a test build (CYXLA_TESTING=ON) carries the hooks by design")
    for library in (Path(_core.__file__), Path(cx.get_library())):
        data = library.read_bytes()
        assert [name for name in _TEST_HOOK_NAMES if name in data] == [], library


def test_a_test_build_names_its_hooks() -> None:
    """The names the check above looks for are those a test build carries, so the check
    would see them (the check's own oracle, run where the hooks are built in)."""
    if not hasattr(_core, "_testing"):
        pytest.skip("a wheel's build (CYXLA_TESTING=OFF) has no hooks to find")
    module = Path(_core.__file__).read_bytes()
    library = Path(cx.get_library()).read_bytes()
    assert [name for name in _TEST_HOOK_NAMES if name not in module + library] == []
