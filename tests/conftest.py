"""Shared test setup: one CPU plugin per test process, loaded on first use. Only fixtures
and hooks live here; the helpers that tests share live in support.py."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import subprocess
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import cyxla as cx
from cyxla import _core
from cyxla._cache import store

from support import (
    F32,
    NATIVE_SOURCES,
    compile_c,
    compile_cxx,
    run_python,
    set_outputs,
    x64_mode,
)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Where CI tests an installed wheel (CYXLA_TEST_INSTALLED_IN names its environment),
    the tests must import that cyxla, not the source tree's."""
    environment = os.environ.get("CYXLA_TEST_INSTALLED_IN")
    imported = Path(cx.__file__).resolve()
    if environment and not imported.is_relative_to(Path(environment).resolve()):
        raise pytest.UsageError(f"the tests import cyxla from {imported}, not from {environment}")


# ------------------------------------------------------------------ test processes


@contextlib.contextmanager
def _share_of_the_machine(directory: Path, alone: bool) -> Iterator[None]:
    """Held while a test runs in one of pytest-xdist's processes: shared by the tests that
    may run beside others, whole for a test that runs alone. A test waiting to run alone
    holds the turnstile, so that the others let it in instead of taking turns past it."""
    with (
        open(directory / "turnstile.lock", "a") as turnstile,
        open(directory / "tests.lock", "a") as tests,
    ):
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(tests, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(tests, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def _alone_when_marked(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """A test marked `alone` runs while no other test process runs a test. Its threads
    race the clock (a call held in flight for a sleep's length): on a machine whose cores
    are all running other tests, a thread may not start in time."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    # Every worker's base directory lies in the run's own: its parent is the run's.
    shared = tmp_path_factory.getbasetemp().parent
    with _share_of_the_machine(shared, request.node.get_closest_marker("alone") is not None):
        yield


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


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty disk cache of this test's own (not created yet), which children inherit,
    with the default size bound. (It replaces pytest's own `cache` fixture.)"""
    directory = tmp_path / "cache"
    monkeypatch.setenv(store.CACHE_ENVIRONMENT_VARIABLE, str(directory))
    monkeypatch.delenv(store.MAX_BYTES_ENVIRONMENT_VARIABLE, raising=False)
    yield directory
    for path in [directory, *directory.rglob("*")]:  # let tmp_path's cleanup remove all
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o700)


@pytest.fixture
def no_stray_cache_warnings() -> Iterator[None]:
    """Cache warnings are expected only where a test asks for them with pytest.warns."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="cyxla cache")
        yield


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


# ------------------------------------------------------------------ the scripted plugin


@pytest.fixture(scope="session")
def scripted(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[_core.Plugin, ctypes.CDLL]]:
    source = Path(__file__).parent / "native" / "scripted_plugin.c"
    library = compile_c(source, tmp_path_factory.mktemp("scripted") / "libscripted.so", shared=True)
    control = ctypes.CDLL(str(library))
    control.fake_calls.restype = ctypes.c_long
    control.fake_destroyed_errors.restype = ctypes.c_long
    control.fake_options_seen.restype = ctypes.c_char_p
    plugin = _core.Plugin.load(str(library))
    yield plugin, control
    control.fake_fail(b"")


@pytest.fixture
def control(scripted: tuple[_core.Plugin, ctypes.CDLL]) -> Iterator[ctypes.CDLL]:
    """The script, reset after each test: nothing fails (and a failure says "scripted
    failure of ..."), platform "fake", one device, programs with one f32[3] output."""
    lib = scripted[1]
    yield lib
    lib.fake_fail(b"")
    lib.fake_error_text(b"")
    lib.fake_null_fingerprint(0)
    lib.fake_platform(b"fake")
    lib.fake_devices(1)
    set_outputs(lib, [F32], [[3]])


# ------------------------------------------------------------------ custom calls


@pytest.fixture(scope="session")
def handler_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/native/handlers.cc built into a shared library."""
    output = tmp_path_factory.mktemp("ffi_handler") / "libcyxla_test_handlers.so"
    result = compile_cxx(
        NATIVE_SOURCES / "handlers.cc", "-O1", "-shared", "-fPIC", "-o", str(output)
    )
    assert result.returncode == 0, result.stderr
    return output


# ------------------------------------------------------------------ x64


@pytest.fixture
def x64() -> Iterator[None]:
    """Turns on jax_enable_x64 for one test, and restores the setting after it."""
    with x64_mode(True):
        yield


# ------------------------------------------------------------------ executables


@pytest.fixture(scope="module")
def sin_executable() -> cx.Executable:
    program = cx.lower(jnp.sin, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    return cx.compile_program(program)[0]
