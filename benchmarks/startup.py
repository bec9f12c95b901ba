"""A new process's first `compile_program`: cold against a warm disk cache; and a lean
process's start to its first result against a bare PJRT process.

    python benchmarks/startup.py [--rounds 7] [--starts 7]

Exports the 20-layer MLP (16x64 input, 64x64 weights, tanh) to a program file once. Each
round then starts two fresh interpreters, interleaved, that import cyxla, load the file
(neither timed) and time `compile_program`, which also loads the plugin and creates its
client: one with an empty cache directory (cold: the FFI probe compile, the compile, the
stores), one with a cache that earlier runs filled (warm: the probe's verdict, the plugin
scan and the executable read back), and one with only the executable in it (as before
the start-up caches: the probe compile and the scan run). Prints the medians, their
ratios, the spread, and where the warm run's time goes (plugin scan and load, client,
custom calls, the cache lookup).

Then the lean start: a fresh interpreter that imports cyxla and NumPy, loads the
standalone example's MLP (examples/standalone, one 16x64 input) from its program file,
compiles it (a hit in the warm disk cache) and runs it, and never imports JAX; timed from
before the process is started to its first result, with its phases (Python's start and
the imports, the load, the compile, the run), and its peak resident set against
benchmarks/bare_pjrt.c, a C process that compiles and runs the same StableHLO with nothing
but the PJRT C API; and the same Python process with JAX imported first, as every process
was before cyxla imported JAX only where needed. The kinds of process alternate;
medians and spread (min to max). The lean start runs once more with NumPy's OpenBLAS
kept to one thread (OPENBLAS_NUM_THREADS=1), which a process that does no linear algebra
in NumPy can afford: at import OpenBLAS starts a thread per CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_EXPORT = """
import sys
import jax, jax.numpy as jnp
import cyxla

def mlp(x, weights):
    for w in weights:
        x = jnp.tanh(x @ w)
    return x

f32 = jnp.float32
x = jax.ShapeDtypeStruct((16, 64), f32)
cyxla.lower(mlp, [x, [jax.ShapeDtypeStruct((64, 64), f32)] * 20]).save(sys.argv[1])
"""

_CHILD = """
import json, sys, time
import cyxla
from cyxla._run import backend as _backend
from cyxla._run import plugins as _plugins
from cyxla._ffi import registry

phases = {}

def timed(module, name, phase):
    function = getattr(module, name)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            phases[phase] = phases.get(phase, 0.0) + time.perf_counter() - start
    setattr(module, name, wrapper)

timed(_plugins, "discover", "plugin scan")
timed(_plugins, "load_library", "plugin load")
timed(_backend, "_client", "client")
timed(registry, "register_on_load", "custom calls")
program = cyxla.load_program(sys.argv[1])
start = time.perf_counter()
_, stats = cyxla.compile_program(program)
seconds = time.perf_counter() - start
phases["cache lookup"] = stats.load_seconds
print(json.dumps({"seconds": seconds, "hit": stats.cache_hit, "phases": phases}))
"""


# Run from a file, not through cyxla.lower, so the process never imports JAX: it reports
# when each phase ended, its first output, and whether JAX (or jaxlib, or ml_dtypes) came in.
_LEAN = """
import time
import sys
import numpy as np
import cyxla
imported = time.time_ns()
program = cyxla.load_program(sys.argv[1])
loaded = time.time_ns()
executable, statistics = cyxla.compile_program(program)
compiled = time.time_ns()
x = np.fromfile(sys.argv[2], np.float32, count=16 * 64).reshape(16, 64)
(y,) = executable.run([x])
print("first_result_unix_ns", time.time_ns())
print("imported_unix_ns", imported)
print("loaded_unix_ns", loaded)
print("compiled_unix_ns", compiled)
print("first_output", float(y.flat[0]))
print("cache_hit", int(statistics.cache_hit))
print("imports_jax", int(any(m in sys.modules for m in ("jax", "jaxlib", "ml_dtypes"))))
# CPU time (user and system) of the whole process: what a loaded machine inflates least.
import resource
usage = resource.getrusage(resource.RUSAGE_SELF)
print("cpu_ms", (usage.ru_utime + usage.ru_stime) * 1e3)
with open("/proc/self/status") as status:
    print("peak_rss_kib", next(l for l in status if l.startswith("VmHWM:")).split()[1])
"""


def _run(code: str, *args: str, cache: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "CYXLA_CACHE_DIR": str(cache)},
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"a child failed:\n{result.stderr}")
    return result.stdout


def _child(program: Path, cache: Path) -> dict[str, Any]:
    return json.loads(_run(_CHILD, str(program), cache=cache).splitlines()[-1])


def _after_load(run: dict[str, Any]) -> float:
    """A run's seconds less the plugin library's load."""
    return float(run["seconds"]) - float(run["phases"].get("plugin load", 0.0))


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _fields(output: str) -> dict[str, float]:
    return {k: float(v) for k, v in (line.split() for line in output.splitlines() if line)}


def _launch(
    command: list[str], cache: Path, env: dict[str, str] | None = None
) -> tuple[dict[str, float], int]:
    """Runs `command`; its output's fields and the wall-clock time it was started at."""
    started = time.time_ns()
    environment = {**os.environ, "CYXLA_CACHE_DIR": str(cache), **(env or {})}
    result = subprocess.run(command, capture_output=True, text=True, env=environment)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}")
    return _fields(result.stdout), started


def _spread(values: list[float], unit: str) -> str:
    return (
        f"median {statistics.median(values):7.1f} {unit} "
        f"(spread {min(values):.1f} to {max(values):.1f})"
    )


def lean_start(starts: int) -> None:
    """The lean process's start to first result and peak resident set (module docstring)."""
    sys.path.insert(0, str(ROOT / "examples" / "standalone"))
    import export  # the standalone example's MLP

    from cyxla._run import plugins as _plugins

    plugin = _plugins.entry_for("cpu").library_path()
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        export.export(root, lambda program, path: program.save(path))
        program, inputs, cache = root / "mlp.cyxla", root / "inputs.f32", root / "cache"
        bare = root / "bare_pjrt"
        compiler = shutil.which("cc") or shutil.which("gcc") or "cc"
        source = ROOT / "benchmarks" / "bare_pjrt.c"
        includes = [f"-I{ROOT / 'src'}", f"-I{ROOT / 'include'}"]
        subprocess.run(
            [compiler, "-O2", *includes, str(source), "-ldl", "-o", str(bare)], check=True
        )
        lean = [sys.executable, "-c", _LEAN, str(program), str(inputs)]
        _launch(lean, cache)  # fills the disk cache, and the OS's page cache
        # The same process with JAX imported first: what it would cost if cyxla imported it.
        with_jax = [sys.executable, "-c", "import jax\n" + _LEAN, str(program), str(inputs)]
        # And with NumPy's OpenBLAS kept to one thread: at import it starts one per CPU.
        one_thread = {"OPENBLAS_NUM_THREADS": "1"}
        runs, bare_runs, jax_runs, blas_runs = [], [], [], []
        for _ in range(starts):
            kinds = ((lean, None, runs), (with_jax, None, jax_runs), (lean, one_thread, blas_runs))
            for command, env, into in kinds:
                fields, started = _launch(command, cache, env)
                into.append(
                    {k: (v - started) / 1e6 if k.endswith("_ns") else v for k, v in fields.items()}
                )
            bare_runs.append(_launch([str(bare), plugin, str(program), str(inputs)], cache)[0])
    if not all(r["cache_hit"] for r in runs) or any(r["imports_jax"] for r in runs):
        raise SystemExit("a lean start missed the disk cache or imported JAX")
    # bare_pjrt prints its output with six significant digits.
    if any(
        abs(r["first_output"] - b["first_output"]) > 1e-5 * max(1.0, abs(b["first_output"]))
        for r, b in zip(runs, bare_runs, strict=True)
    ):
        raise SystemExit("the lean start and bare PJRT disagree on the first output")
    print(f"lean start (load_program, compile_program from the warm cache, run), {starts} starts")
    first = [r["first_result_unix_ns"] for r in runs]
    print(f"  start to first result          {_spread(first, 'ms')}")
    jax_first = [r["first_result_unix_ns"] for r in jax_runs]
    print(f"    the same, JAX imported first {_spread(jax_first, 'ms')}")
    blas_first = [r["first_result_unix_ns"] for r in blas_runs]
    print(f"    OPENBLAS_NUM_THREADS=1       {_spread(blas_first, 'ms')}")
    cpu = [r["cpu_ms"] for r in runs]
    print(f"  CPU time (user+sys)            {_spread(cpu, 'ms')}")
    jax_cpu = [r["cpu_ms"] for r in jax_runs]
    print(f"    the same, JAX imported first {_spread(jax_cpu, 'ms')}")
    phases = [
        ("Python start and imports", "imported_unix_ns", None),
        ("load_program", "loaded_unix_ns", "imported_unix_ns"),
        ("compile_program (cache hit)", "compiled_unix_ns", "loaded_unix_ns"),
        ("run, first result", "first_result_unix_ns", "compiled_unix_ns"),
    ]
    for label, end, begin in phases:
        values = [r[end] - (r[begin] if begin else 0.0) for r in runs]
        print(f"    {label:<28} {_spread(values, 'ms')}")
    lean_rss = [r["peak_rss_kib"] / 1024 for r in runs]
    bare_rss = [b["peak_rss_kib"] / 1024 for b in bare_runs]
    print(f"  peak RSS, lean Python          {_spread(lean_rss, 'MiB')}")
    print(f"  peak RSS, bare PJRT (compiles) {_spread(bare_rss, 'MiB')}")
    jax_rss = [r["peak_rss_kib"] / 1024 for r in jax_runs]
    print(f"  peak RSS, JAX imported first   {_spread(jax_rss, 'MiB')}")
    ratio = statistics.median(lean_rss) / statistics.median(bare_rss)
    print(f"  ratio lean / bare PJRT         {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--starts", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        program = root / "mlp20.cyxla"
        _run(_EXPORT, str(program), cache=root / "unused")
        warm = root / "warm"
        _child(program, warm)  # fills the warm cache
        cold_runs, warm_runs, executable_runs = [], [], []
        for index in range(args.rounds):
            cold_runs.append(_child(program, root / f"cold-{index}"))
            warm_runs.append(_child(program, warm))
            for kind in ("probes", "scans"):
                shutil.rmtree(warm / kind, ignore_errors=True)
            executable_runs.append(_child(program, warm))
    if any(r["hit"] for r in cold_runs) or not all(r["hit"] for r in warm_runs + executable_runs):
        raise SystemExit("a cold run hit the cache or a warm one missed it")
    cold = [float(r["seconds"]) for r in cold_runs]  # type: ignore[arg-type]
    hit = [float(r["seconds"]) for r in warm_runs]  # type: ignore[arg-type]
    executable_only = [float(r["seconds"]) for r in executable_runs]  # type: ignore[arg-type]
    print(f"20-layer MLP, first compile_program of a new process, {args.rounds} rounds")
    for label, times in (
        ("cold (empty cache)", cold),
        ("warm, executable only", executable_only),
        ("warm cache", hit),
    ):
        print(f"  {label:<22} median {_ms(statistics.median(times))}, ", end="")
        print(f"min {_ms(min(times))}, max {_ms(max(times))}")
    cold_median = statistics.median(cold)
    print(f"  cold / warm: {cold_median / statistics.median(hit):.1f}x, ", end="")
    print(f"cold / executable only: {cold_median / statistics.median(executable_only):.1f}x")
    # Loading the plugin library (dlopen, its static initializers) is the same in every
    # run and no cache can skip it: the ratio of the rest is what the caches decide.
    cold_rest = [_after_load(r) for r in cold_runs]
    hit_rest = [_after_load(r) for r in warm_runs]
    print(
        f"  after the plugin load: cold {_ms(statistics.median(cold_rest))}, warm "
        f"{_ms(statistics.median(hit_rest))}, "
        f"{statistics.median(cold_rest) / statistics.median(hit_rest):.1f}x"
    )
    print("  warm run, median per phase:")
    for phase in warm_runs[0]["phases"]:  # type: ignore[union-attr]
        values = [float(r["phases"].get(phase, 0.0)) for r in warm_runs]  # type: ignore[union-attr]
        print(f"    {phase:<14} {_ms(statistics.median(values))}")
    lean_start(args.starts)


if __name__ == "__main__":
    main()
