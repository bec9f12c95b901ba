"""Version skew between jaxlib and the plugin: the installed pair fits (in step on jax
0.10 and 0.11; on jax 0.12, whose jaxlib is newer than the only CPU plugin, usable through
the gaps cyxla bridges), and a jaxlib newer than the plugin (simulated where it is not) is
reported at load and by `python -m cyxla`, naming both packages and the API versions: a
warning for the gaps that stop whole kinds of programs, a note for those cyxla bridges.
And `python -m cyxla info`, the report a bug needs."""

from __future__ import annotations

import ctypes
import re
import sys
import warnings
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import jax
import pytest

import cyxla as cx
from cyxla import _core
from cyxla._cli import info as cli_info
from cyxla._cli import plugins as cli_plugins
from cyxla._errors import PluginVersionError
from cyxla._ffi import registry
from cyxla._run import compat as _compat
from cyxla._run import plugins as _plugins
from cyxla._version import __version__

from support import run_cyxla, run_python


def header_ffi_version() -> tuple[int, int]:
    header = (Path(jax.ffi.include_dir()) / "xla/ffi/api/c_api.h").read_text()
    major = re.search(r"#define XLA_FFI_API_MAJOR (\d+)", header)
    minor = re.search(r"#define XLA_FFI_API_MINOR (\d+)", header)
    assert major and minor
    return int(major.group(1)), int(minor.group(1))


@pytest.fixture
def newer_jaxlib(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Makes `compat` see a jax and jaxlib 0.12.0 that write StableHLO `stablehlo` and
    build handlers against XLA FFI `ffi`; the plugin's side stays what is installed."""

    def simulate(stablehlo: tuple[int, ...] = (1, 99, 0), ffi: tuple[int, int] = (0, 9)) -> None:
        real = _compat.package_version

        def package_version(name: str) -> str | None:
            return "0.12.0" if name in ("jax", "jaxlib") else real(name)

        monkeypatch.setattr(_compat, "package_version", package_version)
        monkeypatch.setattr(_compat, "jaxlib_stablehlo_version", lambda: stablehlo)
        monkeypatch.setattr(_compat, "jaxlib_ffi_version", lambda: ffi)
        monkeypatch.setattr(_compat, "_warned", set())

    return simulate


def installed_jaxlib_is_newer(verdict: Any) -> bool:
    """Whether the installed jaxlib writes or builds for newer APIs than the plugin runs
    (jax 0.12 beside the 0.11.2 CPU plugin)."""
    assert verdict.plugin_ffi is not None and verdict.plugin_stablehlo is not None
    return (
        verdict.jaxlib_ffi > verdict.plugin_ffi
        or verdict.jaxlib_stablehlo > verdict.plugin_stablehlo
    )


def test_the_installed_pair_fits() -> None:
    loaded = cx.initialize()
    verdict = _compat.verdict(loaded.plugin, loaded.library, "cpu")
    assert verdict.jaxlib_ffi == header_ffi_version()
    assert verdict.usable and not verdict.fatal, verdict.message()
    if installed_jaxlib_is_newer(verdict):  # jax 0.12: each gap bridged, and said so
        assert not verdict.in_step and verdict.notes
        assert "cyxla bridges the gap" in verdict.bridged()
    else:
        assert verdict.in_step, verdict.bridged()
    # The header's version is the one jaxlib's handlers report at registration.
    handler_versions = {r.handler_ffi_version for r in registry.registrations().values()}
    assert header_ffi_version() in handler_versions
    assert _compat.distribution_of(loaded.library) == (
        f"lammps-jax-pjrt-cpu {metadata.version('lammps-jax-pjrt-cpu')}"
    )


def test_a_library_outside_any_package_has_no_distribution(tmp_path: Path) -> None:
    library = tmp_path / "libplugin.so"
    library.write_bytes(b"")
    assert _compat.distribution_of(str(library)) is None


def test_a_library_is_named_by_the_distribution_whose_directory_holds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The distribution whose RECORD lists the library; else the one that owns its
    top-level directory (a library added there after installing). A sys.path entry
    itself is no distribution's file."""
    site = tmp_path / "site"
    (site / "fakeplugin").mkdir(parents=True)
    listed, added = site / "fakeplugin" / "libpjrt.so", site / "fakeplugin" / "libadded.so"
    for library in (listed, added):
        library.write_bytes(b"")
    info = site / "fake_pjrt_plugin-2.5.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-pjrt-plugin\nVersion: 2.5\n")
    (site / "fakeplugin" / "__init__.py").write_text("")
    record = ["fakeplugin/__init__.py", "fakeplugin/libpjrt.so", f"{info.name}/METADATA"]
    (info / "RECORD").write_text("".join(f"{path},,\n" for path in record))
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    assert _compat.distribution_of(str(listed)) == "fake-pjrt-plugin 2.5"
    assert _compat.distribution_of(str(added)) == "fake-pjrt-plugin 2.5"
    assert _compat.distribution_of(str(site)) is None


def test_a_package_that_is_not_installed_is_named_so() -> None:
    assert _compat.package_version("cyxla-no-such-distribution") is None
    assert _compat._named("cyxla-no-such-distribution") == (
        "cyxla-no-such-distribution (not installed)"
    )


@pytest.mark.parametrize("header", [None, "/* no version defines */\n"], ids=["none", "other"])
def test_jaxlib_without_the_ffi_header_has_no_ffi_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, header: str | None
) -> None:
    """Without XLA FFI's header (or with one that does not say its version) jaxlib's FFI
    version is unknown, and no FFI skew is claimed."""
    if header is not None:
        (tmp_path / "xla/ffi/api").mkdir(parents=True)
        (tmp_path / "xla/ffi/api/c_api.h").write_text(header)
    monkeypatch.setattr(jax.ffi, "include_dir", lambda: str(tmp_path))
    assert _compat.jaxlib_ffi_version() is None
    loaded = cx.initialize()
    verdict = _compat.verdict(loaded.plugin, loaded.library)
    assert verdict.jaxlib_ffi is None and verdict.usable
    assert not any("FFI" in note for note in verdict.notes)
    assert "XLA FFI unknown (jaxlib) / " in verdict.summary()


def test_a_plugin_without_an_ffi_extension_has_no_ffi_version(
    scripted: tuple[_core.Plugin, ctypes.CDLL],
) -> None:
    """The scripted plugin's FFI extension cannot register handlers, so it runs no custom
    calls: its FFI version is unknown and no FFI skew is claimed."""
    plugin = scripted[0]
    verdict = _compat.verdict(plugin, plugin.path)
    assert verdict.plugin_ffi is None and verdict.in_step
    assert verdict.summary().endswith(
        f"XLA FFI {_compat._text(header_ffi_version())} (jaxlib) / unknown (plugin)"
    )


def test_jaxlib_newer_than_the_cpu_plugin_is_bridged_without_a_warning(
    newer_jaxlib: Callable[..., None],
) -> None:
    """On the CPU, cyxla bridges both gaps of a newer jaxlib: programs are written at the
    plugin's StableHLO, and its own LAPACK handlers run at the plugin's XLA FFI; the
    verdict says so, and loading does not warn."""
    loaded = cx.initialize()
    newer_jaxlib()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        verdict = _compat.check_on_load(loaded.plugin, loaded.library, "cpu")
    assert verdict.usable and not verdict.in_step and not verdict.problems
    text = verdict.bridged()
    plugin = f"lammps-jax-pjrt-cpu {metadata.version('lammps-jax-pjrt-cpu')}"
    assert text.startswith(f"jax 0.12.0 and jaxlib 0.12.0 are newer than the plugin {plugin}")
    assert "jaxlib writes StableHLO 1.99.0, the plugin reads at most " in text
    assert "lower refuses one that uses a newer operation" in text
    assert "built against XLA FFI 0.9 and the plugin's XLA runs XLA FFI " in text
    assert "cyxla's own handlers run jnp.linalg's LAPACK targets" in text


def test_jaxlib_newer_than_the_plugin_warns_once_naming_both_packages(
    newer_jaxlib: Callable[..., None],
) -> None:
    """Where cyxla has no handlers of its own (a GPU plugin), jaxlib's newer handlers stop
    every program with a custom call: a warning at load."""
    loaded = cx.initialize()
    newer_jaxlib()
    with pytest.warns(cx.VersionSkewWarning) as caught:
        verdict = _compat.check_on_load(loaded.plugin, loaded.library, "cuda")
    assert not verdict.usable and not verdict.fatal
    (warning,) = caught
    message = str(warning.message)
    plugin = f"lammps-jax-pjrt-cpu {metadata.version('lammps-jax-pjrt-cpu')}"
    assert f"jax 0.12.0 and jaxlib 0.12.0 are newer than the plugin {plugin}" in message
    assert "built against XLA FFI 0.9, the plugin's XLA runs XLA FFI " in message
    assert "StableHLO" not in message  # bridged: a note, not a warning
    assert "install a plugin at least as new as jaxlib" in message
    assert issubclass(cx.VersionSkewWarning, UserWarning)
    # Once per library: a second load of the same plugin says nothing more.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _compat.check_on_load(loaded.plugin, loaded.library, "cuda")


def test_each_kind_of_skew_is_named_alone(newer_jaxlib: Callable[..., None]) -> None:
    loaded = cx.initialize()
    plugin_stablehlo = tuple(loaded.plugin.attributes["stablehlo_current_version"])
    newer_jaxlib(stablehlo=plugin_stablehlo)
    (note,) = _compat.verdict(loaded.plugin, loaded.library, "cpu").notes
    assert "XLA FFI 0.9" in note and "StableHLO" not in note
    newer_jaxlib(ffi=(0, 0))
    (note,) = _compat.verdict(loaded.plugin, loaded.library, "cpu").notes
    assert "StableHLO 1.99.0" in note and "XLA FFI" not in note


def test_a_plugin_that_reads_nothing_jaxlib_writes_is_refused(
    newer_jaxlib: Callable[..., None],
) -> None:
    loaded = cx.initialize()
    newer_jaxlib(stablehlo=(0, 1, 0), ffi=(0, 0))
    with pytest.raises(PluginVersionError, match=r"jaxlib writes at most 0\.1\.0") as error:
        _compat.check_on_load(loaded.plugin, loaded.library)
    assert "jaxlib 0.12.0" in str(error.value) and "lammps-jax-pjrt-cpu" in str(error.value)


def test_the_plugin_listing_shows_a_bridged_gap_and_succeeds(
    newer_jaxlib: Callable[..., None], capsys: pytest.CaptureFixture[str]
) -> None:
    newer_jaxlib()
    assert cli_plugins.main() == 0
    out = capsys.readouterr().out
    assert "  usable with a newer jaxlib: jax 0.12.0 and jaxlib 0.12.0 are newer" in out
    assert "cyxla bridges the gap" in out


def test_the_plugin_listing_shows_the_skew_and_fails(
    newer_jaxlib: Callable[..., None],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    newer_jaxlib()
    monkeypatch.setattr(_compat, "_own_lapack_handlers", lambda: False)
    assert cli_plugins.main() == 1
    out = capsys.readouterr().out
    assert "  version skew (VersionSkewWarning at load): jax 0.12.0 and jaxlib 0.12.0" in out
    assert "no usable plugin: none loads and is usable with jaxlib" in out


def test_the_plugin_listing_shows_a_verdict_that_fails_and_goes_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fails(plugin: Any, library: str, platform: str | None = None) -> Any:
        raise RuntimeError("the attributes cannot be read")

    monkeypatch.setattr(_compat, "verdict", fails)
    assert cli_plugins.main() == 1
    out = capsys.readouterr().out
    assert "  versions unknown: RuntimeError: the attributes cannot be read" in out
    assert "no usable plugin: none loads and is usable with jaxlib" in out


def test_the_plugin_listing_shows_how_the_pair_fits() -> None:
    result = run_cyxla("plugins")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    at = lines.index("cpu (cpu)")
    assert (
        lines[at + 3] == f"  package: lammps-jax-pjrt-cpu {metadata.version('lammps-jax-pjrt-cpu')}"
    )
    loaded = cx.initialize()
    if installed_jaxlib_is_newer(_compat.verdict(loaded.plugin, loaded.library, "cpu")):
        assert lines[at + 4].startswith("  usable with a newer jaxlib: jax ")
    else:
        assert lines[at + 4].startswith("  in step with jaxlib: StableHLO ")


def test_loading_warns_in_a_fresh_process() -> None:
    """The warning comes from cyxla.initialize, in a process that imported JAX and where
    jaxlib looks newer."""
    result = run_python(
        """
        import warnings
        import jax
        import cyxla as cx
        from cyxla._run import compat as _compat
        _compat.jaxlib_ffi_version = lambda: (0, 9)
        _compat._own_lapack_handlers = lambda: False  # as on a GPU: the gap is not bridged
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cx.initialize()
            cx.initialize()
        skew = [w for w in caught if issubclass(w.category, cx.VersionSkewWarning)]
        print(len(skew), skew[0].filename)
        """
    )
    assert result.returncode == 0, result.stderr
    count, filename = result.stdout.split()
    assert count == "1"
    assert filename == "<string>"  # the warning points at the caller of initialize


def test_info_reports_what_a_bug_report_needs() -> None:
    result = run_cyxla("info")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    version = sys.version.split()[0]
    assert lines[0] == f"cyxla: {__version__}"
    assert lines[1].startswith(f"python: {version} ")
    for name in ("jax", "jaxlib", "numpy"):
        assert f"{name}: {metadata.version(name)}" in lines
    ffi = ".".join(map(str, header_ffi_version()))
    assert any(line.startswith("jaxlib APIs: StableHLO ") and line.endswith(ffi) for line in lines)
    plugin = f"plugin cpu (cpu): lammps-jax-pjrt-cpu {metadata.version('lammps-jax-pjrt-cpu')} ("
    (line,) = [line for line in lines if line.startswith(plugin)]
    assert ", PJRT 0." in line
    loaded = cx.initialize()
    if installed_jaxlib_is_newer(_compat.verdict(loaded.plugin, loaded.library, "cpu")):
        assert "; usable with a newer jaxlib: " in line and "cyxla bridges the gap" in line
    else:
        assert line.endswith("; in step with jaxlib")
    assert any(line.startswith("cache directory: ") for line in lines)
    assert f"native ABI version: {cx.ABI_VERSION}" in lines


def test_the_readme_lists_the_tested_pairings() -> None:
    """README's table of supported versions and `info`'s list are one set of pairings."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    table = readme[readme.index("### Supported versions") :]
    rows = re.findall(r"^\| (3\.\d+) \| ([\d.]+) \(.*?`lammps-jax-pjrt-cpu` ([\d.]+)", table, re.M)
    assert tuple(rows) == _compat.TESTED_PAIRINGS


def test_info_names_the_pairing(monkeypatch: pytest.MonkeyPatch) -> None:
    """CI's environments are each a tested pairing; another is said not to be, with the
    ones that are."""
    (line,) = [line for line in cli_info.lines() if line.startswith("tested pairing: ")]
    assert line.startswith("tested pairing: yes (Python ")
    monkeypatch.setattr(_compat, "package_version", lambda name: "0.9.0")
    verdict = _compat.tested_pairing()
    assert verdict.startswith("no (CI tests Python 3.11, jax 0.10.2, lammps-jax-pjrt-cpu 0.11.2;")


def test_info_without_any_plugin_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_plugins, "discover", lambda: [])
    monkeypatch.delenv(_plugins.PLUGIN_ENVIRONMENT_VARIABLE, raising=False)
    lines = cli_info.lines()
    assert "plugin: none installed (pip install 'cyxla[cpu]')" in lines
    stablehlo = ".".join(map(str, _compat.jaxlib_stablehlo_version()))
    ffi = ".".join(map(str, header_ffi_version()))
    assert f"jaxlib APIs: StableHLO {stablehlo}, XLA FFI {ffi}" in lines


def test_info_shows_versions_a_plugin_does_not_report_as_unknown(
    scripted: tuple[_core.Plugin, ctypes.CDLL],
) -> None:
    line = cli_info._plugin(scripted[0].path)
    assert f"no package ({scripted[0].path}), PJRT " in line
    assert "StableHLO unknown to unknown, XLA FFI unknown; in step with jaxlib" in line


def test_info_shows_a_plugin_that_does_not_load(tmp_path: Path) -> None:
    library = tmp_path / "libnot_a_plugin.so"
    library.write_bytes(b"not a library")
    result = run_cyxla("info", env={"CYXLA_PJRT_PLUGIN": str(library), "CYXLA_CACHE_DIR": "0"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(
        line.startswith(f"plugin CYXLA_PJRT_PLUGIN: {library}, not loadable: ") for line in lines
    )
    assert "cache directory: off" in lines
    assert "CYXLA_CACHE_DIR: 0" in lines
