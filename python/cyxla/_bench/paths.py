"""The paths a call can take, each a function that returns a timing loop.

A path is registered with `@path(name, label)` on a function that takes the `Setup` of one
program and returns a `Loop` (runs `n` calls, returns the seconds they took). The table
lists paths in the order they are registered here. A path timed on some programs only
names them (`programs=`); a path whose one call evaluates the program `evaluations` times
(a batch) says so, and its figures are per evaluation. For example:

    @path("bound", "cyxla bound call, C++")
    def _bound(s: Setup) -> Loop:
        return lambda n: _benchmark.bound_loop(s.executable.handle, s.aligned_inputs,
                                               s.outputs, n)

    for size in (16, 256):
        path(f"batch_{size}", f"batch of {size}, per point", evaluations=size,
             programs=("sin3",))(functools.partial(_batch, size=size))
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import jax
import numpy as np

import cyxla
from cyxla import _benchmark
from cyxla._abi import HOST_ALIGNMENT
from cyxla._bench.programs import BenchProgram

__all__ = ["FLOOR", "JIT", "PATHS", "Loop", "Path", "Setup", "applies", "path", "setup"]

#: Runs n calls and returns the seconds they took.
Loop = Callable[[int], float]

#: The path every ratio is taken to, and the second reference.
FLOOR = "pjrt_floor"
JIT = "jax_jit"


@dataclass(frozen=True)
class Setup:
    """What the paths of one program share, made once."""

    program: BenchProgram
    executable: cyxla.Executable
    #: The inputs as a user has them: plain NumPy arrays.
    inputs: list[np.ndarray]
    #: The same values in 64-byte aligned memory, which the CPU plugin reads in place.
    aligned_inputs: list[np.ndarray]
    #: 64-byte aligned memory for the outputs.
    outputs: list[np.ndarray]
    #: The thread count of the `threads` path.
    threads: int


@dataclass(frozen=True)
class Path:
    name: str
    #: The table's description; `{threads}` is replaced by the thread count.
    label: str
    make: Callable[[Setup], Loop]
    #: Evaluations of the program per call: figures are per evaluation.
    evaluations: int = 1
    #: The keys of the programs it is timed on; None: all.
    programs: tuple[str, ...] | None = None


PATHS: dict[str, Path] = {}


def path(
    name: str, label: str, *, evaluations: int = 1, programs: tuple[str, ...] | None = None
) -> Callable[[Callable[[Setup], Loop]], Callable[[Setup], Loop]]:
    """Registers the decorated function as the maker of path `name`."""

    def register(make: Callable[[Setup], Loop]) -> Callable[[Setup], Loop]:
        PATHS[name] = Path(name, label, make, evaluations, programs)
        return make

    return register


def applies(path: Path, program: BenchProgram) -> bool:
    """Whether `path` is timed on `program`."""
    return path.programs is None or program.key in path.programs


def aligned(array: np.ndarray) -> np.ndarray:
    """A copy of `array` in 64-byte aligned memory."""
    raw = np.empty(array.nbytes + HOST_ALIGNMENT, np.uint8)
    offset = -raw.ctypes.data % HOST_ALIGNMENT
    copy = raw[offset : offset + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def setup(program: BenchProgram, threads: int) -> Setup:
    """Lowers and compiles `program` and makes its inputs and outputs."""
    inputs = program.make_inputs(np.random.default_rng(0))
    executable, _ = cyxla.compile_program(cyxla.lower(program.function, inputs))
    outputs = [aligned(np.zeros(s.shape, s.dtype)) for s in executable.outputs]
    return Setup(program, executable, inputs, [aligned(a) for a in inputs], outputs, threads)


def timed(call: Callable[[], object]) -> Loop:
    """The loop of a Python call."""

    def loop(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            call()
        return time.perf_counter() - start

    return loop


@path(FLOOR, "naive PJRT loop: wrap, execute, read, destroy (the floor)")
def _pjrt_floor(s: Setup) -> Loop:
    pointers = s.executable._native._pjrt_pointers()
    types = [int(spec.element_type) for spec in s.executable.inputs]
    return lambda n: _benchmark.raw_pjrt_loop(*pointers, s.aligned_inputs, types, s.outputs, n)


@path("native", "cyxla native execute, C++")
def _native(s: Setup) -> Loop:
    handle = s.executable.handle
    return lambda n: _benchmark.execute_loop(handle, s.aligned_inputs, s.outputs, n)


@path("threads", "cyxla native execute, {threads} threads on one executable")
def _threads(s: Setup) -> Loop:
    # n calls in each thread: the wall time per call of all threads together.
    handle = s.executable.handle
    return lambda n: (
        _benchmark.execute_threads(handle, s.aligned_inputs, s.outputs, n, s.threads) / s.threads
    )


@path("run", "cyxla Executable.run, plain NumPy arrays")
def _run(s: Setup) -> Loop:
    return timed(lambda: s.executable.run(s.inputs))


@path(JIT, "jax.jit, NumPy arrays in and out")
def _jax_jit(s: Setup) -> Loop:
    jitted = jax.jit(s.program.function)
    return timed(lambda: [np.asarray(leaf) for leaf in jax.tree.leaves(jitted(*s.inputs))])


@path("jax_jit_device", "jax.jit, device arrays in and out (block_until_ready)")
def _jax_jit_device(s: Setup) -> Loop:
    jitted = jax.jit(s.program.function)
    on_device = [jax.device_put(a) for a in s.inputs]
    return timed(lambda: jax.block_until_ready(jitted(*on_device)))


@path("memcpy", "memcpy of the output's bytes (the machine's limit)", programs=("ew1m",))
def _memcpy(s: Setup) -> Loop:
    source, target = s.aligned_inputs[0], s.outputs[0]
    return lambda n: _benchmark.memcpy_loop(source, target, n)
