"""Edges of the Python package that the behaviour tests do not reach: the plugin
modules of platforms absent here (found through stand-in packages), the discovery of
JAX's targets, the checks on custom calls, and small accessors."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.lib import xla_client
from jax._src.lib.mlir.dialects import hlo

import cyxla as cx
from cyxla import _stablehlo
from cyxla._cli import plugins as cli_plugins
from cyxla._ffi import checks as ffi_checks
from cyxla._ffi import plugin as ffi_plugin
from cyxla._ffi import sources as ffi_sources
from cyxla.plugins import cpu, cuda12, cuda13, rocm7, tpu


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


# ---------------------------------------------------------------- JAX's targets


def test_jax_held_targets_skip_what_cyxla_cannot_take(monkeypatch: pytest.MonkeyPatch) -> None:
    real = xla_client.custom_call_targets

    def targets_of(platform: str) -> Any:
        if platform == "ROCM":
            raise RuntimeError("unknown platform")
        return real(platform)

    monkeypatch.setattr(xla_client, "custom_call_targets", targets_of)
    pending = {"TPU": [("cyxla_test_tpu_pending", object(), 1, 0)]}
    monkeypatch.setattr(xla_client, "_custom_callback", pending, raising=False)
    held = {t.name for t in ffi_sources.jax_held_targets()}
    assert "cyxla_test_tpu_pending" not in held
    assert set(real("Host")) <= held


def test_a_jaxlib_module_that_does_not_import_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = "jaxlib.cpu._cyxla_missing"
    monkeypatch.setattr(ffi_sources, "JAXLIB_CPU_MODULES", (missing, "jaxlib.cpu._lapack"))
    names = [m.__name__ for m in ffi_sources._jaxlib_cpu_modules()]
    assert "jaxlib.cpu._lapack" in names and missing not in names


# ---------------------------------------------------------------- checks on custom calls


def _call(target: str, config: str = "api_version = 4 : i32") -> str:
    return f"    %0 = stablehlo.custom_call @{target}(%arg0) {{{config}}} : (tensor<3xf32>) -> ()"


def test_check_lowered_lets_xla_builtins_through_and_names_callbacks() -> None:
    ffi_checks.check_lowered(_call("Sharding", 'backend_config = ""'), "f", "cpu")
    with pytest.raises(cx.UnsupportedProgramError) as info:
        ffi_checks.check_lowered(_call("xla_ffi_python_cpu_callback"), "f", "cpu")
    assert "f calls the custom-call target 'xla_ffi_python_cpu_callback'" in str(info.value)
    assert "Python host callback" in str(info.value)


def test_explain_export_error_falls_back_when_tracing_fails() -> None:
    def trace() -> Any:
        raise RuntimeError("cannot trace again")

    error = NotImplementedError("host_callbacks are not supported")
    assert ffi_checks.explain_export_error(error, "f", trace) is None
    assert ffi_checks.explain_export_error(ValueError("other"), "f", trace) is None


_explained = ffi_checks.explain_compile_errors


def test_explain_compile_errors_names_an_untyped_call() -> None:
    untyped = "No registered implementation for untyped custom call to old_call"
    expected = "'old_call' is an untyped custom call"
    with pytest.raises(cx.UnsupportedProgramError, match=expected), _explained():
        raise cx.CompileError(untyped)
    with pytest.raises(cx.CompileError, match="something else"), _explained():
        raise cx.CompileError("something else")


def test_version_reasons() -> None:
    older = ffi_plugin._version_reason((0, 1), (0, 2))
    assert older == (
        " (handler built against XLA FFI 0.1, plugin's XLA FFI 0.2): another handler may "
        "hold the name in the plugin"
    )
    assert "XLA FFI unknown" in ffi_plugin._version_reason(None, (0, 2))


class _Refusing:
    """A runtime whose compile fails for a reason other than a missing handler."""

    def compile(self, *_: Any) -> None:
        raise cx.CompileError("out of memory")


def test_the_probe_passes_on_other_compile_errors() -> None:
    plugin = cx.initialize().plugin
    with pytest.raises(cx.CompileError, match="out of memory"):
        ffi_plugin._probe(plugin, _Refusing(), ["cyxla_test_probe"])  # type: ignore[arg-type]


# ---------------------------------------------------------------- lowering and running


def test_stablehlo_target_of_a_plugin_that_names_no_version() -> None:
    plugin = types.SimpleNamespace(attributes={})
    assert _stablehlo.stablehlo_target_of(plugin) == str(hlo.get_current_version())  # type: ignore[arg-type]


def test_lower_names_an_argument_that_is_no_array() -> None:
    class NoArray:
        def __array__(self, *_: Any, **__: Any) -> np.ndarray:
            raise RuntimeError("no")

    with pytest.raises(
        TypeError, match=r"expected a jax\.ShapeDtypeStruct or an array, got NoArray"
    ):
        cx.lower(jnp.sin, [NoArray()])


def test_executable_platform_and_an_internal_refusal() -> None:
    executable, _ = cx.compile_program(cx.lower(jnp.sin, [jax.ShapeDtypeStruct((3,), jnp.float32)]))
    assert executable.platform == "cpu" == executable.program.platform

    class Refusing:
        def _execute_exact(self, *_: Any, **__: Any) -> bool:
            return False

    executable._native = Refusing()  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="the core refused arguments that run"):
        executable.run([np.zeros(3, np.float32)])


def test_plugins_command_names_the_loaded_plugin(capsys: pytest.CaptureFixture[str]) -> None:
    loaded = cx.initialize()
    assert cli_plugins.main() == 0
    out = capsys.readouterr().out
    assert f"loaded in this process: cpu from {loaded.library}" in out
    assert "loadable: PJRT" in out


def test_cache_sizes_are_shown_in_binary_units() -> None:
    from cyxla._cli import cache as cli_cache

    assert cli_cache._size(1023) == "1023 bytes"
    assert cli_cache._size(1536) == "1.5 KiB"
    assert cli_cache._size(5 * 1024**2) == "5.0 MiB"
    assert cli_cache._size(3 * 1024**3) == "3.0 GiB"
    assert cli_cache._size(4096 * 1024**3) == "4096.0 GiB"


def _exporting(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    """jax.export.export fails with `error`, as it does for what cyxla does not explain."""

    def export(*_: Any, **__: Any) -> Any:
        def call(*___: Any) -> Any:
            raise error

        return call

    monkeypatch.setattr(jax.export, "export", export)


def test_lower_passes_on_export_errors_it_cannot_explain(monkeypatch: pytest.MonkeyPatch) -> None:
    _exporting(monkeypatch, ValueError("an unexplained export failure"))
    with pytest.raises(ValueError, match="an unexplained export failure"):
        cx.lower(jnp.sin, [jax.ShapeDtypeStruct((3,), jnp.float32)])


def test_lower_names_host_callbacks_it_cannot_find(monkeypatch: pytest.MonkeyPatch) -> None:
    """jax.export refuses host callbacks that tracing again does not show: still named."""
    _exporting(monkeypatch, NotImplementedError("cannot serialize host_callbacks"))

    def hidden(x: jax.Array) -> jax.Array:
        return jnp.cos(x)

    with pytest.raises(cx.UnsupportedProgramError, match="hidden calls back into Python") as info:
        cx.lower(hidden, [jax.ShapeDtypeStruct((3,), jnp.float32)])
    assert isinstance(info.value.__cause__, NotImplementedError)


class _WithEffects:
    """An export that reports side effects (as an effectful primitive would)."""

    def __init__(self, exported: Any) -> None:
        self._exported = exported
        self.ordered_effects = ("OrderedIOEffect",)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._exported, name)


def test_lower_refuses_programs_with_side_effects(monkeypatch: pytest.MonkeyPatch) -> None:
    real = jax.export.export
    monkeypatch.setattr(
        jax.export,
        "export",
        lambda *a, **k: lambda *args: _WithEffects(real(*a, **k)(*args)),
    )
    with pytest.raises(
        cx.UnsupportedProgramError,
        match=r"sin has side effects cyxla cannot run: \['OrderedIOEffect'\]",
    ):
        cx.lower(jnp.sin, [jax.ShapeDtypeStruct((3,), jnp.float32)])


def test_executable_repr_names_its_program_and_signature() -> None:
    f32 = jax.ShapeDtypeStruct((2, 3), jnp.float32)

    def pair(x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
        return x + y, jnp.sum(x)

    executable, _ = cx.compile_program(cx.lower(pair, [f32, f32]))
    inputs = ", ".join(map(str, executable.inputs))
    outputs = ", ".join(map(str, executable.outputs))
    assert repr(executable) == f"<cyxla.Executable pair({inputs}) -> ({outputs}) on cpu>"
    assert len(executable.inputs) == 2 and len(executable.outputs) == 2


def test_bench_prints_a_table_without_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    from cyxla._bench import paths, programs
    from cyxla._cli import bench as cli_bench

    tiny = programs.BenchProgram(
        "tiny", "x + 1", lambda x: x + 1, lambda rng: [np.zeros(2, np.float32)]
    )
    monkeypatch.setattr(programs, "PROGRAMS", (tiny,))
    args = argparse.Namespace(
        json=False,
        rounds=1,
        threads=1,
        sample_ms=0.1,
        clock="wall",
        programs=["tiny"],
        paths=list(paths.PATHS),
        plot=None,
    )
    assert cli_bench.main(args) == 0
    out = capsys.readouterr().out
    assert "\ntiny: x + 1\n" in out and "vs jax_jit" in out
    assert "the floor's steps, us per call: buffers_in" in out
    assert not out.lstrip().startswith("{")  # a table, not JSON


def test_the_version_is_written_once() -> None:
    """pyproject.toml reads the version from cyxla/_version.py: metadata and cyxla agree."""
    from importlib import metadata

    assert metadata.version("cyxla") == cx.__version__
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and "\nversion =" not in pyproject
