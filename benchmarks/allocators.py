"""The process's allocator against the cost of one native call, each in a fresh process.

    python benchmarks/allocators.py [--repeats 5] [--rounds 11] [--clock cpu|wall]
                                    [--programs sin3,mlp64,ew1m] [--allocators glibc,...]
                                    [--json]

The CPU plugin makes about 46 heap allocations per execute (its buffers, events and the
execution's bookkeeping) through the process's malloc, so the allocator is part of every
call through PJRT's executor; the children run with CYXLA_RUNNER=pjrt (a program on the
kernel runner makes no allocation per call). For each allocator below, a fresh
interpreter runs `python -m cyxla bench` on the native path and the floor (sin3, mlp64,
ew1m), timed by default by the process's CPU time, which the other processes of a busy
machine do not inflate (but which counts the plugin's worker threads, spinning included:
ew1m runs on them). Repeats are interleaved:
every allocator runs once per repeat, in a shuffled order, and each allocator's ratio to
glibc's defaults is taken within a repeat, then its median and interquartile range over
repeats printed.

Allocators: glibc with its defaults; glibc with tunables (GLIBC_TUNABLES: a larger
tcache, and large blocks kept instead of returned to the kernel); the latter set with
mallopt from inside the running process, as a program that cannot set the environment
before it starts would; jemalloc, tcmalloc and mimalloc through LD_PRELOAD (Debian's
libjemalloc2, libtcmalloc-minimal4, libmimalloc2.0; a missing one is skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

LIBRARIES = Path("/usr/lib/x86_64-linux-gnu")
PROGRAMS = ("sin3", "mlp64", "ew1m")
PATHS = ("native", "pjrt_floor")
#: The paths whose page faults --faults counts.
FAULT_PATHS = ("native", "pjrt_floor", "run", "jax_jit")

#: glibc's tcache holds 7 blocks per size by default: a call that frees more blocks of
#: one size than that sends the rest to the slower bins.
TCACHE = "glibc.malloc.tcache_count=1024"
#: Large blocks (the 4 MiB buffers of ew1m) from the heap, never unmapped or trimmed:
#: freed memory is reused as it is, with no page faults on the next call.
KEEP = (
    "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824"
    ":glibc.malloc.top_pad=67108864"
)

#: The same as KEEP, set with mallopt(3) by the running process before it imports cyxla.
_MALLOPT = """
import ctypes, runpy, sys
libc = ctypes.CDLL(None)
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
for option, value in ((M_MMAP_THRESHOLD, 32 << 20), (M_TRIM_THRESHOLD, 1 << 30),
                      (M_TOP_PAD, 64 << 20)):
    assert libc.mallopt(option, value) == 1, option
sys.argv = ["cyxla", *sys.argv[1:]]
runpy.run_module("cyxla", run_name="__main__")
"""


#: Minor page faults per call of each path on one program, in the child: the mechanism
#: behind a large output's cost, counted exactly where its time is too noisy to compare.
_FAULTS = """
import json, resource, sys
from cyxla._bench import paths, programs
program = next(p for p in programs.PROGRAMS if p.key == sys.argv[1])
setup = paths.setup(program, 1)
faults = {}
for name in sys.argv[2].split(","):
    loop = paths.PATHS[name].make(setup)
    loop(5)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    loop(50)
    faults[name] = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 50
print(json.dumps(faults))
"""


@dataclass(frozen=True)
class Allocator:
    name: str
    description: str
    environment: dict[str, str] = field(default_factory=dict)
    #: Python code that runs the bench instead of `-m cyxla` (mallopt from inside).
    prelude: str | None = None
    #: The library LD_PRELOAD loads, checked to be mapped in the child.
    preload: str | None = None


def _preloaded(name: str, library: str, description: str, **environment: str) -> Allocator:
    path = str(LIBRARIES / library)
    return Allocator(name, description, {"LD_PRELOAD": path, **environment}, preload=path)


ALLOCATORS = (
    Allocator("glibc", "glibc malloc, defaults"),
    Allocator("glibc_tcache", "GLIBC_TUNABLES " + TCACHE, {"GLIBC_TUNABLES": TCACHE}),
    Allocator("glibc_keep", "GLIBC_TUNABLES " + KEEP, {"GLIBC_TUNABLES": KEEP}),
    Allocator(
        "glibc_both", "GLIBC_TUNABLES, both of the above", {"GLIBC_TUNABLES": f"{TCACHE}:{KEEP}"}
    ),
    Allocator("glibc_mallopt", "mallopt at start, as glibc_keep", prelude=_MALLOPT),
    _preloaded("jemalloc", "libjemalloc.so.2", "LD_PRELOAD jemalloc 5"),
    _preloaded(
        "jemalloc_keep",
        "libjemalloc.so.2",
        "jemalloc, freed pages kept (MALLOC_CONF dirty/muzzy_decay_ms:-1)",
        MALLOC_CONF="dirty_decay_ms:-1,muzzy_decay_ms:-1",
    ),
    _preloaded("tcmalloc", "libtcmalloc_minimal.so.4", "LD_PRELOAD tcmalloc (gperftools)"),
    _preloaded("mimalloc", "libmimalloc.so.2", "LD_PRELOAD mimalloc 2"),
)


def _environment(allocator: Allocator) -> dict[str, str]:
    # On PJRT's executor, whose allocations are what is measured: a program on the kernel
    # runner allocates nothing per call.
    return {**os.environ, "CYXLA_RUNNER": "pjrt", **allocator.environment}


def _available(allocator: Allocator) -> bool:
    """Whether the allocator's library exists and is really mapped in a child."""
    if allocator.preload is None:
        return True
    if not Path(allocator.preload).exists():
        return False
    maps = subprocess.run(
        [sys.executable, "-c", "print(open('/proc/self/maps').read())"],
        capture_output=True,
        text=True,
        env=_environment(allocator),
        check=True,
    ).stdout
    return Path(allocator.preload).name in maps


def _bench(
    allocator: Allocator, programs: list[str], args: argparse.Namespace
) -> dict[str, dict[str, float]]:
    """Median ns per call of each program and path in one fresh process."""
    arguments = ["bench", "--json", "--rounds", str(args.rounds), "--clock", args.clock]
    arguments += ["--programs", ",".join(programs), "--paths", ",".join(PATHS)]
    command = (
        [sys.executable, "-c", allocator.prelude]
        if allocator.prelude
        else [
            sys.executable,
            "-m",
            "cyxla",
        ]
    )
    result = subprocess.run(
        [*command, *arguments],
        capture_output=True,
        text=True,
        env=_environment(allocator),
        timeout=1800,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{allocator.name}: bench failed:\n{result.stderr}")
    report = json.loads(result.stdout)["programs"]
    return {p: {path: report[p][path]["median_ns"] for path in PATHS} for p in programs}


def _faults(allocator: Allocator, program: str) -> dict[str, float]:
    """Minor page faults per call of each path on `program` in one fresh process."""
    prelude = (allocator.prelude or "").replace(
        'runpy.run_module("cyxla", run_name="__main__")', ""
    )
    result = subprocess.run(
        [sys.executable, "-c", prelude + _FAULTS, program, ",".join(FAULT_PATHS)],
        capture_output=True,
        text=True,
        env=_environment(allocator),
        timeout=1800,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{allocator.name}: counting faults failed:\n{result.stderr}")
    return json.loads(result.stdout)


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    low, _, high = statistics.quantiles(values, n=4, method="inclusive")
    return statistics.median(values), low, high


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="processes per allocator (5)")
    parser.add_argument("--rounds", type=int, default=11, help="bench rounds per process (11)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="(cpu)")
    parser.add_argument("--programs", default=",".join(PROGRAMS), help="(sin3,mlp64,ew1m)")
    parser.add_argument(
        "--allocators",
        default=",".join(a.name for a in ALLOCATORS),
        help="comma-separated, glibc always included (all)",
    )
    parser.add_argument(
        "--faults",
        metavar="PROGRAM",
        help="instead of timing, count the page faults per call on PROGRAM (e.g. ew1m)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    programs = args.programs.split(",")
    chosen = {"glibc", *args.allocators.split(",")}
    allocators = [a for a in ALLOCATORS if a.name in chosen and _available(a)]
    for missing in sorted(chosen - {a.name for a in allocators}):
        print(f"skipped {missing}: its library is not installed", file=sys.stderr)
    if args.faults:
        print(f"{args.faults}: minor page faults per call ({', '.join(FAULT_PATHS)})")
        for allocator in allocators:
            counts = _faults(allocator, args.faults)
            cells = "  ".join(f"{counts[path]:8.1f}" for path in FAULT_PATHS)
            print(f"  {allocator.name:15} {cells}  {allocator.description}")
        return 0
    rng = random.Random(0)
    # runs[allocator][repeat][program][path]: median ns per call.
    runs: dict[str, list[dict[str, dict[str, float]]]] = {a.name: [] for a in allocators}
    for repeat in range(max(1, args.repeats)):
        order = list(allocators)
        rng.shuffle(order)
        for allocator in order:
            print(f"repeat {repeat + 1}: {allocator.name}", file=sys.stderr, flush=True)
            runs[allocator.name].append(_bench(allocator, programs, args))
    results: dict[str, dict[str, dict[str, object]]] = {}
    for program in programs:
        results[program] = {}
        for allocator in allocators:
            row: dict[str, object] = {"description": allocator.description}
            for path in PATHS:
                mine = [r[program][path] for r in runs[allocator.name]]
                base = [r[program][path] for r in runs["glibc"]]
                ratio = _quartiles([m / b for m, b in zip(mine, base, strict=True)])
                row[path] = {
                    "median_ns": round(statistics.median(mine), 1),
                    "ratio_to_glibc": round(ratio[0], 3),
                    "ratio_to_glibc_quartiles": [round(ratio[1], 3), round(ratio[2], 3)],
                }
            results[program][allocator.name] = row
    if args.json:
        print(json.dumps({"repeats": args.repeats, "clock": args.clock, "programs": results}))
        return 0
    print(
        f"{args.repeats} processes per allocator, interleaved, {args.clock} clock; median us "
        "per call; ratio to "
        "glibc's defaults within a repeat: median (first-third quartile)"
    )
    for program, rows in results.items():
        print(f"\n{program}")
        print(f"  {'allocator':15} {'native':>10} {'vs glibc':20} {'floor':>10} {'vs glibc':20}")
        for name, row in rows.items():
            cells = []
            for path in PATHS:
                cell = row[path]
                assert isinstance(cell, dict)
                low, high = cell["ratio_to_glibc_quartiles"]
                ratio = f"{cell['ratio_to_glibc']:.2f}x ({low:.2f}-{high:.2f})"
                cells.append(f"{cell['median_ns'] / 1e3:>7.2f} us {ratio:20}")
            print(f"  {name:15} {' '.join(cells)} {row['description']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
