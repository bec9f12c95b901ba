"""examples/standalone: a C++ application (CMake, find_package) and a C program (cc and
pkg-config), built from the installed package alone, run a program exported from Python
with no Python in their process and check every result against jax.jit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cyxla as cx
from cyxla._ffi.sources import scipy_lapack

from program_file_writer import save
from support import plugin_library

#: Builds native code against the installed package: the same with every jax (README,
#: "Supported versions").
pytestmark = pytest.mark.builds

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "standalone"


def tool(*names: str) -> str:
    """A build tool: the one this environment's pip installed (the test extra), else PATH's."""
    for name in names:
        beside = Path(sys.executable).parent / name
        if beside.is_file():
            return str(beside)
    found = next((shutil.which(n) for n in names if shutil.which(n)), None)
    assert found, f"the tests need {' or '.join(names)} (pip install 'cyxla[test]')"
    return found


def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(EXAMPLE))
    try:
        import export
    finally:
        sys.path.remove(str(EXAMPLE))
    directory = tmp_path_factory.mktemp("exported")
    export.export(directory, save)
    return directory


def without_python_env() -> dict[str, str]:
    """The environment of a native application: the plugin named, nothing of Python's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return {**env, "CYXLA_PJRT_PLUGIN": plugin_library()}


def test_the_cpp_application_runs_the_exported_mlp_from_its_thread_pool(
    exported: Path, tmp_path: Path
) -> None:
    cmake = tool("cmake")
    build = tmp_path / "build"
    run([cmake, "-S", str(EXAMPLE), "-B", str(build), f"-DCMAKE_PREFIX_PATH={cx.get_cmake_dir()}"])
    run([cmake, "--build", str(build)])
    result = run([str(build / "standalone"), str(exported), "4", "2"], env=without_python_env())
    samples = (exported / "inputs.f32").stat().st_size // (16 * 64 * 4)
    assert f"checked {samples * 2} results on 4 threads, 0 differ from jax.jit" in result.stdout
    assert "libpython mapped: no" in result.stdout


_CONSUMER = """
cmake_minimum_required(VERSION 3.20)
project(consumer LANGUAGES CXX)
find_package(cyxla 0.1 CONFIG REQUIRED)
add_executable(consumer main.cpp)
target_link_libraries(consumer PRIVATE cyxla::cyxla)
"""

#: cyxla.hpp's C++20 (std::span) in a file compiled with the standard the target gives.
_CONSUMER_MAIN = """
#include <cyxla/cyxla.hpp>
#include <cstdio>
#include <span>
int main() {
  static_assert(__cplusplus >= 202002L);
  std::printf("ABI %d\\n", CYXLA_ABI_VERSION);
}
"""


def test_a_cmake_consumer_that_sets_no_standard_builds(tmp_path: Path) -> None:
    """The conventional use of a CMake package: find_package, then target_link_libraries,
    with no CMAKE_CXX_STANDARD (GCC 12 defaults to C++17, where cyxla.hpp does not build
    unless the target carries cxx_std_20)."""
    source = tmp_path / "consumer"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(_CONSUMER)
    (source / "main.cpp").write_text(_CONSUMER_MAIN)
    cmake = tool("cmake")
    build = tmp_path / "build"
    run([cmake, "-S", str(source), "-B", str(build), f"-DCMAKE_PREFIX_PATH={cx.get_cmake_dir()}"])
    run([cmake, "--build", str(build)])
    result = run([str(build / "consumer")], env=without_python_env())
    assert result.stdout.strip() == f"ABI {cx.ABI_VERSION}"


#: find_package with a version asked for: whether the installed package's version file
#: accepts it, and the version found.
_VERSION_PROBE = """
cmake_minimum_required(VERSION 3.20)
project(probe LANGUAGES NONE)
find_package(cyxla ${WANTED} CONFIG)
message(STATUS "found=${cyxla_FOUND} version=${cyxla_VERSION}")
"""


@pytest.mark.parametrize(
    ("wanted", "found"), [("0.1", True), ("0.1.0", True), ("0.2", False), ("1.0", False)]
)
def test_find_package_checks_the_version_asked_for(
    wanted: str, found: bool, tmp_path: Path
) -> None:
    """cyxlaConfigVersion.cmake: the same major and minor version (0.x makes no promise
    across minors) at least as new as the one asked for."""
    (tmp_path / "CMakeLists.txt").write_text(_VERSION_PROBE)
    result = run(
        [
            tool("cmake"),
            "-S",
            str(tmp_path),
            "-B",
            str(tmp_path / "build"),
            f"-DCMAKE_PREFIX_PATH={cx.get_cmake_dir()}",
            f"-DWANTED={wanted}",
        ]
    )
    expected = f"found=1 version={cx.__version__}" if found else "found=0 version="
    assert f"-- {expected}\n" in result.stdout


def test_pkg_config_gives_the_version() -> None:
    env = {**os.environ, "PKG_CONFIG_PATH": cx.get_pkgconfig_dir()}
    pkg_config = tool("pkg-config", "pkgconf")
    assert run([pkg_config, "--modversion", "cyxla"], env=env).stdout.strip() == cx.__version__
    run([pkg_config, "--atleast-version", "0.1", "cyxla"], env=env)
    newer = subprocess.run([pkg_config, "--atleast-version", "9.0", "cyxla"], env=env)
    assert newer.returncode != 0


def test_the_c_program_builds_with_pkg_config_and_runs(exported: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PKG_CONFIG_PATH": cx.get_pkgconfig_dir()}
    flags = run([tool("pkg-config", "pkgconf"), "--cflags", "--libs", "cyxla"], env=env)
    compiler = os.environ.get("CC") or tool("cc", "gcc")
    program = tmp_path / "run"
    source = str(EXAMPLE / "run.c")
    run(
        [
            compiler,
            "-std=c11",
            "-Wall",
            "-Werror",
            source,
            *flags.stdout.split(),
            "-lm",
            "-o",
            str(program),
        ]
    )
    files = [str(exported / name) for name in ("mlp.cyxla", "inputs.f32", "expected.f32")]
    result = run([str(program), *files], env=without_python_env())
    assert result.stdout.strip() == "0 of 1024 values differ from jax.jit"


def test_the_c_solve_runs_jnp_linalg_solve_without_python(exported: Path, tmp_path: Path) -> None:
    """A program that calls LAPACK (getrf and trsm), saved in Python, runs in a C program
    through cyxla's own handlers and the LAPACK that CYXLA_LAPACK names (SciPy's OpenBLAS
    here), equal to NumPy's solutions."""
    env = {**os.environ, "PKG_CONFIG_PATH": cx.get_pkgconfig_dir()}
    flags = run([tool("pkg-config", "pkgconf"), "--cflags", "--libs", "cyxla"], env=env)
    compiler = os.environ.get("CC") or tool("cc", "gcc")
    program = tmp_path / "solve"
    source = str(EXAMPLE / "solve.c")
    run(
        [
            compiler,
            "-std=c11",
            "-Wall",
            "-Werror",
            source,
            *flags.stdout.split(),
            "-lm",
            "-o",
            str(program),
        ]
    )
    files = [str(exported / n) for n in ("solve.cyxla", "solve_inputs.f32", "solve_expected.f32")]
    native = {**without_python_env(), "CYXLA_LAPACK": str(scipy_lapack())}
    result = run([str(program), *files], env=native)
    assert result.stdout.strip() == "0 of 128 values differ from NumPy"
    # Without a LAPACK the loader refuses the file, saying what it tried and how to get one.
    missing = {**without_python_env(), "CYXLA_LAPACK": str(tmp_path / "no-lapack.so")}
    refused = subprocess.run([str(program), *files], capture_output=True, text=True, env=missing)
    assert refused.returncode == 1
    assert "calls the LAPACK target 'lapack_sgetrf_ffi'" in refused.stderr
    assert "no-lapack.so" in refused.stderr


#: The CMake side of the deploying recipe: the run path $ORIGIN, libcyxla.so installed
#: beside the application (a C application: the package serves C projects too).
_RELOCATABLE_CMAKE = """
cmake_minimum_required(VERSION 3.20)
project(app LANGUAGES C)
find_package(cyxla 0.1 CONFIG REQUIRED)
add_executable(run run.c)
target_link_libraries(run PRIVATE cyxla::cyxla m)
set_target_properties(run PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS run DESTINATION .)
install(FILES "${cyxla_LIBRARY}" DESTINATION .)
"""


def _build_relocatable(how: str, build: Path, app: Path) -> None:
    """The application and libcyxla.so in `app`, built in `build` as the recipe says."""
    if how == "cmake":
        (build / "CMakeLists.txt").write_text(_RELOCATABLE_CMAKE)
        shutil.copy2(EXAMPLE / "run.c", build)
        cmake = tool("cmake")
        prefix = f"-DCMAKE_PREFIX_PATH={cx.get_cmake_dir()}"
        run([cmake, "-S", str(build), "-B", str(build / "out"), prefix])
        run([cmake, "--build", str(build / "out")])
        run([cmake, "--install", str(build / "out"), "--prefix", str(app)])
        return
    env = {**os.environ, "PKG_CONFIG_PATH": cx.get_pkgconfig_dir()}
    pkg_config = tool("pkg-config", "pkgconf")
    cflags = run([pkg_config, "--cflags", "cyxla"], env=env).stdout.split()
    libs = run([pkg_config, "--libs-only-L", "--libs-only-l", "cyxla"], env=env).stdout.split()
    compiler = os.environ.get("CC") or tool("cc", "gcc")
    source = str(EXAMPLE / "run.c")
    run([compiler, source, *cflags, *libs, "-Wl,-rpath,$ORIGIN", "-lm", "-o", str(build / "run")])
    app.mkdir()
    shutil.copy2(build / "run", app)
    shutil.copy2(cx.get_library(), app)


@pytest.mark.parametrize("how", ["pkg-config", "cmake"])
def test_a_moved_application_runs_from_its_own_directory(
    how: str, exported: Path, tmp_path: Path
) -> None:
    """The deploying recipe (docs/guide/standalone.md): linked with a run path of $ORIGIN,
    the application runs from a directory that holds it, libcyxla.so and the program
    files, moved there from where it was put together, with the plugin that `python -m
    cyxla plugins --path` names; nothing of the build or of the virtual environment is on
    its search path."""
    build, staged = tmp_path / "build", tmp_path / "staged"
    build.mkdir()
    _build_relocatable(how, build, staged)
    for name in ("mlp.cyxla", "inputs.f32", "expected.f32"):
        shutil.copy2(exported / name, staged)
    shutil.rmtree(build)
    app = staged.rename(tmp_path / "moved")
    dynamic = run(["readelf", "-d", str(app / "run")]).stdout
    assert "RUNPATH" in dynamic and "[$ORIGIN]" in dynamic, dynamic
    plugin = run([sys.executable, "-m", "cyxla", "plugins", "--path", "cpu"]).stdout.strip()
    assert Path(plugin) == Path(plugin_library())
    env = {k: v for k, v in without_python_env().items() if k != "LD_LIBRARY_PATH"}
    result = run(
        ["./run", "mlp.cyxla", "inputs.f32", "expected.f32"],
        env={**env, "CYXLA_PJRT_PLUGIN": plugin},
        cwd=app,
    )
    assert result.stdout.strip() == "0 of 1024 values differ from jax.jit"


def test_a_bad_file_stops_the_application_with_the_loaders_message(
    exported: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "PKG_CONFIG_PATH": cx.get_pkgconfig_dir()}
    flags = run([tool("pkg-config", "pkgconf"), "--cflags", "--libs", "cyxla"], env=env)
    program = tmp_path / "run"
    compiler = os.environ.get("CC") or tool("cc", "gcc")
    run([compiler, str(EXAMPLE / "run.c"), *flags.stdout.split(), "-lm", "-o", str(program)])
    bad = tmp_path / "bad.cyxla"
    bad.write_bytes((exported / "mlp.cyxla").read_bytes()[:-1])
    result = subprocess.run(
        [str(program), str(bad), str(exported / "inputs.f32"), str(exported / "expected.f32")],
        capture_output=True,
        text=True,
        env=without_python_env(),
    )
    assert result.returncode == 1
    assert "load_program: " in result.stderr and "truncated" in result.stderr
