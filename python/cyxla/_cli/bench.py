"""`python -m cyxla bench`: per-call time of small programs through every path a call can
take (cyxla/_bench/paths.py), next to a naive PJRT loop (the floor) and jax.jit.

Each round times every path once, in a shuffled order, and each figure is a median over
rounds; ratios are taken within a round, where all paths saw the same machine, and their
median and interquartile range are reported: the machines this runs on change speed from
minute to minute.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from cyxla import _benchmark
from cyxla._bench import paths, plot, programs, report, rounds
from cyxla._bench.progress import Progress
from cyxla._run import backend

__all__ = ["add_arguments", "main"]


def _names(text: str, known: list[str], what: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}"
        )
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    program_keys = [p.key for p in programs.PROGRAMS]
    path_names = list(paths.PATHS)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--rounds", type=int, default=21, help="interleaved rounds (21)")
    parser.add_argument("--threads", type=int, default=2, help="threads of the `threads` path (2)")
    parser.add_argument(
        "--sample-ms",
        type=float,
        default=10.0,
        help="milliseconds one path is timed for in each round (10)",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: elapsed time (the default); cpu: the process's CPU time, which other "
        "processes on a busy machine do not inflate (the threads path is then left out)",
    )
    parser.add_argument(
        "--programs",
        type=lambda text: _names(text, program_keys, "program"),
        default=program_keys,
        help=f"comma-separated programs to time (all: {','.join(program_keys)})",
    )
    parser.add_argument(
        "--paths",
        type=lambda text: _names(text, path_names, "path"),
        default=path_names,
        help=f"comma-separated paths to time; {paths.FLOOR} always is (all: "
        f"{','.join(path_names)})",
    )
    parser.add_argument(
        "--plot",
        type=Path,
        metavar="FILE",
        help="also draw the ratios into FILE (.png, .svg, .pdf); needs matplotlib",
    )


def measure(
    program: programs.BenchProgram,
    args: argparse.Namespace,
    rng: random.Random,
    progress: Progress,
) -> dict[str, Any]:
    """Times the chosen paths of `program` in interleaved rounds: its `programs/<key>`."""
    progress.program(program.key)
    setup = paths.setup(program, max(1, args.threads))
    chosen = [
        p
        for p in paths.PATHS.values()
        if (p.name == paths.FLOOR or p.name in args.paths) and paths.applies(p, program)
    ]
    if args.clock == "cpu":  # the CPU time of N threads is not their wall time
        chosen = [p for p in chosen if p.name != "threads"]
    timings: dict[str, rounds.Timing] = {}
    tails: dict[str, paths.TailLoop] = {}
    for path in list(chosen):
        try:
            loop = path.make(setup)
        except paths.Unavailable as reason:
            print(f"bench: {program.key}: {path.name} left out: {reason}", file=sys.stderr)
            chosen.remove(path)
            continue
        if isinstance(loop, paths.TailLoop):
            tails[path.name] = loop
        if args.clock == "cpu":
            loop = rounds.on_cpu_clock(loop)
        calls = rounds.calls_per_sample(loop, args.sample_ms / 1e3)
        timings[path.name] = rounds.Timing(loop, calls, path.evaluations)
    for tail in tails.values():
        tail.samples.clear()  # the calibration's calls are not a round's
    samples = rounds.time_rounds(timings, max(1, args.rounds), rng, progress.round)
    pointers = setup.floor_executable._native._pjrt_pointers()
    types = [int(s.element_type) for s in setup.floor_executable.inputs]
    calls = timings[paths.FLOOR].calls
    phases = _benchmark.raw_pjrt_phases(
        *pointers, setup.aligned_inputs, types, setup.outputs, calls
    )
    return report.program_report(
        program.description,
        {p.name: p.label.format(threads=setup.threads) for p in chosen},
        {name: t.evaluations for name, t in timings.items()},
        samples,
        [seconds / calls * 1e9 for seconds in phases],
        {name: tail.samples for name, tail in tails.items()},
    )


def main(args: argparse.Namespace) -> int:
    if args.plot is not None:
        try:
            plot.pyplot()  # before the minutes of timing, not after
        except plot.MissingPlotDependency as error:
            print(f"python -m cyxla bench: {error}", file=sys.stderr)
            return 2
    rng = random.Random(0)
    chosen = [p for p in programs.PROGRAMS if p.key in args.programs]
    progress = Progress(len(chosen), max(1, args.rounds))
    results = {p.key: measure(p, args, rng, progress) for p in chosen}
    loaded = backend.loaded()
    data = {
        "threads": max(1, args.threads),
        "rounds": max(1, args.rounds),
        "clock": args.clock,
        "platform": loaded.platform if loaded else None,
        "programs": results,
    }
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        report.print_table(data)
    if args.plot is not None:
        plot.save_plot(data, args.plot)
    return 0
