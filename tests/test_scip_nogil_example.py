"""examples/scip_nogil, the SCIP constraint handler in Cython with no Python in the loop,
builds against the installed cyxla and PySCIPOpt's SCIP, and its tests pass: the guide's
optimum and a larger problem's, against the guide's Python handler and enumeration, with
optimizeNogil alone and in threads."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import install_and_test_example

#: Builds native code against the installed package: the same with every jax (README,
#: "Supported versions").
pytestmark = pytest.mark.builds

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "scip_nogil"


def test_scip_nogil_example_builds_and_passes(tmp_path: Path) -> None:
    result = install_and_test_example(EXAMPLE, tmp_path)
    assert "6 passed" in result.stdout and "skipped" not in result.stdout  # every one ran
