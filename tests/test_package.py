"""The distribution: its metadata and the package agree on what is written once."""

from __future__ import annotations

from pathlib import Path

import cyxla as cx


def test_the_version_is_written_once() -> None:
    """pyproject.toml reads the version from cyxla/_version.py: metadata and cyxla agree."""
    from importlib import metadata

    assert metadata.version("cyxla") == cx.__version__
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and "\nversion =" not in pyproject
