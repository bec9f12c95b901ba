"""The GPU path (issue 34): programs lowered for a GPU, compiled by its plugin and run
through cyxla's Python doors, against jax.jit on the same device.

A process loads one plugin, and the suite's loads the CPU's, so each test runs its code in
a fresh interpreter with `CYXLA_PLATFORM` set. The platform is `cuda` unless
`CYXLA_TEST_GPU_PLATFORM` names another: the tests are skipped, with the reason, where no
plugin of it is installed (CI), and `CYXLA_TEST_GPU_PLATFORM=cpu pytest -n0
tests/test_gpu.py` checks the tests themselves on the CPU. `benchmarks/gpu/run.sh` runs
them on a machine with a GPU.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cyxla._run import plugins

from support import run_python

PLATFORM = os.environ.get("CYXLA_TEST_GPU_PLATFORM", "cuda")

pytestmark = pytest.mark.skipif(
    PLATFORM not in plugins.installed_platforms(),
    reason=f"no {PLATFORM} plugin is installed (CYXLA_TEST_GPU_PLATFORM names the platform)",
)

#: Run at the start of each test's interpreter: the device, and the programs by name.
_PROLOGUE = f"""
import json, sys, threading
import numpy as np, jax, jax.numpy as jnp
import cyxla as cx

sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})  # the tests' helpers

PLATFORM = {PLATFORM!r}
device = jax.devices(PLATFORM)[0]  # JAX names its CUDA backend "cuda" too
rng = np.random.default_rng(0)

def normal(*shape):
    return rng.standard_normal(shape, dtype=np.float32)

PROGRAMS = {{
    "sin3": (lambda x: jnp.sin(x) * 2, [normal(3)]),
    "mlp64": (lambda x, w: jnp.tanh(x @ w).sum(axis=1), [normal(64, 64), normal(64, 64) / 8]),
    "matmul64": (jnp.matmul, [normal(64, 64), normal(64, 64)]),
    "matmul1024": (jnp.matmul, [normal(1024, 1024), normal(1024, 1024)]),
    "ew1m": (lambda x: x * 2.0 + 1.0, [normal(1 << 20)]),
}}

def compiled(fn, args):
    program = cx.lower(fn, [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args])
    assert program.platform == PLATFORM, program.platform
    return cx.compile_program(program)

def on_device(fn, args):
    results = jax.jit(fn)(*jax.device_put(args, device))
    return [np.asarray(r) for r in jax.tree.leaves(results)]

def gap(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    return max(float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(ours, theirs))
"""


def _report(code: str, tmp_path: Path) -> dict[str, Any]:
    """Runs the prologue and `code` in a fresh interpreter on the platform; `code` prints
    one JSON object last."""
    environment = {
        "CYXLA_PLATFORM": PLATFORM,
        "CYXLA_CACHE_DIR": str(tmp_path / "cache"),
        # jax.jit, the oracle, shares the device: its client grows instead of taking 75%.
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
    }
    result = run_python(_PROLOGUE + code, environment)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_every_python_door_computes_what_jax_jit_computes_on_the_device(tmp_path: Path) -> None:
    """run, run(out=) and a bound call, each against jax.jit with the inputs on the device."""
    report = _report(
        """
gaps = {}
for name, (fn, args) in PROGRAMS.items():
    executable, _ = compiled(fn, args)
    want = on_device(fn, args)
    out = [np.empty(s.shape, s.dtype) for s in executable.outputs]
    executable.run(args, out=out)
    bound = executable.bind([a.copy() for a in args], None)
    bound()
    gaps[name] = {
        "run": gap(list(executable.run(args)), want),
        "run_out": gap(out, want),
        "bound": gap(list(bound.outputs), want),
    }
    bound.close()
print(json.dumps(gaps))
""",
        tmp_path,
    )
    for name, doors in report.items():
        for door, value in doors.items():
            # matmul1024 sums 1,024 products: a few ulps of the sum's size apart at most.
            assert value <= (1e-3 if name == "matmul1024" else 1e-5), (name, door, value)


def test_many_threads_share_one_executable(tmp_path: Path) -> None:
    report = _report(
        """
fn, args = PROGRAMS["mlp64"]
executable, _ = compiled(fn, args)
want = on_device(fn, args)
gaps = []
def work():
    for _ in range(50):
        gaps.append(gap(list(executable.run(args)), want))
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"calls": len(gaps), "worst": max(gaps)}))
""",
        tmp_path,
    )
    assert report == {"calls": 400, "worst": pytest.approx(0.0, abs=1e-5)}


def test_linalg_runs_through_the_plugins_own_handlers(tmp_path: Path) -> None:
    """jnp.linalg lowers to the platform's solver custom calls, which its plugin runs."""
    report = _report(
        """
a = normal(32, 32)
spd = a @ a.T + 32 * np.eye(32, dtype=np.float32)
b = normal(32, 4)
cases = {
    "solve": (jnp.linalg.solve, [spd, b]),
    "cholesky": (jnp.linalg.cholesky, [spd]),
    "eigh": (lambda m: jnp.linalg.eigh(m)[0], [spd]),
    "qr_r_abs": (lambda m: jnp.abs(jnp.linalg.qr(m)[1]), [a]),
}
gaps = {}
for name, (fn, args) in cases.items():
    executable, _ = compiled(fn, args)
    gaps[name] = gap(list(executable.run(args)), on_device(fn, args))
print(json.dumps(gaps))
""",
        tmp_path,
    )
    for name, value in report.items():
        assert value <= 1e-3, (name, value)


def test_a_second_process_loads_the_executable_from_the_disk_cache(tmp_path: Path) -> None:
    code = """
fn, args = PROGRAMS["mlp64"]
executable, statistics = compiled(fn, args)
ours = list(executable.run(args))
print(json.dumps({"hit": statistics.cache_hit, "gap": gap(ours, on_device(fn, args))}))
"""
    first, second = _report(code, tmp_path), _report(code, tmp_path)
    assert first["hit"] is False and second["hit"] is True
    assert first["gap"] <= 1e-5 and second["gap"] <= 1e-5


def test_a_batch_computes_what_vmap_computes_on_the_device(tmp_path: Path) -> None:
    report = _report(
        """
fn, (x, w) = PROGRAMS["mlp64"]
point = lambda x: fn(x[None, :], w)[0]
batched, _ = cx.compile_batched(cx.lower_batched(point, [jax.ShapeDtypeStruct((64,), x.dtype)]))
points = normal(300, 64)  # more than the largest batch: two calls, the second padded
(ours,) = batched.run([points])
print(json.dumps({"gap": gap([ours], on_device(jax.vmap(point), [points]))}))
""",
        tmp_path,
    )
    assert report["gap"] <= 1e-5


def test_the_c_loader_loads_a_program_file_and_execute_runs_it(tmp_path: Path) -> None:
    """cyxla_load_program and cyxla_execute, as a C caller uses them, in a process whose
    runtime is the platform's."""
    report = _report(
        f"""
from support import load_from_c, run_from_c
fn, args = PROGRAMS["mlp64"]
compiled(fn, args)  # opens the platform's runtime, which the C loader shares
path = {str(tmp_path / "mlp64.cyxla")!r}
cx.lower(fn, [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]).save(path)
status, handle, error = load_from_c(path)
assert status == 0, error.message
(out,) = run_from_c(handle, args)
print(json.dumps({{"gap": gap([out.reshape(64)], on_device(fn, args))}}))
""",
        tmp_path,
    )
    assert report["gap"] <= 1e-5


def test_a_failure_on_the_device_reaches_the_caller_as_a_cyxla_error(tmp_path: Path) -> None:
    """A program whose temporary buffer the device cannot hold (a sort of 256 GiB, more
    than an H200's memory; its inputs and outputs are small) fails in the plugin, which
    reaches the caller as a PjrtError, and the process carries on."""
    report = _report(
        """
sorted_head = lambda x: jnp.sort(jnp.arange(1 << 36, dtype=jnp.float32) * x[0])[:3]
try:
    executable, _ = compiled(sorted_head, [np.ones(1, np.float32)])
    executable.run([np.ones(1, np.float32)])
    caught = None
except cx.PjrtError as error:  # CompileError is one too
    caught = f"{type(error).__name__}: {error}"
fn, args = PROGRAMS["sin3"]
executable, _ = compiled(fn, args)
print(json.dumps({"caught": caught, "after": gap(list(executable.run(args)), on_device(fn, args))}))
""",
        tmp_path,
    )
    assert report["caught"] is not None, "a sort of 256 GiB ran"
    assert report["after"] <= 1e-5
