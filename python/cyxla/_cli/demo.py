"""`python -m cyxla demo`: the main job, a real JAX function run through the plugin."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

import cyxla
from cyxla import _benchmark


def demo_function(x: jax.Array, w: jax.Array) -> jax.Array:
    """One dense layer with a residual: tanh(x @ w) + sin(x)."""
    return jnp.tanh(x @ w) + jnp.sin(x)


def _median_seconds(call: Callable[[], object], seconds: float = 0.5) -> float:
    """Median seconds per call over batches that fill about `seconds`."""
    call()
    start, count = time.perf_counter(), 0
    while time.perf_counter() - start < 0.05:
        call()
        count += 1
    batch = max(1, count)
    samples = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(samples) < 5:
        t0 = time.perf_counter()
        for _ in range(batch):
            call()
        samples.append((time.perf_counter() - t0) / batch)
    return float(np.median(samples))


def main() -> int:
    """Runs the demo: 0 when cyxla and jax.jit agree, 1 when they differ, 2 (with the
    reason on stderr) when no plugin could be found or loaded."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16), dtype=np.float32)
    w = rng.standard_normal((16, 16), dtype=np.float32) / 4
    try:
        program = cyxla.lower(demo_function, [x, w])
        executable, statistics = cyxla.compile_program(program)
    except cyxla.PluginError as error:
        print(f"python -m cyxla demo: {error}", file=sys.stderr)
        return 2
    (ours,) = executable.run([x, w])

    jitted = jax.jit(demo_function)
    theirs = np.asarray(jitted(x, w))
    x_jax, w_jax = jnp.asarray(x), jnp.asarray(w)

    print(f"function: tanh(x @ w) + sin(x), x: {program.inputs[0]}, w: {program.inputs[1]}")
    how = (
        f"loaded from the disk cache in {statistics.load_seconds * 1e3:.1f} ms"
        if statistics.cache_hit
        else f"compiled in {statistics.compile_seconds * 1e3:.1f} ms"
    )
    print(f"platform: {program.platform}, StableHLO {program.stablehlo_version}, {how}")
    print(f"cyxla    result[0, :4]: {ours[0, :4]}")
    print(f"jax.jit  result[0, :4]: {theirs[0, :4]}")
    error = float(np.max(np.abs(ours - theirs)))
    print(f"largest difference: {error:.3g}")
    # The same program from native code: a C++ loop through the C API (cyxla.h).
    native_out = np.empty_like(ours)
    calls = 2000
    native_s = _benchmark.execute_loop(executable.handle, [x, w], [native_out], calls) / calls
    print(f"native   result[0, :4]: {native_out[0, :4]}")
    run_s = _median_seconds(lambda: executable.run([x, w]))
    jit_s = _median_seconds(lambda: jitted(x_jax, w_jax).block_until_ready())
    print(
        f"time per call: native execute {native_s * 1e6:.2f} us (mean of {calls}), "
        f"Executable.run {run_s * 1e6:.2f} us, jax.jit {jit_s * 1e6:.2f} us (medians)"
    )
    same = np.allclose(ours, theirs, rtol=1e-5, atol=1e-5) and np.array_equal(native_out, ours)
    return 0 if same else 1
