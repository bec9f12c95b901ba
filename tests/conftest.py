"""Shared test setup: one CPU plugin per test process, loaded on first use. Only fixtures
and hooks live here; the helpers that tests share live in support.py."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support import compile_c, run_python, x64_mode


@pytest.fixture
def python_subprocess() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_python


@pytest.fixture(autouse=True, scope="session")
def _no_plugin_choice_from_the_environment() -> Iterator[None]:
    """Tests and their subprocesses choose no plugin through the environment: the tests
    that need CYXLA_PJRT_PLUGIN or CYXLA_PLATFORM set them themselves."""
    names = ("CYXLA_PJRT_PLUGIN", "CYXLA_PLATFORM")
    saved = {name: os.environ.pop(name, None) for name in names}
    yield
    for name, value in saved.items():
        if value is not None:
            os.environ[name] = value


# ------------------------------------------------------------------ disk cache


@pytest.fixture(autouse=True, scope="session")
def _private_cache_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The suite and its subprocesses cache in a directory of their own, never in the
    user's ~/.cache; tests of the cache point CYXLA_CACHE_DIR elsewhere themselves."""
    saved = os.environ.get("CYXLA_CACHE_DIR")
    os.environ["CYXLA_CACHE_DIR"] = str(tmp_path_factory.mktemp("cyxla-cache"))
    yield
    if saved is None:
        os.environ.pop("CYXLA_CACHE_DIR", None)
    else:
        os.environ["CYXLA_CACHE_DIR"] = saved


# ------------------------------------------------------------------ fake plugins


@pytest.fixture(scope="session")
def fake_plugin(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Builds (once per arguments) a fake plugin whose GetPjrtApi reports `major.minor`,
    a table of `struct_size` bytes (default: our full PJRT_Api), or no table at all."""
    directory = tmp_path_factory.mktemp("fake_plugins")
    source = Path(__file__).parent / "native" / "table_only_plugin.c"
    built: dict[tuple[int, int, str, bool], Path] = {}

    def build(
        major: int, minor: int, *, struct_size: int | None = None, null_api: bool = False
    ) -> Path:
        size = "sizeof(PJRT_Api)" if struct_size is None else str(struct_size)
        key = (major, minor, size, null_api)
        if key not in built:
            name = f"libfake_pjrt_{major}_{minor}_{len(built)}.so"
            defines = {
                "FAKE_MAJOR": str(major),
                "FAKE_MINOR": str(minor),
                "FAKE_STRUCT_SIZE": size,
                "FAKE_NULL_API": "1" if null_api else "0",
            }
            built[key] = compile_c(source, directory / name, shared=True, defines=defines)
        return built[key]

    return build


# ------------------------------------------------------------------ x64


@pytest.fixture
def x64() -> Iterator[None]:
    """Turns on jax_enable_x64 for one test, and restores the setting after it."""
    with x64_mode(True):
        yield
