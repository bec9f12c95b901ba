"""`python -m cyxla bench`: the report's structure (every program, every path, finite
positive figures), the interleaved rounds and per-round ratios, and the plot. Never timing
thresholds: the figures are measured, not tested."""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import math
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cyxla._bench import paths, plot, programs, report, rounds
from cyxla._bench.progress import Progress
from cyxla._cli import bench

from support import run_cyxla

QUICK = ("--rounds", "3", "--threads", "2", "--sample-ms", "1")


#: The paths of export_aot: timed where the aot extra is installed and the program
#: qualifies (matmul100's dot needs XLA's runtime), left out with the reason elsewhere.
AOT_PATHS = ("aot", "aot_host")
AOT_INSTALLED = importlib.util.find_spec("tensorflow") is not None


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """Every program and path, once, with the plot drawn beside."""
    picture = tmp_path_factory.mktemp("bench") / "bench.png"
    result = run_cyxla("bench", *QUICK, "--json", "--plot", str(picture))
    assert result.returncode == 0, result.stderr
    for key in ("sin3", "matmul100", "mlp64", "ew1m"):
        left_out = not AOT_INSTALLED or key == "matmul100"
        for name in AOT_PATHS:
            assert (f"bench: {key}: {name} left out: " in result.stderr) == left_out, key
    return json.loads(result.stdout), picture


def _finite_positive(value: float) -> bool:
    return isinstance(value, float | int) and math.isfinite(value) and value > 0


def test_bench_reports_every_path_of_every_program(full_run: tuple[dict[str, Any], Path]) -> None:
    data, _ = full_run
    assert data["threads"] == 2 and data["rounds"] == 3 and data["platform"] == "cpu"
    assert list(data["programs"]) == ["sin3", "matmul100", "mlp64", "ew1m"]
    for key, program in data["programs"].items():
        assert program["description"] == next(
            p.description for p in programs.PROGRAMS if p.key == key
        )
        bench_program = next(p for p in programs.PROGRAMS if p.key == key)
        expected = [p.name for p in paths.PATHS.values() if paths.applies(p, bench_program)]
        if not AOT_INSTALLED or key == "matmul100":
            expected = [name for name in expected if name not in AOT_PATHS]
        assert ("memcpy" in expected) == (key == "ew1m")
        assert [
            p for p in program if isinstance(program[p], dict) and "median_ns" in program[p]
        ] == (expected)
        for name in expected:
            row = program[name]
            for field in ("median_ns", "ratio_to_pjrt_floor", "ratio_to_jax_jit"):
                assert _finite_positive(row[field]), (key, name, field, row)
            low, high = row["quartiles_ns"]
            assert low <= row["median_ns"] <= high, (key, name, row)
            for field in ("ratio_to_pjrt_floor", "ratio_to_jax_jit"):
                low, high = row[f"{field}_quartiles"]
                assert low <= row[field] <= high, (key, name, field, row)
            assert row["evaluations_per_call"] == paths.PATHS[name].evaluations
        # Each reference's ratio to itself is 1 in every round.
        assert program["pjrt_floor"]["ratio_to_pjrt_floor"] == 1.0
        assert program["jax_jit"]["ratio_to_jax_jit"] == 1.0
        assert program["bound_py"]["ratio_to_bound_py"] == 1.0
        assert all(_finite_positive(program[name]["ratio_to_bound_py"]) for name in expected)
        # The native loops' tails: per round p99 <= p99.9 <= max, so their medians too.
        for name in expected:
            assert ("tail_ns" in program[name]) == (name in ("native", "bound", "bound_pjrt")), name
        for name in ("native", "bound"):
            tail = program[name]["tail_ns"]
            assert 0 < tail["p99"] <= tail["p99_9"] <= tail["max"] <= tail["max_of_all_rounds"]
        assert _finite_positive(program["threads_speedup"])
        assert set(program["pjrt_floor_phases_ns"]) == set(report.PHASES)
        assert all(v >= 0 for v in program["pjrt_floor_phases_ns"].values())


def test_bench_table_says_which_jax_jit_is_which(
    full_run: tuple[dict[str, Any], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    report.print_table(full_run[0])
    table = capsys.readouterr().out
    assert "jax_jit          " in table and "jax.jit, NumPy arrays in and out" in table
    assert "jax.jit, device arrays in and out (block_until_ready)" in table
    assert "cyxla native execute, 2 threads on one executable" in table
    assert table.count("the floor's steps, us per call: buffers_in") == 4
    assert table.count("memcpy of the output's bytes") == 1
    assert "ew1m: 2 * x + 1, x: f32[1048576]" in table


def test_bench_table_shows_pythons_calls_and_the_tails(
    full_run: tuple[dict[str, Any], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    report.print_table(full_run[0])
    table = capsys.readouterr().out
    assert table.count("Python's calls over a bound call from Python: run ") == 4
    assert "run_out_aligned " in table
    assert table.count("native per call, medians over rounds of each round's: p99 ") == 4
    assert table.count("bound per call, medians over rounds of each round's: p99 ") == 4


def test_a_tail_loop_reports_each_runs_percentiles_and_maximum() -> None:
    clocked: list[bool] = []

    def run(n: int, latencies: np.ndarray | None) -> float:
        clocked.append(latencies is not None)
        if latencies is None:
            return 0.25  # the loop timed as a whole
        latencies[:] = np.arange(1, n + 1)  # 1 .. n nanoseconds
        return float(latencies.sum()) * 1e-9

    loop = paths.TailLoop(run)
    # The figure comes from the loop without a clock read per call; the tails from a second.
    assert loop(1000) == 0.25
    assert clocked == [False, True]
    ((p99, p999, most),) = loop.samples
    assert p99 == pytest.approx(np.percentile(np.arange(1, 1001), 99))
    assert p999 == pytest.approx(np.percentile(np.arange(1, 1001), 99.9))
    assert most == 1000.0
    result = report.program_report(
        "d",
        {"pjrt_floor": "floor", "native": "n"},
        {"pjrt_floor": 1, "native": 1},
        {"pjrt_floor": [1.0, 1.0, 1.0], "native": [2.0, 2.0, 2.0]},
        [1.0] * 5,
        {"native": [(1.0, 2.0, 3.0), (2.0, 4.0, 9.0), (3.0, 5.0, 6.0)]},
    )
    assert result["native"]["tail_ns"] == {
        "p99": 2.0,
        "p99_9": 4.0,
        "max": 6.0,
        "max_of_all_rounds": 9.0,
    }
    assert "tail_ns" not in result["pjrt_floor"]


def test_bench_plot_is_an_image(full_run: tuple[dict[str, Any], Path]) -> None:
    picture = full_run[1]
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert picture.stat().st_size > 10_000


def test_bench_times_the_chosen_paths_and_always_the_floor() -> None:
    result = run_cyxla("bench", *QUICK, "--json", "--programs", "sin3", "--paths", "native")
    assert result.returncode == 0, result.stderr
    (only,) = json.loads(result.stdout)["programs"].values()
    assert {"pjrt_floor", "native"} <= set(only) and "run" not in only and "jax_jit" not in only
    # No jax.jit timed: no ratio to it, and no thread speedup without the threads path.
    assert only["native"]["ratio_to_jax_jit"] is None and only["threads_speedup"] is None
    assert _finite_positive(only["native"]["ratio_to_pjrt_floor"])
    # Progress goes to stderr, a line per report when stderr is not a terminal.
    lines = result.stderr.splitlines()
    assert lines[0] == "bench: sin3 (program 1 of 1): calibrating"
    assert re.fullmatch(r"bench: sin3 \(program 1 of 1\): round 1/3, about \d+ s left", lines[1])
    assert lines[-1] == "bench: sin3 (program 1 of 1): round 3/3, done"


def test_bench_on_the_cpu_clock_leaves_out_the_threads() -> None:
    result = run_cyxla(
        "bench",
        *QUICK,
        "--json",
        "--clock",
        "cpu",
        "--programs",
        "mlp64",
        "--paths",
        "native,threads",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["clock"] == "cpu"
    (only,) = data["programs"].values()
    assert "threads" not in only and only["threads_speedup"] is None
    assert _finite_positive(only["native"]["median_ns"])


def test_the_cpu_clock_counts_work_not_waiting() -> None:
    def work(n: int) -> float:  # some milliseconds of CPU time, however busy the machine
        sum(range(n * 300_000))
        return 0.0

    assert rounds.on_cpu_clock(lambda n: time.sleep(n * 0.05) or 0.0)(2) < 0.02
    assert rounds.on_cpu_clock(work)(2) > 0.002


@pytest.mark.parametrize(
    ("option", "value", "known"),
    [("--programs", "sin3,nope", "sin3, matmul100"), ("--paths", "warp", "pjrt_floor, native")],
)
def test_bench_refuses_unknown_names(option: str, value: str, known: str) -> None:
    result = run_cyxla("bench", option, value)
    assert result.returncode == 2
    assert "unknown" in result.stderr and value.split(",")[-1] in result.stderr
    assert known in result.stderr


def test_bench_plot_without_matplotlib_names_the_extra(tmp_path: Path) -> None:
    # matplotlib hidden from a fresh interpreter: None in sys.modules makes import fail.
    code = (
        "import sys; sys.modules['matplotlib'] = None; from cyxla.__main__ import main; "
        f"sys.exit(main(['bench', '--plot', {str(tmp_path / 'b.png')!r}]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 2
    assert "matplotlib, which is not installed: pip install 'cyxla[plot]'" in result.stderr
    assert result.stdout == "" and not (tmp_path / "b.png").exists()


def test_rounds_interleave_in_shuffled_order_and_divide_by_evaluations() -> None:
    order: list[str] = []

    def loop_of(name: str, seconds_per_call: float) -> paths.Loop:
        def loop(n: int) -> float:
            order.append(name)
            return n * seconds_per_call

        return loop

    timings = {
        "a": rounds.Timing(loop_of("a", 1e-6), calls=10),
        "b": rounds.Timing(loop_of("b", 2e-6), calls=5),
        "batch": rounds.Timing(loop_of("batch", 16e-6), calls=3, evaluations=16),
    }
    samples = rounds.time_rounds(timings, 8, random.Random(1))
    assert samples["a"] == pytest.approx([1000.0] * 8)
    assert samples["b"] == pytest.approx([2000.0] * 8)
    assert samples["batch"] == pytest.approx([1000.0] * 8)  # per evaluation
    per_round = [tuple(order[i : i + 3]) for i in range(0, 24, 3)]
    assert all(sorted(r) == ["a", "b", "batch"] for r in per_round)
    assert len(set(per_round)) > 1, per_round


def test_ratios_are_medians_of_per_round_ratios() -> None:
    # Ratios of medians would give 5 / 10 = 0.5; per round they are 3, 0.5 and 4.
    samples = {"pjrt_floor": [1.0, 10.0, 100.0], "native": [3.0, 5.0, 400.0]}
    result = report.program_report(
        "d",
        {"pjrt_floor": "floor", "native": "n"},
        {"pjrt_floor": 1, "native": 1},
        samples,
        [1.0] * 5,
    )
    row = result["native"]
    assert row["median_ns"] == 5.0 and row["quartiles_ns"] == [4.0, 202.5]
    assert row["ratio_to_pjrt_floor"] == 3.0
    assert row["ratio_to_pjrt_floor_quartiles"] == [1.75, 3.5]
    assert row["ratio_to_jax_jit"] is None


def test_the_table_shows_a_ratio_that_was_not_measured_as_a_dash(
    capsys: pytest.CaptureFixture[str],
) -> None:
    samples = {"pjrt_floor": [1000.0, 1100.0], "native": [2000.0, 2200.0]}
    program = report.program_report(
        "d",
        {"pjrt_floor": "floor", "native": "n"},
        {"pjrt_floor": 1, "native": 1},
        samples,
        [1.0] * 5,
    )
    report.print_table({"clock": "wall", "rounds": 2, "threads": 2, "programs": {"d": program}})
    (native,) = [line for line in capsys.readouterr().out.splitlines() if "native" in line]
    # Against the floor 2.00x; no jax_jit path ran, so that column is a dash.
    assert native.split()[3:6] == ["2.00x", "(2.00-2.00)", "-"]


def test_spread_matches_numpy_quartiles() -> None:
    values = list(np.random.default_rng(0).standard_normal(17) + 5)
    s = rounds.spread(values)
    assert s.median == pytest.approx(np.median(values))
    assert (s.low, s.high) == pytest.approx(tuple(np.percentile(values, [25, 75])))
    assert rounds.spread([2.0]) == rounds.Spread(2.0, 2.0, 2.0)


def test_calls_per_sample_fills_the_asked_time() -> None:
    assert rounds.calls_per_sample(lambda n: n * 1e-6, 0.01) == 10_000
    assert rounds.calls_per_sample(lambda n: n * 1.0, 0.01) == 1


def test_the_plot_draws_every_path(tmp_path: Path) -> None:
    row = {
        "median_ns": 1.0,
        "ratio_to_pjrt_floor": 0.5,
        "ratio_to_pjrt_floor_quartiles": [0.4, 0.7],
    }
    data = {"rounds": 1, "programs": {"p": {"description": "d", "a": row, "b": row}}}
    plot.save_plot(data, tmp_path / "p.svg")
    svg = (tmp_path / "p.svg").read_text()
    assert "<svg" in svg and svg.count('id="patch_') >= 2 + 2


def test_the_plot_of_one_program_shows_its_title_and_legend_whole() -> None:
    """One program makes the narrowest figure: its title fits it, and the legend beside
    the axes overlaps no bar."""
    row = {"median_ns": 1.0, "ratio_to_pjrt_floor": 3.0, "ratio_to_pjrt_floor_quartiles": [2, 4]}
    paths = {name: row for name in ("native", "run", "bound", "jax_jit")}
    figure = plot.draw({"rounds": 21, "programs": {"sin3": {"description": "d", **paths}}})
    try:
        renderer = figure.canvas.get_renderer()
        page = figure.get_window_extent(renderer)
        (axes,) = figure.axes
        title = axes.title.get_window_extent(renderer)
        assert page.x0 <= title.x0 and title.x1 <= page.x1, (title, page)
        legend = axes.get_legend().get_window_extent(renderer)
        for bar in axes.patches:
            assert not bar.get_window_extent(renderer).overlaps(legend)
    finally:
        plot.pyplot().close(figure)


def test_bench_prints_a_table_without_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tiny = programs.BenchProgram(
        "tiny", "x + 1", lambda x: x + 1, lambda rng: [np.zeros(2, np.float32)], lambda x: x + 1
    )
    monkeypatch.setattr(programs, "PROGRAMS", (tiny,))
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    args = parser.parse_args(["--rounds", "1", "--threads", "1", "--sample-ms", "0.1"])
    args.programs = ["tiny"]
    assert bench.main(args) == 0
    out = capsys.readouterr().out
    assert "\ntiny: x + 1\n" in out and "vs jax_jit" in out
    assert "the floor's steps, us per call: buffers_in" in out
    assert not out.lstrip().startswith("{")  # a table, not JSON


def test_bench_arguments_default_to_every_program_and_path() -> None:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    args = parser.parse_args([])
    assert args.programs == [p.key for p in programs.PROGRAMS]
    assert args.paths == list(paths.PATHS) and args.threads == 2 and args.plot is None


def test_progress_counts_rounds_over_every_program(monkeypatch: pytest.MonkeyPatch) -> None:
    """The estimate is the time per round so far times the rounds left, this program's
    and the later programs'."""
    # Progress(), program(), a round of 2 s, program(), a round of 1 s.
    clock = iter([0.0, 100.0, 102.0, 110.0, 111.0])
    monkeypatch.setattr("cyxla._bench.progress.time.monotonic", lambda: next(clock))
    stream = io.StringIO()
    progress = Progress(programs=2, rounds=3, stream=stream)
    progress.program("sin3")
    progress.round(1)  # 2 rounds of sin3 and 3 of the next left, at 2 s each
    progress.program("ew1m")
    progress.round(1)  # 2 rounds left at 1 s each
    assert stream.getvalue().splitlines() == [
        "bench: sin3 (program 1 of 2): calibrating",
        "bench: sin3 (program 1 of 2): round 1/3, about 10 s left",
        "bench: ew1m (program 2 of 2): calibrating",
        "bench: ew1m (program 2 of 2): round 1/3, about 2 s left",
    ]
