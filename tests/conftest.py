"""Shared test setup: one CPU plugin per test process, loaded on first use."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


def run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs `code` in a fresh interpreter (a process loads one plugin, so tests that
    choose another plugin or settings run in their own)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


@pytest.fixture
def python_subprocess():
    return run_python
