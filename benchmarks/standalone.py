"""The standalone path (a C++ application with libcyxla, no Python) against the Python-hosted
one, on the 20-layer MLP of examples/standalone (16x64 input, 64x64 weights).

    python benchmarks/standalone.py [--rounds 7] [--calls 200] [--starts 7] [--sin3-only]

Prints, with medians over rounds and their spread (min to max):
  0. process start to first result of sin3 (sin(x) * 2 on f32[3], the kernel runner's)
     with a warm disk cache, from a C program (tests/native/first_result.c): the plugin
     left unopened (its facts recorded in the cache) against CYXLA_DEFER_PLUGIN=0, which
     opens it at cyxla_open_runtime as before; starts alternate between the two;
  1. per call: the application's own loop (cyxla_execute from C++) against the same loop in
     a Python process (cyxla._benchmark.execute_loop on the executable compile_program
     made); rounds alternate between the two, so both see the same machine load;
  2. process start to first result with a warm disk cache: the application (open the
     runtime, load the file from the disk cache, run) against a Python process that
     imports cyxla, lowers the function, compiles it (a hit in Python's cache) and runs it;
  3. peak resident set: the application against a bare PJRT process that compiles and runs
     the same StableHLO (benchmarks/bare_pjrt.c), both compiling, and the application
     again with its cache warm.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import cyxla as cx
from cyxla import _benchmark
from cyxla._run import plugins as _plugins

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "standalone"
sys.path[:0] = [str(EXAMPLE), str(ROOT / "tests")]

import export  # noqa: E402

from program_file_writer import save  # noqa: E402

_PYTHON_START = """
import sys, time
sys.path.insert(0, {example!r})
import numpy as np
import jax, jax.numpy as jnp
import cyxla as cx
import export
program = cx.lower(export.make_mlp(), [jax.ShapeDtypeStruct((16, 64), jnp.float32)])
executable, statistics = cx.compile_program(program)
x = np.fromfile({inputs!r}, np.float32, count=16 * 64).reshape(16, 64)
executable.run([x])
print("first_result_unix_ns", time.time_ns())
print("cache_hit", statistics.cache_hit)
"""


def tool(*names: str) -> str:
    for name in names:
        beside = Path(sys.executable).parent / name
        if beside.is_file():
            return str(beside)
        if shutil.which(name):
            return str(shutil.which(name))
    raise SystemExit(f"needs {' or '.join(names)} (pip install 'cyxla[test]')")


def field(output: str, name: str) -> float:
    for line in output.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise RuntimeError(f"no {name} in:\n{output}")


def launch(command: list[str], env: dict[str, str]) -> tuple[str, int]:
    """Runs `command`; returns its output and the wall-clock time it was started at."""
    started = time.time_ns()
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout, started


def summary(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):10.1f}  (spread {min(values):.1f} to {max(values):.1f})"
    )


def sin3_start(plugin: str, work: Path, starts: int) -> None:
    """Section 0: process start to sin3's first result, warm cache, plugin deferred or not."""
    import jax
    import jax.numpy as jnp

    program = work / "sin3.cyxla"
    cx.lower(lambda x: jnp.sin(x) * 2, [jax.ShapeDtypeStruct((3,), jnp.float32)]).save(program)
    binary = work / "first_result"
    library = Path(cx.get_library())
    subprocess.run(
        [
            tool("cc", "gcc"),
            "-std=c11",
            "-O2",
            f"-I{cx.get_include()[0]}",
            str(ROOT / "tests" / "native" / "first_result.c"),
            str(library),
            f"-Wl,-rpath,{library.parent}",
            "-lpthread",
            "-o",
            str(binary),
        ],
        check=True,
    )
    env = {**os.environ, "CYXLA_PJRT_PLUGIN": plugin, "CYXLA_CACHE_DIR": str(work / "sin3-cache")}
    env.pop("CYXLA_RUNNER", None)
    env.pop("CYXLA_DEFER_PLUGIN", None)
    opened = {**env, "CYXLA_DEFER_PLUGIN": "0"}
    launch([str(binary), str(program)], env)  # compiles, stores, records the plugin's facts
    deferred_ms, opened_ms, mapped = [], [], set()
    for _ in range(starts):
        out, started = launch([str(binary), str(program)], env)
        deferred_ms.append((field(out, "first_result_unix_ns") - started) / 1e6)
        mapped.add(out.split("plugin_mapped ")[1].split()[0])
        out, started = launch([str(binary), str(program)], opened)
        opened_ms.append((field(out, "first_result_unix_ns") - started) / 1e6)
    print(f"sin3, process start to first result ({starts} starts each, interleaved), ms:")
    print(f"  plugin deferred (not opened)    {summary(deferred_ms)}  (plugin mapped: {mapped})")
    print(f"  CYXLA_DEFER_PLUGIN=0 (opened)   {summary(opened_ms)}")
    ratio = statistics.median(opened_ms) / statistics.median(deferred_ms)
    print(f"  ratio opened / deferred         {ratio:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--starts", type=int, default=7)
    parser.add_argument("--sin3-only", action="store_true", help="section 0 alone")
    args = parser.parse_args()

    plugin = _plugins.entry_for("cpu").library_path()
    work = Path(tempfile.mkdtemp(prefix="cyxla-standalone-"))
    sin3_start(plugin, work, args.starts)
    if args.sin3_only:
        shutil.rmtree(work, ignore_errors=True)
        return 0
    data = work / "data"
    program = export.export(data, save)
    cmake = tool("cmake")
    subprocess.run(
        [
            cmake,
            "-S",
            str(EXAMPLE),
            "-B",
            str(work / "build"),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_PREFIX_PATH={cx.get_cmake_dir()}",
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run([cmake, "--build", str(work / "build")], check=True, capture_output=True)
    bare = work / "bare_pjrt"
    subprocess.run(
        [
            tool("cc", "gcc"),
            "-std=c11",
            "-O2",
            f"-I{ROOT / 'src'}",
            f"-I{ROOT / 'include'}",
            str(ROOT / "benchmarks" / "bare_pjrt.c"),
            "-ldl",
            "-o",
            str(bare),
        ],
        check=True,
    )
    application = str(work / "build" / "standalone")
    env = {**os.environ, "CYXLA_PJRT_PLUGIN": plugin, "CYXLA_CACHE_DIR": str(work / "cache")}
    launch([application, str(data), "0", "0"], env)  # warms the disk cache

    # 1. Per call, interleaved.
    executable, _ = cx.compile_program(program)
    # Aligned like the application's HostArrays, so both read the input in place.
    x = cx.zeros((16, 64), np.float32)
    x[...] = np.fromfile(data / "inputs.f32", np.float32, count=16 * 64).reshape(16, 64)
    y = cx.zeros((16, 64), np.float32)
    standalone_ns, hosted_ns = [], []
    for _ in range(args.rounds):
        out, _ = launch([application, str(data), "--bench", str(args.calls)], env)
        standalone_ns.append(field(out, "per_call_ns"))
        batches = [
            _benchmark.execute_loop(executable.handle, [x], [y], args.calls) / args.calls * 1e9
            for _ in range(5)
        ]
        hosted_ns.append(statistics.median(batches))
    print(f"per call ({args.rounds} rounds of 5 x {args.calls} calls), ns:")
    print(f"  standalone C++ (libcyxla)       {summary(standalone_ns)}")
    print(f"  Python-hosted native (_benchmark) {summary(hosted_ns)}")
    ratio = statistics.median(standalone_ns) / statistics.median(hosted_ns)
    print(f"  ratio standalone / hosted        {ratio:.3f}")

    # 2. Process start to first result, warm caches (Python's warmed by one run first).
    python_env = {**env, "PYTHONPATH": str(EXAMPLE)}
    code = _PYTHON_START.format(example=str(EXAMPLE), inputs=str(data / "inputs.f32"))
    launch([sys.executable, "-c", code], python_env)
    native_ms, python_ms, hits = [], [], []
    for _ in range(args.starts):
        out, started = launch([application, str(data), "0", "0"], env)
        native_ms.append((field(out, "first_result_unix_ns") - started) / 1e6)
        out, started = launch([sys.executable, "-c", code], python_env)
        python_ms.append((field(out, "first_result_unix_ns") - started) / 1e6)
        hits.append("cache_hit True" in out)
    print(f"process start to first result ({args.starts} starts each, interleaved), ms:")
    print(f"  standalone, disk cache warm     {summary(native_ms)}")
    print(f"  Python import+lower+compile     {summary(python_ms)}  (cache hits: {sum(hits)})")
    speedup = statistics.median(python_ms) / statistics.median(native_ms)
    print(f"  ratio Python / standalone       {speedup:.2f}")

    # 3. Peak resident set.
    cold = {**env, "CYXLA_CACHE_DIR": ""}
    rss_cold = [
        field(launch([application, str(data), "0", "0"], cold)[0], "peak_rss_kib") for _ in range(3)
    ]
    rss_warm = [
        field(launch([application, str(data), "0", "0"], env)[0], "peak_rss_kib") for _ in range(3)
    ]
    rss_bare = [
        field(
            launch([str(bare), plugin, str(data / "mlp.cyxla"), str(data / "inputs.f32")], env)[0],
            "peak_rss_kib",
        )
        for _ in range(3)
    ]
    print("peak resident set (3 runs each), MiB:")
    for label, values in (
        ("standalone, compiling", rss_cold),
        ("standalone, cache warm", rss_warm),
        ("bare PJRT, compiling", rss_bare),
    ):
        print(f"  {label:31} {statistics.median(values) / 1024:8.1f}")
    bare_median = statistics.median(rss_bare)
    cold_ratio = statistics.median(rss_cold) / bare_median
    warm_ratio = statistics.median(rss_warm) / bare_median
    print(f"  ratio standalone / bare PJRT    {cold_ratio:.3f} compiling, {warm_ratio:.3f} warm")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
