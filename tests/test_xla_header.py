"""cyxla's public headers together with XLA's own pjrt_c_api.h in one file.

XLA's header comes from the `xla-cpu-pjrt` wheel on PyPI, the smallest wheel found that
ships it (63 MB, once per checkout: only the header is kept, in pytest's cache). Without
network access these tests fail, loudly: they must not pass by skipping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

import pytest

from support import installed_header

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "native" / "with_xla_header.c"
# The wheel pinned, and where in it the header lies.
WHEEL = "xla-cpu-pjrt==0.0.1"
HEADER_IN_WHEEL = "xla_plugins/xla_cpu_pjrt/include/pjrt_c_api.h"


@pytest.fixture(scope="session")
def xla_include(request: pytest.FixtureRequest) -> Path:
    """A directory holding XLA's header as xla/pjrt/c/pjrt_c_api.h."""
    root = Path(request.config.cache.mkdir("xla_pjrt_header"))
    header = root / "xla" / "pjrt" / "c" / "pjrt_c_api.h"
    if header.is_file():
        return root
    with tempfile.TemporaryDirectory() as download:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", download, WHEEL]
        result = subprocess.run(command, capture_output=True, text=True, timeout=1200)
        assert result.returncode == 0, (
            f"cannot fetch XLA's pjrt_c_api.h: `{' '.join(command)}` failed (this test needs "
            f"PyPI):\n{result.stdout[-1500:]}\n{result.stderr[-1500:]}"
        )
        (wheel,) = Path(download).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            text = archive.read(HEADER_IN_WHEEL)
    # Written whole under another name, then renamed: a second test process (pytest-xdist)
    # finds either no header or all of it.
    header.parent.mkdir(parents=True, exist_ok=True)
    partial = header.with_name(f"{header.name}.{os.getpid()}")
    partial.write_bytes(text)
    partial.replace(header)
    return root


def _compile(xla_include: Path, language: str, xla_first: bool) -> None:
    if language == "c":
        compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        flags = ["-x", "c", "-std=c11"]
    else:
        compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
        flags = ["-x", "c++", "-std=c++20"]
    assert compiler, f"this test needs a {language} compiler"
    command = [
        compiler,
        *flags,
        "-fsyntax-only",
        "-Wall",
        "-Wextra",
        "-Werror",
        f"-I{installed_header().parents[1]}",
        f"-I{xla_include}",
        f"-I{sysconfig.get_paths()['include']}",
        *(["-DXLA_FIRST"] if xla_first else []),
        str(SOURCE),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr[-4000:]}"


def test_the_fetched_header_is_xlas(xla_include: Path) -> None:
    text = (xla_include / "xla" / "pjrt" / "c" / "pjrt_c_api.h").read_text()
    assert "#ifndef XLA_PJRT_C_PJRT_C_API_H_" in text
    assert "PJRT_Buffer_Type_F32" in text


@pytest.mark.parametrize("language", ["c", "c++"])
@pytest.mark.parametrize("xla_first", [True, False], ids=["xla-first", "cyxla-first"])
def test_public_headers_compile_with_xlas(
    xla_include: Path, language: str, xla_first: bool
) -> None:
    _compile(xla_include, language, xla_first)
