"""Finds program files whose StableHLO crashes, hangs or exhausts the process that compiles
them: edits of a byte or a few of a real program's StableHLO section, saved as valid program files
(the writer recomputes the CRC), each compiled in a forked child with time and memory
limits. What it finds is what `verify_program_file` must refuse (tests/test_verification.py
keeps some as regression cases).

    python fuzz/stablehlo_edits.py OUT_DIR [--program solve|mixed] [--edits N] [--seed S]

Forking after jax is imported, before any plugin client exists, makes each try cost the
compile only, not the imports.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import resource
import signal
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import cyxla as cx


def _solve(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.linalg.solve(a @ a.T + jnp.eye(4), jnp.tanh(b))


def _mixed(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.tanh(a @ b).sum(axis=0) + jnp.cumsum(b[0]) * jnp.max(a)


#: The programs whose StableHLO is edited: with a linear-algebra custom call (which a
#: process without jaxlib's handlers refuses before compiling), and without custom calls.
SEEDS = {"solve": _solve, "mixed": _mixed}


def seed_program(name: str) -> cx.Program:
    return cx.lower(SEEDS[name], [jax.ShapeDtypeStruct((4, 4), np.float32)] * 2)


def try_in_child(program: cx.Program, timeout: float, memory: int) -> str:
    """'ok', 'refused', 'signal NAME', 'timeout' or 'memory' for compiling `program`."""
    pid = os.fork()
    if pid == 0:  # the child: compile, and say how it went with the exit status
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        os.environ["CYXLA_CACHE_DIR"] = ""  # what is tried here is never stored
        try:
            cx.compile_program(program)
            os._exit(0)
        except MemoryError:
            os._exit(3)
        except Exception:
            os._exit(2)
    started = time.monotonic()
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - started > timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.01)
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return {0: "ok", 2: "refused", 3: "memory"}.get(os.WEXITSTATUS(status), "exit")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="where the files found are written")
    parser.add_argument("--edits", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--memory-gib", type=float, default=6.0)
    parser.add_argument("--program", choices=sorted(SEEDS), default="solve")
    parser.add_argument("--bytes", type=int, default=1, help="bytes changed per edit")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    program = seed_program(args.program)
    stablehlo = bytes(program.stablehlo)
    rng = random.Random(args.seed)
    counts: dict[str, int] = {}
    for trial in range(args.edits):
        edited = bytearray(stablehlo)
        for _ in range(args.bytes):
            position = rng.randrange(len(edited))
            edited[position] = rng.randrange(256)
        candidate = dataclasses.replace(program, stablehlo=bytes(edited))
        outcome = try_in_child(candidate, args.timeout, int(args.memory_gib * (1 << 30)))
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome not in ("ok", "refused"):
            kind = outcome.replace(" ", "-")
            name = f"{args.program}-{kind}-{args.seed}-{trial}-at-{position}.cyxla"
            candidate.save(args.out / name)
            print(f"{trial}: {outcome}: {name}", flush=True)
    print(f"{args.edits} edits of {len(stablehlo)} bytes: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
