"""The distribution: its metadata and the package agree on what is written once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import cyxla as cx
from cyxla import _benchmark, _core


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
