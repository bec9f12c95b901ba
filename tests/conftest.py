"""Shared test setup: one CPU plugin per test process, loaded on first use."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

import cyxla as cx


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


def run_cyxla(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs `python -m cyxla ARGS` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "cyxla", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


_STEPS_PRELUDE = """
import json
from pathlib import Path

import jax
import numpy as np

import cyxla as cx


def attempt(step):
    try:
        value = step()
    except Exception as error:
        print(json.dumps([type(error).__name__, str(error)]))
    else:
        print(json.dumps(["ok", str(value)]))
"""


def run_steps(code: str, env: dict[str, str] | None = None) -> list[list[str]]:
    """Runs `code` in a fresh interpreter, where `attempt(step)` prints one JSON line per
    step it tries: ["ok", str(result)] or [exception type name, message]."""
    result = run_python(_STEPS_PRELUDE + textwrap.dedent(code), env)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


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


# ------------------------------------------------------------------ the installed package


def plugin_library() -> str:
    """The CPU plugin's library, as cyxla finds it."""
    from cyxla import _plugins

    return _plugins.entry_for("cpu").library_path()


def installed_header() -> Path:
    """The element-type header installed with the package under test (not the source
    tree's): the one piece of the PJRT C API that cyxla's public headers declare."""
    return Path(cx.__file__).resolve().parent / "include" / "cyxla" / "element_type.h"


def private_pjrt_header() -> Path:
    """cyxla's own PJRT declarations, private to the source tree (never installed)."""
    return Path(__file__).resolve().parents[1] / "src" / "pjrt" / "pjrt_c_api.h"


def compile_c(
    source: Path, output: Path, *, shared: bool = False, defines: dict[str, str] | None = None
) -> Path:
    """Compiles `source` with the system C compiler against cyxla's installed headers and
    its private PJRT declarations ("pjrt/pjrt_c_api.h")."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    assert compiler, "the tests need a C compiler (cc) to build their probes"
    include = installed_header().parents[1]
    private = private_pjrt_header().parents[1]
    command = [compiler, "-std=c11", "-O0", "-Wall", "-Werror", f"-I{include}", f"-I{private}"]
    command += [f"-D{name}={value}" for name, value in (defines or {}).items()]
    command += [str(source), *(["-shared", "-fPIC"] if shared else ["-ldl"]), "-o", str(output)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stderr}"
    return output


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


@contextlib.contextmanager
def x64_mode(enabled: bool) -> Iterator[None]:
    """jax_enable_x64 set to `enabled` inside the block, restored after it."""
    before = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", enabled)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", before)


@pytest.fixture
def x64() -> Iterator[None]:
    """Turns on jax_enable_x64 for one test, and restores the setting after it."""
    with x64_mode(True):
        yield


# ------------------------------------------------------------------ lowering helpers


def spec(shape: Sequence[int], dtype: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(tuple(shape), np.dtype(dtype))


def specs_of(args: Sequence[Any]) -> list[Any]:
    """ShapeDtypeStructs (in the same pytree) for concrete arguments."""
    return [jax.tree.map(lambda a: spec(np.shape(a), np.asarray(a).dtype), arg) for arg in args]


def compile_fn(fn: Callable[..., Any], args: Sequence[Any]) -> cx.Executable:
    """Lowers `fn` for `args` (shapes and dtypes, or pytrees of them) and compiles it."""
    program = cx.lower(fn, args)
    executable, _ = cx.compile_program(program)
    return executable
