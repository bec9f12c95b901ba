"""The example downstream package builds against the installed cyxla and passes its tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DOWNSTREAM = Path(__file__).resolve().parents[1] / "examples" / "downstream"


def test_downstream_package_builds_and_passes(tmp_path: Path) -> None:
    target = tmp_path / "site"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-build-isolation",
            "--no-deps",
            "--target",
            str(target),
            str(DOWNSTREAM),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(DOWNSTREAM / "tests")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(target)},
        cwd=tmp_path,
        timeout=600,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert " passed" in tests.stdout and "failed" not in tests.stdout
