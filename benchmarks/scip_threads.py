"""What a constraint handler with no Python in the loop buys: SCIP solves in Python
threads, with the handler in Cython (examples/scip_nogil) and with the solver guide's
Python handler, both through Model.optimizeNogil.

    python benchmarks/scip_threads.py [--rounds 7] [--threads 1,2,4] [--problem larger] [--json]

Two measurements, in interleaved rounds (every case once per round, shuffled):

- threads: N independent models solved in N threads at once against the same N one
  after another (wall time of the N solves; every model is built before its timing
  starts). Beside them, the same N solves (Cython handler) in N processes, which share no
  GIL: what the machine's free cores allow at the time (on a machine that other work
  keeps busy, less than N). The processes start at one instant (time.monotonic, which all
  share) and the wall time runs to the last end.
- beside: one solve alone, beside a busy Python thread (a counting loop in this process,
  which wants the GIL), and beside the same loop in another process (which takes a core
  but no GIL). The Python handler's callbacks wait for the GIL at every evaluation; the
  Cython handler's never do.

The problem is the guide's kind (examples/scip_nogil/src/cyxla_scip/guide_problem.py):
`larger`, 6 integer variables in [-5, 5] (about 1,400 nodes and 2,400 evaluations of g a
solve), or `guide`, the guide's own 3 variables (13 nodes, 67 evaluations). Prints
medians with first and third quartiles, and medians of the per-round ratios.

The example package is built (pip, into a temporary directory) when it is not installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import multiprocessing.pool
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "scip_nogil"
HANDLERS = ("cython", "python")


def import_example() -> None:
    """Makes cyxla_scip importable, building it when it is not installed."""
    if importlib.util.find_spec("cyxla_scip") is not None:
        return
    target = Path(tempfile.mkdtemp(prefix="cyxla-scip-"))
    print(f"building {EXAMPLE} into {target}", file=sys.stderr)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
         "--target", str(target), str(EXAMPLE)],
        check=True,
    )  # fmt: skip
    sys.path.insert(0, str(target))


def solved(models: list[Any], threaded: bool) -> float:
    """Seconds to solve `models`, one after another or each in a thread of its own."""
    start = time.perf_counter()
    if threaded:
        threads = [threading.Thread(target=m.optimizeNogil) for m in models]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    else:
        for m in models:
            m.optimizeNogil()
    seconds = time.perf_counter() - start
    for m in models:
        assert m.getStatus() == "optimal", m.getStatus()
    return seconds


# ------------------------------------------------------------------ the processes

_PROBLEM: Any = None
_STOP: Any = None  # a shared flag: the busy loop of _count runs until it is set


def _setup(path: list[str], problem: str, stop: Any) -> None:
    """A process of the pool: the example importable, the problem compiled."""
    global _PROBLEM, _STOP
    sys.path[:] = path
    from cyxla_scip.guide_problem import GUIDE, larger

    _PROBLEM, _STOP = (larger() if problem == "larger" else GUIDE), stop
    _PROBLEM.model("cython")[0].optimizeNogil()  # warm


def _solve_at(start_at: float) -> float:
    """Builds a model, solves it from `start_at` on; when it ended (time.monotonic)."""
    m = _PROBLEM.model("cython")[0]
    time.sleep(max(0.0, start_at - time.monotonic()))
    m.optimizeNogil()
    assert m.getStatus() == "optimal"
    return time.monotonic()


def _count(stop: Any = None) -> int:
    """A busy Python loop until the flag (a list here, a shared Value in the pool) is set."""
    flag, n = stop if stop is not None else _STOP, 0
    while not (flag[0] if isinstance(flag, list) else flag.value):
        for _ in range(1000):
            n += 1
    return n


def in_processes(pool: multiprocessing.pool.Pool, n: int) -> float:
    """Seconds from a common start to the last end of n solves in n processes."""
    start_at = time.monotonic() + 0.5  # time for each process to build its model
    ends = pool.map(_solve_at, [start_at] * n, chunksize=1)
    return max(ends) - start_at


def beside(m: Any, busy: str, pool: multiprocessing.pool.Pool, stop: Any) -> float:
    """Seconds to solve `m` while nothing else runs ("none"), beside a busy Python thread
    of this process ("thread"), or beside a busy process ("process")."""
    if busy == "none":
        return solved([m], False)
    if busy == "thread":
        flag: list[int] = [0]
        counter = threading.Thread(target=_count, args=(flag,))
        counter.start()
        seconds = solved([m], False)
        flag[0] = 1
        counter.join()
        return seconds
    stop.value = 0
    counting = pool.apply_async(_count)
    time.sleep(0.05)  # the loop is running
    seconds = solved([m], False)
    stop.value = 1
    counting.get()
    return seconds


def summary(values: list[float]) -> dict[str, Any]:
    q1, _, q3 = statistics.quantiles(values, n=4)
    return {"median": statistics.median(values), "quartiles": [q1, q3]}


def cell(row: dict[str, Any], digits: int = 3) -> str:
    q1, q3 = row["quartiles"]
    return f"{row['median']:.{digits}f} ({q1:.{digits}f}-{q3:.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", default="1,2,4")
    parser.add_argument("--problem", choices=("larger", "guide"), default="larger")
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args()
    import_example()
    from cyxla_scip.guide_problem import GUIDE, larger

    problem = larger() if arguments.problem == "larger" else GUIDE
    counts = [int(n) for n in arguments.threads.split(",")]
    context = multiprocessing.get_context("spawn")
    stop = context.Value("b", 0)
    pool = context.Pool(max(counts), _setup, (sys.path, arguments.problem, stop))
    pool.map(time.sleep, [1.0] * max(counts), chunksize=1)  # every process set up
    optimum = None
    for handler in HANDLERS:  # warm, and both reach the same optimum
        m = problem.model(handler)[0]
        m.optimizeNogil()
        assert optimum is None or m.getObjVal() == optimum
        optimum = m.getObjVal()

    # Each case: its key and a function that makes its models and times them.
    cases: dict[tuple[str, ...], Callable[[], float]] = {}
    for n in counts:
        for handler in HANDLERS:
            for way in ("sequential", "threads"):
                cases[("threads", handler, str(n), way)] = lambda h=handler, n=n, way=way: solved(
                    [problem.model(h)[0] for _ in range(n)], way == "threads"
                )
        cases[("threads", "processes", str(n), "processes")] = lambda n=n: in_processes(pool, n)
    for handler in HANDLERS:
        for busy in ("none", "thread", "process"):
            cases[("beside", handler, busy)] = lambda h=handler, b=busy: beside(
                problem.model(h)[0], b, pool, stop
            )
    samples: dict[tuple[str, ...], list[float]] = {key: [] for key in cases}
    for _ in range(arguments.rounds):
        order = list(cases)
        random.shuffle(order)
        for key in order:
            samples[key].append(cases[key]())
    pool.close()

    def ratios(over: tuple[str, ...], under: tuple[str, ...]) -> dict[str, Any]:
        return summary([a / b for a, b in zip(samples[over], samples[under], strict=True)])

    threads = []
    for handler in (*HANDLERS, "processes"):
        for n in map(str, counts):
            first = "cython" if handler == "processes" else handler
            way = "processes" if handler == "processes" else "threads"
            sequential, together = ("threads", first, n, "sequential"), ("threads", handler, n, way)
            threads.append({
                "handler": handler,
                "models": int(n),
                "sequential_s": summary(samples[sequential]),
                "together_s": summary(samples[together]),
                "speedup": ratios(sequential, together),
            })  # fmt: skip
    besides = []
    for handler in HANDLERS:
        alone = ("beside", handler, "none")
        row: dict[str, Any] = {"handler": handler, "alone_s": summary(samples[alone])}
        for busy in ("thread", "process"):
            row[f"beside_{busy}_s"] = summary(samples["beside", handler, busy])
            row[f"beside_{busy}_slowdown"] = ratios(("beside", handler, busy), alone)
        besides.append(row)
    results = {"problem": arguments.problem, "optimum": optimum, "threads": threads,
               "beside": besides}  # fmt: skip
    if arguments.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"{arguments.problem} problem (optimum {optimum:g}): seconds, median (quartiles) of "
        f"{arguments.rounds} interleaved rounds"
    )
    print("\nN models: one after another, and in N threads (processes: in N processes)")
    print(f"  {'handler':9s} {'N':>2s}  {'one after another':>24s}  {'at once':>24s}  speedup")
    for row in threads:
        print(
            f"  {row['handler']:9s} {row['models']:2d}  {cell(row['sequential_s']):>24s}  "
            f"{cell(row['together_s']):>24s}  {cell(row['speedup'], 2)}x"
        )
    print("\none solve: alone, beside a busy Python thread, beside a busy process")
    print(f"  {'handler':9s} {'alone':>22s}  {'beside a thread':>34s}  {'beside a process':>34s}")
    for row in besides:
        print(
            f"  {row['handler']:9s} {cell(row['alone_s']):>22s}  "
            f"{cell(row['beside_thread_s'])} {cell(row['beside_thread_slowdown'], 2)}x  "
            f"{cell(row['beside_process_s'])} {cell(row['beside_process_slowdown'], 2)}x"
        )


if __name__ == "__main__":
    main()
