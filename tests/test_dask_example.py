"""examples/dask: a saved program run on the worker processes of Dask's LocalCluster, each
compiling once (the second a disk cache hit), gives jax.jit's results."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import jax
import numpy as np
import pytest

import cyxla as cx

pytest.importorskip("distributed", reason="the Dask example needs dask[distributed]")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dask"


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ModuleType]:
    """The example's script as a module, with an empty disk cache of its own that the
    worker processes inherit (and the example's directory on their sys.path)."""
    monkeypatch.setenv(cx.CACHE_ENVIRONMENT_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(EXAMPLE))
    import mlp_on_dask

    yield mlp_on_dask
    for name in ("mlp_on_dask", "on_worker"):
        sys.modules.pop(name, None)


def test_a_saved_program_runs_on_dask_workers(example: ModuleType, tmp_path: Path) -> None:
    example.export(tmp_path / "mlp.cyxla")
    program = cx.load_program(tmp_path / "mlp.cyxla")
    rng = np.random.default_rng(1)
    weights = [
        rng.standard_normal((example.WIDTH, example.WIDTH), np.float32) / 8
        for _ in range(example.LAYERS)
    ]
    batch = rng.standard_normal((6, example.ROWS, example.WIDTH), np.float32)

    results, compiles = example.run_on_cluster(program, batch, weights)

    pids = [pid for pid, _, _ in compiles]
    assert len(set(pids)) == 2 and os.getpid() not in pids  # two worker processes
    assert not any(imports_jax for _, _, imports_jax in compiles)  # they only load and run
    first, second = (statistics for _, statistics, _ in compiles)
    assert not first.cache_hit and first.compile_seconds > 0, first
    assert second.cache_hit and second.compile_seconds == 0.0, second
    expected = np.stack([np.asarray(jax.jit(example.mlp)(x, weights)) for x in batch])
    np.testing.assert_allclose(results, expected, rtol=1e-6, atol=1e-6)
