"""`python -m cyxla` and the `cyxla` script, run as a user runs them: in a subprocess."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support import run_cyxla

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


def test_bench_prints_a_table_without_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    from cyxla._cli import bench as cli_bench

    tiny = cli_bench.Case("tiny", lambda x: x + 1, [np.zeros(2, np.float32)], 4)
    monkeypatch.setattr(cli_bench, "_cases", lambda: [tiny])
    assert cli_bench.main(argparse.Namespace(json=False, rounds=1, threads=1)) == 0
    out = capsys.readouterr().out
    assert "\ntiny\n" in out and "median/call" in out
    assert "the floor's steps, us per call: buffers_in" in out
    assert not out.lstrip().startswith("{")  # a table, not JSON


def test_bench_reports_every_path_of_every_program(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from cyxla._cli import bench

    result = run_cyxla("bench", "--rounds", "1", "--threads", "2", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["threads"] == 2 and report["platform"] == "cpu"
    assert set(report["programs"]) == {"sin(x) * 2, f32[3]", "tanh(x @ w), f32[100,100]"}
    for paths in report["programs"].values():
        for path in bench.PATHS:
            assert paths[path]["median_ns"] > 0, (path, paths[path])
            ratio = paths[path]["median_ns"] / paths["pjrt_floor"]["median_ns"]
            assert paths[path]["ratio_to_pjrt_floor"] == pytest.approx(ratio, rel=0.01, abs=1e-3)
        assert set(paths["pjrt_floor_phases_ns"]) == set(bench.PHASES)
        assert paths["threads_speedup"] > 0
    # The table that `bench` prints without --json, from the same report.
    bench._print_table(report)
    table = capsys.readouterr().out
    assert "(2) native execute, 2 threads" in table and "(5) jax.jit" in table
    assert table.count("the floor's steps, us per call: buffers_in") == 2
