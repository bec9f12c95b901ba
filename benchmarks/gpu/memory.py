"""The GPU memory a process holds with cyxla, against jax.jit's default, each in a process
of its own (issue 34: "no preallocation", measured). Prints one JSON object.

    python benchmarks/gpu/memory.py [PLATFORM]     (default cuda; cpu checks the script)

The device's used memory is read with nvidia-smi, device-wide, since a container may not
show processes by pid: before each process starts, after its runtime loads, and after its
first runs (mlp64 and a 1024 x 1024 matmul). JAX's CUDA client preallocates 75% of the
device by default; cyxla's takes memory as it needs it (docs/guide/plugins.md). cyxla's
process keeps JAX on the CPU (JAX_PLATFORMS=cpu), where it only traces and lowers, so
that JAX's own GPU client does not start there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

#: What a child does, in steps; after each it prints "step NAME" and waits for a line on
#: stdin, so that the parent reads the device's memory in between.
_PROGRAMS = """
import sys
import numpy as np, jax, jax.numpy as jnp

def checkpoint(name):
    print("step", name, flush=True)
    sys.stdin.readline()

rng = np.random.default_rng(0)
mlp = (lambda x, w: jnp.tanh(x @ w).sum(axis=1),
       [rng.standard_normal((64, 64), np.float32), rng.standard_normal((64, 64), np.float32)])
matmul = (jnp.matmul, [rng.standard_normal((1024, 1024), np.float32)] * 2)
"""

CYXLA = (
    _PROGRAMS
    + """
import cyxla as cx
cx.initialize(platform=PLATFORM)
checkpoint("runtime loaded")
for fn, args in (mlp, matmul):
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
    executable, _ = cx.compile_program(cx.lower(fn, specs))
    for _ in range(10):
        executable.run(args)
checkpoint("after the first runs")
"""
)

JAX = (
    _PROGRAMS
    + """
device = jax.devices(PLATFORM)[0]
jax.block_until_ready(jax.device_put(np.zeros(1, np.float32), device))
checkpoint("runtime loaded")
for fn, args in (mlp, matmul):
    on_device = jax.device_put(args, device)
    for _ in range(10):
        jax.block_until_ready(jax.jit(fn)(*on_device))
checkpoint("after the first runs")
"""
)


def device_mib(what: str) -> int | None:
    """nvidia-smi's `memory.used` or `memory.total` of the device in MiB, or None without
    nvidia-smi."""
    if shutil.which("nvidia-smi") is None:
        return None
    text = subprocess.run(
        ["nvidia-smi", f"--query-gpu=memory.{what}", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(text.split()[0])


def measure(code: str, platform: str, env: dict[str, str]) -> dict[str, int | None]:
    """The device's used memory before the child, and at each of its checkpoints."""
    readings = {"before": device_mib("used")}
    child = subprocess.Popen(
        [sys.executable, "-c", f"PLATFORM = {platform!r}\n" + textwrap.dedent(code)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    assert child.stdin is not None and child.stdout is not None
    for line in child.stdout:
        if line.startswith("step "):
            readings[line[5:].strip()] = device_mib("used")
            child.stdin.write("\n")
            child.stdin.flush()
    if child.wait() != 0:
        raise SystemExit(f"the child measuring {platform} failed (exit {child.returncode})")
    return readings


def main(argv: list[str]) -> int:
    platform = argv[0] if argv else "cuda"
    report = {
        "unit": "MiB of the device's memory in use (nvidia-smi), device-wide",
        "device_total_mib": device_mib("total"),
        "cyxla": measure(CYXLA, platform, {"JAX_PLATFORMS": "cpu"}),
        "jax_jit_default": measure(JAX, platform, {}),
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
