"""A new process's first `compile_program`: cold against a warm disk cache.

    python benchmarks/startup.py [--rounds 7]

Exports the 20-layer MLP (16x64 input, 64x64 weights, tanh) to a program file once. Each
round then starts two fresh interpreters, interleaved, that import cyxla, load the file
(neither timed) and time `compile_program`, which also loads the plugin and creates its
client: one with an empty cache directory (cold: the FFI probe compile, the compile, the
stores), one with a cache that earlier runs filled (warm: the probe's verdict, the plugin
scan and the executable read back), and one with only the executable in it (as before
the start-up caches: the probe compile and the scan run). Prints the medians, their
ratios, the spread, and where the warm run's time goes (plugin scan and load, client,
custom calls, the cache lookup).
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
from pathlib import Path
from typing import Any

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
from cyxla import _backend, _plugins
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
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


if __name__ == "__main__":
    main()
