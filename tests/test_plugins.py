"""Finding, choosing and loading plugins: discovery, `initialize`, the environment
variables, entry points of other packages, the core's client of a plugin (against
tests/native/scripted_plugin.c), and `python -m cyxla`.

A process loads one plugin, so every test that decides how the plugin is loaded runs in
a fresh interpreter. The PJRT version the plugin reports is read independently with
ctypes, straight from the table its GetPjrtApi returns.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

import cyxla as cx
from cyxla import _core, _platforms
from cyxla._cli import plugins as cli_plugins
from cyxla._run import backend as _backend
from cyxla._run import plugin_scans as scans
from cyxla._run import plugins as _plugins
from cyxla.plugins import cpu, cuda12, cuda13, rocm7, tpu

from support import F32, compile_c, plugin_library, run_cyxla, run_python, run_steps, runtime

CPU_DEFAULTS = {"cpu_device_count": 1, "asynchronous": False}


def plugin_version(path: str) -> tuple[int, int]:
    """The PJRT API version in the plugin's table, read without cyxla.

    PJRT_Api starts with struct_size and extension_start, then PJRT_Api_Version:
    struct_size, extension_start, major_version and minor_version (two ints).
    """
    library = ctypes.CDLL(path)
    library.GetPjrtApi.restype = ctypes.c_void_p
    table = library.GetPjrtApi()
    assert table
    words = ctypes.sizeof(ctypes.c_void_p)
    major = ctypes.c_int.from_address(table + 4 * words).value
    minor = ctypes.c_int.from_address(table + 4 * words + ctypes.sizeof(ctypes.c_int)).value
    return major, minor


@pytest.fixture(scope="module")
def library() -> str:
    return plugin_library()


# ------------------------------------------------------------------------ discovery


def test_discovery_finds_the_cpu_plugin(library: str) -> None:
    entries = {entry.name: entry for entry in _plugins.discover()}
    assert {"cpu", "cuda12", "cuda13", "rocm7", "tpu"} <= set(entries)
    cpu = entries["cpu"]
    assert cpu.platform == "cpu" and cpu.extra == "cpu"
    assert dict(cpu.create_options) == CPU_DEFAULTS
    assert Path(library).is_file()
    assert Path(library).name == "pjrt_c_api_cpu_plugin.so"
    assert _plugins.entry_for("cpu") == _plugins.entry_for("host") == cpu
    assert _plugins.installed_platforms()[0] == "cpu"


def test_the_platforms_come_from_the_cores_table() -> None:
    """cyxla's own plugin entries have the client options of the core's one table of
    platforms (which C's cyxla_open_runtime applies too), and Python's names are its."""
    entries = {entry.name: entry for entry in _plugins.discover()}
    gpu_defaults = {"preallocate": False}
    expected = {"cpu": CPU_DEFAULTS, "cuda12": gpu_defaults, "cuda13": gpu_defaults}
    expected |= {"rocm7": gpu_defaults, "tpu": {}}
    assert {name: dict(entries[name].create_options) for name in expected} == expected
    assert _platforms.PLATFORM_ORDER == ("cpu", "cuda", "rocm", "tpu")
    assert dict(_platforms.XLA_PLATFORMS) == {"cpu": "Host", "cuda": "CUDA", "rocm": "ROCM"}
    assert [_platforms.normalize_platform(n) for n in (" Host", "GPU", "rocm", "x")] == [
        "cpu",
        "cuda",
        "rocm",
        "x",
    ]


def test_a_plugin_that_is_not_installed() -> None:
    cuda = next(e for e in _plugins.discover() if e.name == "cuda12")
    if cuda.is_installed():
        pytest.fail("this check expects a machine without jax-cuda12-pjrt")
    with pytest.raises(cx.PluginNotFoundError) as caught:
        cuda.library_path()
    assert "pip install 'cyxla[cuda12]'" in str(caught.value)


def test_plugin_version_matches_its_table(library: str) -> None:
    version = plugin_version(library)
    plugin = _plugins.load_library(library)
    assert plugin.version == version
    assert plugin.path == str(Path(library).resolve())
    assert version[0] == _core.PJRT_API_MAJOR and version[1] >= _core.OLDEST_PJRT_API_MINOR
    attributes = plugin.attributes
    assert {"xla_version", "stablehlo_current_version", "stablehlo_minimum_version"} <= set(
        attributes
    )
    # Loading twice gives the one plugin object: a plugin is initialized once per process.
    assert _plugins.load_library(Path(library)) is plugin


def _package(
    monkeypatch: pytest.MonkeyPatch, name: str, directory: Path, **attributes: Any
) -> None:
    """A stand-in for an installed package `name` whose files lie in `directory`."""
    module = types.ModuleType(name)
    module.__file__ = str(directory / "__init__.py")
    for key, value in attributes.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)


@pytest.mark.parametrize(
    ("entry", "package", "library"),
    [
        (cuda12, "xla_cuda12", "xla_cuda_plugin.so"),
        (cuda13, "xla_cuda13", "xla_cuda_plugin.so"),
        (rocm7, "xla_rocm7", "xla_rocm_plugin.so"),
    ],
)
def test_jax_plugin_packages_are_found_and_prepared(
    entry: Any, package: str, library: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    preloaded: list[str] = []
    _package(
        monkeypatch,
        f"jax_plugins.{package}",
        tmp_path,
        _load_nvidia_libraries=lambda: preloaded.append(package),
    )
    with pytest.raises(
        FileNotFoundError, match=f"missing from the installed jax_plugins.{package}"
    ):
        entry.library_path()
    (tmp_path / library).write_bytes(b"")
    assert entry.library_path() == str((tmp_path / library).resolve())
    assert preloaded == ([] if entry is rocm7 else [package])


def test_a_jax_plugin_package_without_its_preloader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _package(monkeypatch, "jax_plugins.xla_cuda12", tmp_path)
    (tmp_path / "xla_cuda_plugin.so").write_bytes(b"")
    assert cuda12.library_path().endswith("xla_cuda_plugin.so")


def test_tpu_and_cpu_libraries_that_are_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = tmp_path / "libtpu.so"
    _package(monkeypatch, "libtpu", tmp_path, get_library_path=lambda: str(library))
    with pytest.raises(FileNotFoundError, match="missing from the installed libtpu"):
        tpu.library_path()
    library.write_bytes(b"")
    assert tpu.library_path() == str(library)
    _package(monkeypatch, "lammps_jax_pjrt_cpu", tmp_path, PLUGIN_PATH=tmp_path / "none.so")
    with pytest.raises(FileNotFoundError, match="missing from the installed lammps-jax-pjrt-cpu"):
        cpu.library_path()


# ------------------------------------------------------------------------ initialize


def test_the_process_plugin(library: str) -> None:
    """However this test process loaded its plugin, it is the CPU one with its defaults."""
    cx.compile_program(cx.lower(lambda x: x, [np.zeros(1, np.float32)]))
    loaded = _backend.loaded()
    assert loaded is not None
    assert loaded.platform == "cpu"
    assert loaded.library == str(Path(library).resolve())
    assert dict(loaded.options) == CPU_DEFAULTS
    assert loaded.pjrt_version == plugin_version(library)
    assert loaded.runtime.platform == "cpu"
    assert loaded.runtime.device_count == 1
    assert loaded.runtime.host_is_device
    assert cx.initialize(platform="cpu") is loaded
    assert cx.initialize() is loaded


def test_initialize_then_other_options_is_refused(library: str) -> None:
    steps = run_steps(
        """
        attempt(lambda: cx.initialize(platform="cpu").options)
        attempt(lambda: cx.initialize(platform="cpu", options={"cpu_device_count": 2}))
        attempt(lambda: cx.initialize(platform="cuda"))
        attempt(lambda: cx.initialize(platform="cpu", options={"asynchronous": False}).options)
        attempt(lambda: cx._run.backend.loaded().runtime.device_count)
        """
    )
    assert steps[0] == ["ok", str(CPU_DEFAULTS)]
    kind, message = steps[1]
    assert kind == "PluginError"
    assert "a plugin is already loaded (cpu" in message
    assert "'cpu_device_count': 1" in message and "'cpu_device_count': 2" in message
    assert "call cyxla.initialize before the first compile_program" in message
    # Another platform is no better; the same options again are fine.
    assert steps[2][0] in ("PluginError", "PluginNotFoundError")
    assert steps[3] == ["ok", str(CPU_DEFAULTS)]
    assert steps[4] == ["ok", "1"]


def test_initialize_options_before_first_use() -> None:
    steps = run_steps(
        """
        loaded = cx.initialize(platform="cpu", options={"cpu_device_count": 3})
        attempt(lambda: dict(loaded.options))
        attempt(lambda: loaded.runtime.device_count)
        program = cx.lower(lambda x: x * 2, [np.zeros(3, np.float32)])
        executable, _ = cx.compile_program(program)  # compiles with the chosen client
        attempt(lambda: executable.run([np.arange(3.0)])[0].tolist())
        attempt(lambda: cx._run.backend.loaded() is loaded)
        """
    )
    assert steps == [
        ["ok", "{'cpu_device_count': 3, 'asynchronous': False}"],
        ["ok", "3"],
        ["ok", "[0.0, 2.0, 4.0]"],
        ["ok", "True"],
    ]


def test_an_option_of_none_removes_a_default() -> None:
    steps = run_steps(
        """
        attempt(lambda: cx.initialize(platform="cpu", options={"asynchronous": None}).options)
        """
    )
    assert steps == [["ok", "{'cpu_device_count': 1}"]]


def test_initialize_with_a_library_path(library: str) -> None:
    steps = run_steps(
        f"""
        loaded = cx.initialize(Path({library!r}), platform="cpu")
        attempt(lambda: (loaded.platform, loaded.library, dict(loaded.options)))
        attempt(lambda: loaded.pjrt_version)
        program = cx.lower(lambda x: x + 1, [np.zeros(2, np.int32)])
        attempt(lambda: program.platform)
        attempt(lambda: cx.compile_program(program)[0].run([np.array([1, 2])])[0].tolist())
        """
    )
    resolved = str(Path(library).resolve())
    assert steps[0] == ["ok", str(("cpu", resolved, CPU_DEFAULTS))]
    assert steps[1] == ["ok", str(plugin_version(library))]
    assert steps[2:] == [["ok", "cpu"], ["ok", "[2, 3]"]]


def test_initialize_with_a_plugin_of_another_platform(library: str) -> None:
    """The library is the CPU plugin, but the caller asked for cuda. (The cuda defaults
    are removed: the CPU client would refuse them before the platform is compared.)"""
    steps = run_steps(
        f"""
        attempt(lambda: cx.initialize({library!r}, platform="cuda",
                                      options={{"preallocate": None}}))
        attempt(lambda: cx._run.backend.loaded())
        """
    )
    kind, message = steps[0]
    assert kind == "PluginError"
    resolved = Path(library).resolve()
    assert message == f"the plugin {resolved} provides the platform 'cpu', not 'cuda'"
    assert steps[1] == ["ok", "None"]


# ------------------------------------------------------------------------ the core's client


def test_a_plugin_without_error_functions_is_refused_at_load(tmp_path: Path) -> None:
    # Its Initialize fails with an error that only the absent PJRT_Error_Message could
    # read: cyxla refuses the table before calling anything (once, it crashed).
    source = Path(__file__).parent / "native" / "scripted_plugin.c"
    library = compile_c(
        source, tmp_path / "libno_errors.so", shared=True, defines={"SCRIPTED_NO_ERROR_SLOTS": "1"}
    )
    env = {"CYXLA_PJRT_PLUGIN": str(library)}
    steps = run_steps("attempt(lambda: cx.initialize())", env)
    assert steps[0][0] == "PluginLoadError", steps
    assert str(library) in steps[0][1] and "PJRT_Error_Message" in steps[0][1]
    result = run_cyxla("plugins", env=env)
    assert result.returncode == 0, result.stderr
    assert "not loadable: PluginLoadError: " in result.stdout


def test_attributes_of_every_type(scripted: tuple[_core.Plugin, ctypes.CDLL]) -> None:
    assert scripted[0].attributes == {
        "name": "scripted",
        "count": 7,
        "list": [1, 2, 3],
        "ratio": 1.5,
        "flag": True,
    }


def test_client_options_of_every_type_reach_the_plugin(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    options = {"s": "text", "i": 4, "l": [5, 6], "f": 0.25, "b": True}
    client = _core.Runtime.create(scripted[0], options)
    assert control.fake_options_seen().decode().split() == [
        "s=str:text",
        "i=int:4",
        "l=list:2:6",
        "f=float:0.25",
        "b=bool:1",
    ]
    assert (client.platform, client.platform_version, client.device_count) == (
        "fake",
        "scripted 1.0",
        1,
    )
    assert not client.host_is_device


def test_platform_name_is_lower_cased_and_cpu_is_host(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    client = runtime(scripted, b"CPU")
    assert client.platform == "cpu" and client.host_is_device


def test_client_without_devices(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    control.fake_devices(0)
    with pytest.raises(cx.PjrtError) as caught:
        runtime(scripted)
    assert str(caught.value) == (f"the fake client of {scripted[0].path} has no addressable device")


def test_client_create_error_carries_the_message(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    control.fake_fail(b"PJRT_Client_Create")
    before = control.fake_destroyed_errors()
    with pytest.raises(cx.PjrtError) as caught:
        runtime(scripted)
    assert str(caught.value) == (
        "PJRT_Client_Create failed: scripted failure of PJRT_Client_Create"
    )
    assert control.fake_destroyed_errors() - before == 1  # the plugin's error is destroyed


def test_a_runtime_destroys_its_client(
    scripted: tuple[_core.Plugin, ctypes.CDLL], control: ctypes.CDLL
) -> None:
    before = control.fake_calls(b"PJRT_Client_Destroy")
    client = runtime(scripted)
    client.compile(b"x", b"", [(F32, [3])])  # an executable holds its runtime ...
    assert control.fake_calls(b"PJRT_Client_Destroy") == before
    del client
    gc.collect()  # ... until both are gone
    assert control.fake_calls(b"PJRT_Client_Destroy") == before + 1


# ------------------------------------------------------------------------ environment


def test_cyxla_pjrt_plugin_variable(library: str) -> None:
    steps = run_steps(
        """
        program = cx.lower(lambda x: x * 3, [np.zeros(2, np.float32)])  # loads the plugin
        attempt(lambda: program.platform)
        attempt(lambda: (cx._run.backend.loaded().platform, cx._run.backend.loaded().library))
        attempt(lambda: cx.compile_program(program)[0].run([np.ones(2)])[0].tolist())
        attempt(lambda: cx.initialize() is cx._run.backend.loaded())
        """,
        {"CYXLA_PJRT_PLUGIN": library},
    )
    assert steps == [
        ["ok", "cpu"],
        ["ok", str(("cpu", str(Path(library).resolve())))],
        ["ok", "[3.0, 3.0]"],
        ["ok", "True"],
    ]


def test_cyxla_pjrt_plugin_variable_with_a_bad_library(
    fake_plugin: Callable[..., Path],
) -> None:
    path = fake_plugin(0, 50)
    steps = run_steps("attempt(lambda: cx.initialize())", {"CYXLA_PJRT_PLUGIN": str(path)})
    assert steps[0][0] == "PluginVersionError"
    assert str(path) in steps[0][1] and "0.50" in steps[0][1]


@pytest.mark.parametrize("value", ["cpu", "HOST"])
def test_cyxla_platform_variable(value: str) -> None:
    steps = run_steps(
        """
        attempt(lambda: cx.lower(lambda x: x, [np.zeros(1)]).platform)
        attempt(lambda: (cx.initialize().platform, dict(cx.initialize().options)))
        """,
        {"CYXLA_PLATFORM": value},
    )
    assert steps == [["ok", "cpu"], ["ok", str(("cpu", CPU_DEFAULTS))]]


def test_cyxla_platform_variable_for_a_missing_plugin() -> None:
    steps = run_steps(
        """
        attempt(lambda: cx.initialize())
        attempt(lambda: cx.lower(lambda x: x, [np.zeros(1)]))
        attempt(lambda: cx.initialize(platform="cpu").platform)  # an explicit choice wins
        """,
        {"CYXLA_PLATFORM": "cuda"},
    )
    for kind, message in steps[:2]:
        assert kind == "PluginNotFoundError"
        assert "no cuda plugin is installed" in message and "cyxla[cuda12]" in message
    assert steps[2] == ["ok", "cpu"]


# ------------------------------------------------------------------------ lowering's choice


def test_lower_follows_jax_device_choices() -> None:
    cpu = jax.devices("cpu")[0]
    committed = jax.device_put(np.zeros(2, np.float32), cpu)
    assert cx.lower(lambda x: x, [committed]).platform == "cpu"
    with jax.default_device(cpu):
        assert cx.lower(lambda x: x, [np.zeros(2, np.float32)]).platform == "cpu"


def test_lower_follows_jax_platforms() -> None:
    """Before any plugin is loaded, the first entry of jax_platforms decides."""
    steps = run_steps(
        """
        attempt(lambda: cx.lower(lambda x: x, [np.zeros(1)]).platform)
        attempt(lambda: cx._run.backend.loaded())
        """,
        {"JAX_PLATFORMS": "cpu"},
    )
    assert steps == [["ok", "cpu"], ["ok", "None"]]


# ------------------------------------------------------------------------ entry points


def test_a_plugin_from_another_package(tmp_path: Path, library: str) -> None:
    """A package that declares a `cyxla.plugins` entry point is found and preferred over
    the built-in entry of its platform (newest name first), with its own options."""
    (tmp_path / "other_cpu_plugin.py").write_text(
        textwrap.dedent(
            f"""
            PLATFORM = "host"
            CREATE_OPTIONS = {{"cpu_device_count": 2, "asynchronous": False}}
            EXTRA = "other"

            def library_path():
                return {library!r}
            """
        )
    )
    info = tmp_path / "other_cpu_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: other-cpu-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[cyxla.plugins]\nzz_cpu = other_cpu_plugin\n")
    steps = run_steps(
        """
        entries = {e.name: e for e in cx._run.plugins.discover()}
        attempt(lambda: (entries["zz_cpu"].platform, entries["zz_cpu"].extra))
        attempt(lambda: cx._run.plugins.entry_for("cpu").name)
        attempt(lambda: dict(cx.initialize(platform="cpu").options))
        attempt(lambda: cx._run.backend.loaded().runtime.device_count)
        """,
        {"PYTHONPATH": str(tmp_path)},
    )
    assert steps == [
        ["ok", str(("cpu", "other"))],
        ["ok", "zz_cpu"],
        ["ok", "{'cpu_device_count': 2, 'asynchronous': False}"],
        ["ok", "2"],
    ]


def test_a_kept_scan_naming_a_removed_plugin_scans_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin's module removed without its distribution's directory changing (so the
    kept scan still names it): the scan runs again, and what it finds is kept instead."""
    monkeypatch.setenv(cx.CACHE_ENVIRONMENT_VARIABLE, str(tmp_path / "cache"))
    document = scans.source(_plugins.ENTRY_POINT_GROUP)
    scans.store_points(document, [("gone", "cyxla_test_no_such_plugin_module")])
    _plugins._scan.cache_clear()
    try:
        found = {entry.name: entry.platform for entry in _plugins.discover()}
    finally:
        _plugins._scan.cache_clear()  # the next use scans the real environment
    assert "gone" not in found and found["cpu"] == "cpu"
    kept = scans.load(document)
    assert kept is not None and ("cpu", "cyxla.plugins.cpu") in kept
    assert all(name != "gone" for name, _ in kept)


# ------------------------------------------------------------------------ python -m cyxla


def test_cli_lists_the_cpu_plugin_as_loadable(library: str) -> None:
    result = run_cyxla()
    assert result.returncode == 0, result.stderr
    major, minor = plugin_version(library)
    lines = result.stdout.splitlines()
    at = lines.index("cpu (cpu)")
    assert lines[at + 1] == f"  library: {library}"
    assert lines[at + 2].startswith(f"  loadable: PJRT {major}.{minor}, xla_version ")
    assert "StableHLO " in lines[at + 2]
    assert "cuda12 (cuda)" in lines
    assert "  not installed: pip install 'cyxla[cuda12]'" in lines
    # Installed plugins come first, the ones that are not after them.
    assert lines[1] != "  library: -" and at < lines.index("cuda12 (cuda)")
    # The explicit command prints the same.
    explicit = run_cyxla("plugins")
    assert explicit.returncode == 0 and explicit.stdout == result.stdout


def test_readme_shows_the_listing_as_it_is() -> None:
    """README's sample of `python -m cyxla`: the CPU plugin's block, line by line (its
    values elided or of the CI's pairing), then a block of a plugin that is not
    installed, as the command prints them, in that order."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    start = readme.index("`python -m cyxla` lists what it finds")
    opening = readme.index("\n```\n", start) + len("\n```\n")
    sample = readme[opening : readme.index("\n```", opening)].splitlines()
    lines = run_cyxla().stdout.splitlines()
    at = lines.index("cpu (cpu)")
    assert sample[0] == "cpu (cpu)"
    for shown, printed in zip(sample[1:5], lines[at + 1 : at + 5], strict=True):
        label = shown.split(":")[0]
        # The fit with jaxlib: the sample's pairing is in step; jax 0.12's is usable.
        if label == "  in step with jaxlib" and printed.startswith("  usable with a newer"):
            continue
        assert label.startswith("  ") and printed.startswith(label + ":"), (shown, printed)
    assert sample[5:8] == ["tpu (tpu)", "  library: -", "  not installed: pip install 'cyxla[tpu]'"]
    tpu = lines.index("tpu (tpu)")
    assert at < tpu and lines[tpu + 1 : tpu + 3] == sample[6:8]


def test_plugins_command_names_the_loaded_plugin(capsys: pytest.CaptureFixture[str]) -> None:
    loaded = cx.initialize()
    assert cli_plugins.main() == 0
    out = capsys.readouterr().out
    assert f"loaded in this process: cpu from {loaded.library}" in out
    assert "loadable: PJRT" in out


def test_cli_shows_a_plugin_that_does_not_load(fake_plugin: Callable[..., Path]) -> None:
    path = fake_plugin(1, 0)
    result = run_cyxla("plugins", env={"CYXLA_PJRT_PLUGIN": str(path)})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    at = lines.index("CYXLA_PJRT_PLUGIN (?)")
    assert lines[at + 1] == f"  library: {path}"
    assert lines[at + 2].startswith("  not loadable: PluginVersionError: ")
    assert "PJRT API 1.0" in lines[at + 2]
    assert "loadable: PJRT " in result.stdout  # the CPU plugin is still listed as loadable


def test_tf_cpp_min_log_level_silences_the_cpu_plugins_log_lines() -> None:
    """The CPU plugin logs its client options through absl on stderr; TF_CPP_MIN_LOG_LEVEL=1,
    as docs/guide/standalone.md says, keeps back its INFO lines and absl's notice."""
    code = "import cyxla; cyxla.initialize(platform='cpu')"
    result = run_python(code, env={"TF_CPP_MIN_LOG_LEVEL": "0"})
    assert result.returncode == 0, result.stderr
    if "pjrt_c_api_cpu_internal" not in result.stderr:
        pytest.skip("this CPU plugin logs nothing when it creates a client")
    assert "absl::InitializeLog" in result.stderr
    quiet = run_python(code, env={"TF_CPP_MIN_LOG_LEVEL": "1"})
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    # Set by the process itself before the plugin loads, as the page says too.
    code = f"import os; os.environ['TF_CPP_MIN_LOG_LEVEL'] = '1'; {code}"
    quiet = run_python(code, env={"TF_CPP_MIN_LOG_LEVEL": "0"})
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
