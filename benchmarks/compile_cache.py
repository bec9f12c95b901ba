"""Cold compile against a disk-cache hit, each in a fresh process.

    python benchmarks/compile_cache.py [--runs 5]

For a small program and two 20-layer MLPs, each run starts a new interpreter that lowers
the program (not timed) and times `cyxla.compile_program`: with an empty cache directory
(a cold compile, storing the entry included) and with one that holds the entry (a hit:
reading, checking and loading it). Prints the medians, their ratio, and how much of a hit
is the plugin's own PJRT_Executable_DeserializeAndLoad, which the cache cannot shorten.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = """
import dataclasses, json, sys, time
import jax, jax.numpy as jnp
import cyxla
from cyxla._run import backend as _backend

def small(x, w):
    return jnp.tanh(x @ w) + jnp.sin(x)

def mlp(activation):
    def mlp(x, layers):
        for w, b in layers:
            x = activation(x @ w + b)
        return x
    return mlp

def layers(width):
    return [(jax.ShapeDtypeStruct((width, width), f32), jax.ShapeDtypeStruct((width,), f32))] * 20

f32 = jnp.float32
programs = {
    "small": (small, [jax.ShapeDtypeStruct((8, 16), f32), jax.ShapeDtypeStruct((16, 16), f32)]),
    "mlp20-tanh-256": (mlp(jnp.tanh), [jax.ShapeDtypeStruct((64, 256), f32), layers(256)]),
    "mlp20-gelu-512": (mlp(jax.nn.gelu), [jax.ShapeDtypeStruct((64, 512), f32), layers(512)]),
}
fn, args = programs[sys.argv[1]]
program = cyxla.lower(fn, args)
loaded = cyxla.initialize()  # loading the plugin is not part of compiling


class Timed:  # the plugin's deserialize, timed
    def __init__(self, runtime):
        self.runtime, self.seconds = runtime, 0.0

    def deserialize(self, *args):
        start = time.perf_counter()
        try:
            return self.runtime.deserialize(*args)
        finally:
            self.seconds += time.perf_counter() - start

    def __getattr__(self, name):
        return getattr(self.runtime, name)


timed = Timed(loaded.runtime)
_backend._loaded = dataclasses.replace(loaded, runtime=timed)
start = time.perf_counter()
_, stats = cyxla.compile_program(program)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "hit": stats.cache_hit, "error": stats.cache_error,
                  "deserialize": timed.seconds}))
"""

PROGRAMS = ("small", "mlp20-tanh-256", "mlp20-gelu-512")


def _run(name: str, cache: Path) -> dict[str, object]:
    env = {**os.environ, "CYXLA_CACHE_DIR": str(cache)}
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, name], capture_output=True, text=True, env=env, check=False
    )
    if result.returncode != 0:
        raise SystemExit(f"the {name} child failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _median(outcomes: list[dict[str, object]], field: str) -> float:
    return statistics.median(float(o[field]) for o in outcomes)  # type: ignore[arg-type]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per figure")
    runs = parser.parse_args().runs
    print(f"median of {runs} fresh processes each; time of cyxla.compile_program")
    for name in PROGRAMS:
        with tempfile.TemporaryDirectory() as scratch:
            cold = [_run(name, Path(scratch) / f"cold{run}") for run in range(runs)]
            hits = [_run(name, Path(scratch) / "cold0") for _ in range(runs)]
        assert not any(o["hit"] or o["error"] for o in cold), cold
        assert all(o["hit"] and not o["error"] for o in hits), hits
        cold_s, hit_s = _median(cold, "seconds"), _median(hits, "seconds")
        plugin_s = _median(hits, "deserialize")
        print(
            f"{name:>15}: cold compile {cold_s * 1e3:7.1f} ms, cache hit {hit_s * 1e3:6.1f} ms "
            f"({cold_s / hit_s:4.1f}x faster; the plugin's deserialize {plugin_s * 1e3:5.1f} ms "
            f"of it)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
