"""The example downstream package builds against the installed cyxla and passes its tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import install_and_test_example

#: Builds native code against the installed package: the same with every jax (README,
#: "Supported versions").
pytestmark = pytest.mark.builds

DOWNSTREAM = Path(__file__).resolve().parents[1] / "examples" / "downstream"


def test_downstream_package_builds_and_passes(tmp_path: Path) -> None:
    install_and_test_example(DOWNSTREAM, tmp_path)
