"""`python -m cyxla` and the `cyxla` script, run as a user runs them: in a subprocess."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx

from support import plugin_library, run_cyxla, run_python

_RESULT = re.compile(r"^(cyxla|jax\.jit|native) +result\[0, :4\]: \[([^\]]*)\]$", re.M)


def demo_reference() -> np.ndarray:
    """The demo's inputs and function, recomputed in NumPy: row 0, first four values."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16), dtype=np.float32)
    w = rng.standard_normal((16, 16), dtype=np.float32) / 4
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    return (np.tanh(x64 @ w64) + np.sin(x64))[0, :4]


@pytest.fixture(scope="module")
def demo() -> subprocess.CompletedProcess[str]:
    return run_cyxla("demo")


def test_demo_succeeds(demo: subprocess.CompletedProcess[str]) -> None:
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "function: tanh(x @ w) + sin(x), x: float32[8,16], w: float32[16,16]" in demo.stdout
    assert re.search(
        r"^platform: cpu, StableHLO \d+\.\d+\.\d+, compiled in [\d.]+ ms$", demo.stdout, re.M
    )
    assert re.search(
        r"^time per call: native execute [\d.]+ us \(mean of 2000\), "
        r"Executable\.run [\d.]+ us, jax\.jit [\d.]+ us \(medians\)$",
        demo.stdout,
        re.M,
    )


def test_demo_prints_both_results_and_they_are_right(
    demo: subprocess.CompletedProcess[str],
) -> None:
    results = {
        name: np.array(values.split(), np.float64) for name, values in _RESULT.findall(demo.stdout)
    }
    assert set(results) == {"cyxla", "jax.jit", "native"}, demo.stdout
    reference = demo_reference()
    # Printed with NumPy's 8 significant digits, from float32 arithmetic.
    for name in ("cyxla", "jax.jit", "native"):
        np.testing.assert_allclose(results[name], reference, rtol=1e-5, atol=1e-6)
    difference = re.search(r"^largest difference: (\S+)$", demo.stdout, re.M)
    assert difference is not None and float(difference.group(1)) < 1e-5


def test_console_script_lists_plugins() -> None:
    script = Path(sys.executable).with_name("cyxla")
    assert script.is_file(), f"the cyxla script is missing beside {sys.executable}"
    result = subprocess.run([str(script), "plugins"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "cpu (cpu)" in result.stdout.splitlines()
    assert "  loadable: PJRT " in result.stdout


def test_unknown_command() -> None:
    result = run_cyxla("no-such-command")
    assert result.returncode == 2
    assert "invalid choice: 'no-such-command'" in result.stderr
    assert "demo" in result.stderr and "plugins" in result.stderr


def test_plugins_path_prints_one_library_or_says_what_to_install() -> None:
    found = run_cyxla("plugins", "--path", "cpu")
    assert found.returncode == 0, found.stderr
    assert found.stdout == plugin_library() + "\n"
    missing = run_cyxla("plugins", "--path", "tpu")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert "no tpu plugin is installed; install one with: pip install 'cyxla[tpu]'" in (
        missing.stderr
    )


def test_includes_name_the_headers_of_an_extension_module() -> None:
    """`--includes` gives the -I flags a C extension module builds with: Python.h's
    directory and cyxla.h's, the one cyxla.get_include() names first."""
    result = run_cyxla("--includes")
    assert result.returncode == 0, result.stderr
    flags = result.stdout.split()
    assert flags == [f"-I{sysconfig.get_paths()['include']}", f"-I{cx.get_include()[0]}"]
    assert (Path(flags[0][2:]) / "Python.h").is_file()
    assert (Path(flags[1][2:]) / "cyxla" / "cyxla.h").is_file()


@pytest.mark.parametrize(
    "command", ["plugins", "info", "demo", "bench", "cache", "export", "verify"]
)
def test_every_command_explains_itself(command: str) -> None:
    """`--help` of each command says what it does and its exit statuses."""
    result = run_cyxla(command, "--help")
    assert result.returncode == 0, result.stderr
    _, description = result.stdout.split("\n\n", 1)
    assert len(description.split("\n\n", 1)[0]) > 100, result.stdout
    assert "exit status: 0" in result.stdout


def test_export_help_shows_an_example() -> None:
    result = run_cyxla("export", "--help")
    assert "  python -m cyxla export mymodel:predict --arg f32[16,64]" in result.stdout


def test_version_names_the_package_and_the_abi() -> None:
    result = run_cyxla("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"cyxla {cx.__version__} (native ABI {cx.ABI_VERSION})\n"


@pytest.mark.parametrize(
    "argv", [["--version"], ["--includes"], ["cache"], ["cache", "--help"], ["verify", "--help"]]
)
def test_commands_that_need_no_jax_import_none(argv: list[str]) -> None:
    """Only the command that runs is imported: demo, bench and export import JAX (a second
    or more), which the cache, verify and the build flags have no use for."""
    result = run_python(
        f"""
        import sys
        from cyxla.__main__ import main
        try:
            main({argv!r})
        except SystemExit as done:
            assert done.code == 0, done.code
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("jax", "jaxlib")))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"


def test_info_says_which_runner_a_program_file_takes(tmp_path: Path) -> None:
    """`info PROGRAM_FILE` compiles the file and says which runner its calls take, which
    they would take and why, and what the plugin compiled; a file it cannot load makes
    the status 1, after the others."""
    path = tmp_path / "sin3.cyxla"
    cx.lower(lambda x: jnp.sin(x) * 2, [jax.ShapeDtypeStruct((3,), jnp.float32)]).save(path)
    result = run_cyxla("info", str(path), str(tmp_path / "missing.cyxla"))
    assert result.returncode == 1, result.stderr
    program = result.stdout.split(f"program: {path}\n", 1)[1]
    assert program.startswith("  runner: kernels\n  would take: kernels (its thunk sequence")
    assert "  kernels: broadcast_multiply_fusion\n  symbols needed: sinf\n" in program
    assert f"program: {tmp_path / 'missing.cyxla'}\n  not loadable: " in program
