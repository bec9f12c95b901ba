"""docs/build-systems.md: each project of the page (setuptools, CMake with scikit-build-core,
Meson with meson-python), written out from the page beside the quickstart's module, builds
as `pip install .` builds it, and the module it installs runs a program as jax.jit does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "build-systems.md"
# The module every project builds, written out in the quickstart (one home).
QUICKSTART = ROOT / "docs" / "quickstart.md"
# ```toml title="cmake/pyproject.toml": a file of one project, named by its directory.
#: Builds native code against the installed package: the same with every jax (README,
#: "Supported versions").
pytestmark = pytest.mark.builds

PROJECT_FILE = re.compile(r'^```\w+ title="([^"/]+)/([^"/]+)"\n(.*?)^```$', re.DOTALL | re.M)
MODULE = re.compile(r'^```c title="quickstart.c"\n(.*?)^```$', re.DOTALL | re.M)

# A program of the module's shape, called through it and through jax.jit.
_CHECK = """
import jax, jax.numpy as jnp, numpy as np
import cyxla as cx
import quickstart

assert quickstart.__file__.startswith({target!r}), quickstart.__file__
f = lambda x: jnp.cos(x) * 3 + 1
executable, _ = cx.compile_program(cx.lower(f, [jax.ShapeDtypeStruct((5,), jnp.float32)]))
quickstart.hold(executable.handle)
x = np.linspace(-2.0, 2.0, 5, dtype=np.float32)
y = np.frombuffer(quickstart.evaluate(x), np.float32)
np.testing.assert_allclose(y, jax.jit(f)(x), rtol=1e-6)
print("ok")
"""


def projects() -> dict[str, dict[str, str]]:
    """The page's projects: directory -> {file name: text}."""
    found: dict[str, dict[str, str]] = {}
    for directory, name, text in PROJECT_FILE.findall(PAGE.read_text()):
        assert name not in found.setdefault(directory, {}), f"{directory}/{name} shown twice"
        found[directory][name] = text
    return found


def test_the_page_shows_three_projects() -> None:
    # The extraction sees them: a change of fence style would test nothing.
    assert {directory: sorted(files) for directory, files in projects().items()} == {
        "setuptools": ["pyproject.toml", "setup.py"],
        "cmake": ["CMakeLists.txt", "pyproject.toml"],
        "meson": ["meson.build", "pyproject.toml"],
    }


@pytest.mark.parametrize("directory", ["setuptools", "cmake", "meson"])
def test_project_builds_and_runs(directory: str, tmp_path: Path) -> None:
    project = tmp_path / directory
    project.mkdir()
    for name, text in projects()[directory].items():
        (project / name).write_text(text)
    (module,) = MODULE.findall(QUICKSTART.read_text())
    (project / "quickstart.c").write_text(module)
    # `pip install .`, except that the build takes its tools and cyxla from this
    # environment (no index in the tests) and installs into a directory of its own.
    target = tmp_path / "site"
    build = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps"),
            *("--target", str(target), str(project)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    check = subprocess.run(
        [sys.executable, "-c", _CHECK.format(target=str(target))],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
        timeout=300,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.strip().endswith("ok")
