"""cyxla's LAPACK handlers against jaxlib's, in the same plugin, on the same LAPACK (SciPy's
OpenBLAS): one custom call of getrf (the LU of jnp.linalg.solve) and of syevd (eigh),
float64, through a bound call, so that the handlers' own cost is what differs.

    python benchmarks/lapack_handlers.py [--rounds 7] [--calls 2000]

jaxlib's handler runs under another target name (cx.register_ffi_target with its
capsule), called with the same operands, attributes and layouts. Rounds alternate between
the two; each prints the median over rounds of the time per call, and the median of the
per-round ratios (cyxla / jaxlib) with its spread.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

import cyxla as cx


def column_major(shape: tuple[int, ...]) -> tuple[int, ...] | None:
    rank = len(shape)
    return (*range(rank - 2), rank - 1, rank - 2) if rank >= 2 else None


def call_of(target: str, routine: str, n: int, batch: int) -> Callable[..., Any]:
    """One custom call of `routine` on `batch` n x n float64 matrices."""
    b = (batch,)
    if routine == "getrf":
        results = [((*b, n, n), np.float64), ((*b, n), np.int32), (b, np.int32)]
        attributes: dict[str, Any] = {}
    else:
        results = [((*b, n, n), np.float64), ((*b, n), np.float64), (b, np.int32)]
        attributes = {"uplo": np.uint8(ord("L")), "mode": np.uint8(ord("V"))}
    call = jax.ffi.ffi_call(
        target,
        [jax.ShapeDtypeStruct(s, t) for s, t in results],
        input_layouts=[column_major((*b, n, n))],
        output_layouts=[column_major(s) for s, _ in results],
        input_output_aliases={0: 0},
    )
    return lambda x: call(x, **attributes)


def bound(target: str, routine: str, n: int, batch: int, x: np.ndarray) -> Any:
    custom = [] if target.startswith("lapack_") else [target]
    program = cx.lower(call_of(target, routine, n, batch), [x], custom_calls=custom)
    executable, _ = cx.compile_program(program)
    call = executable.bind()
    call.inputs[0][...] = x
    return call


def per_call(call: Any, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    arguments = parser.parse_args()
    jax.config.update("jax_enable_x64", True)
    from jaxlib.cpu import _lapack

    _lapack.initialize()
    capsules = _lapack.registrations()
    rng = np.random.default_rng(0)
    print("routine  n  batch  cyxla (us)  jaxlib (us)  ratio (min-max)")
    for routine, target in (("getrf", "lapack_dgetrf_ffi"), ("syevd", "lapack_dsyevd_ffi")):
        alias = f"bench_jaxlib_{target}"
        cx.register_ffi_target(alias, capsules[target], platform="cpu")
        for n, batch in ((4, 1), (32, 1), (128, 1), (8, 64)):
            x = rng.standard_normal((batch, n, n))
            x = x @ np.swapaxes(x, -1, -2) + n * np.eye(n)
            ours, theirs = bound(target, routine, n, batch, x), bound(alias, routine, n, batch, x)
            calls = max(20, arguments.calls // (1 + n * n * batch // 1024))
            times: dict[str, list[float]] = {"ours": [], "theirs": []}
            for _ in range(arguments.rounds):
                times["ours"].append(per_call(ours, calls))
                times["theirs"].append(per_call(theirs, calls))
            ratios = [a / b for a, b in zip(times["ours"], times["theirs"], strict=True)]
            print(
                f"{routine}  {n:3d}  {batch:3d}  {statistics.median(times['ours']) * 1e6:10.2f}"
                f"  {statistics.median(times['theirs']) * 1e6:11.2f}"
                f"  {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"
            )


if __name__ == "__main__":
    main()
