"""The paths a call can take, each a function that returns a timing loop.

A path is registered with `@path(name, label)` on a function that takes the `Setup` of one
program and returns a `Loop` (runs `n` calls, returns the seconds they took). The table
lists paths in the order they are registered here. A path timed on some programs only
names them (`programs=`); a path whose one call evaluates the program `evaluations` times
(a batch) says so, and its figures are per evaluation. `bound` and `batch_16` below are
examples of each.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import jax
import numpy as np

import cyxla
from cyxla import _benchmark
from cyxla._bench.programs import BenchProgram
from cyxla._lower import lowering
from cyxla._run.aligned import empty_at, zeros

__all__ = [
    "BOUND_PY",
    "FLOOR",
    "JIT",
    "PATHS",
    "Loop",
    "Path",
    "Setup",
    "TailLoop",
    "Unavailable",
    "applies",
    "path",
    "setup",
]

#: Runs n calls and returns the seconds they took.
Loop = Callable[[int], float]

#: The path every ratio is taken to, and the second reference.
FLOOR = "pjrt_floor"
JIT = "jax_jit"
#: The path that Python's calls are compared with: a bound call, called from Python.
BOUND_PY = "bound_py"


class TailLoop:
    """A native loop that also times each call: `samples` gets, per run of the loop, the
    99th and 99.9th percentiles and the maximum of its calls' nanoseconds.

    The loop runs twice: once timed as a whole, which gives the figure, then once more
    reading the clock after every call, which gives the tails. A clock read costs tens of
    nanoseconds, as much as a small call itself, and the hand-written loops it is
    compared with read none."""

    def __init__(self, run: Callable[[int, np.ndarray | None], float]) -> None:
        self._run = run
        self.samples: list[tuple[float, float, float]] = []

    def __call__(self, n: int) -> float:
        seconds = self._run(n, None)
        latencies = np.zeros(n)
        self._run(n, latencies)
        p99, p999 = np.percentile(latencies, [99.0, 99.9])
        self.samples.append((float(p99), float(p999), float(latencies.max())))
        return seconds


@dataclass(frozen=True)
class Setup:
    """What the paths of one program share, made once."""

    program: BenchProgram
    executable: cyxla.Executable
    #: The inputs as a user has them: plain NumPy arrays (`plain`).
    inputs: list[np.ndarray]
    #: The same values in 64-byte aligned memory, which the CPU plugin reads in place.
    aligned_inputs: list[np.ndarray]
    #: 64-byte aligned memory for the outputs.
    outputs: list[np.ndarray]
    #: The thread count of the `threads` path.
    threads: int
    #: The same program compiled as JAX lowers it, without the donated parameters through
    #: which large outputs are written in place: the naive PJRT loop passes the inputs only.
    floor_executable: cyxla.Executable
    #: The same executable kept on PJRT (CYXLA_RUNNER=pjrt), for the `*_pjrt` paths.
    pjrt_executable: cyxla.Executable


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


class Unavailable(Exception):
    """A path that cannot run here (what it needs is not installed, or the program does
    not qualify): left out of the table, with this reason."""


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
    """A copy of `array` in memory aligned to HOST_ALIGNMENT."""
    copy = zeros(array.shape, array.dtype)
    copy[...] = array
    return copy


#: Where the plain NumPy arrays of the paths start: 16 bytes past a 64-byte boundary,
#: aligned as NumPy promises and no better. Where NumPy puts a large array is luck (0, 16,
#: 32 or 48 bytes past), and a path over an array that landed aligned would time the luck.
PLAIN_OFFSET = 16


def plain(array: np.ndarray) -> np.ndarray:
    """A copy of `array` PLAIN_OFFSET bytes past a 64-byte boundary."""
    copy = empty_at(PLAIN_OFFSET, array.shape, array.dtype)
    copy[...] = array
    return copy


@contextmanager
def _outputs_copied_out() -> Iterator[None]:
    """`lower` without donated output parameters (every result copied out), as cyxla
    lowered before it wrote large results in place."""
    in_place_min = lowering.IN_PLACE_MIN_BYTES
    lowering.IN_PLACE_MIN_BYTES = 1 << 62
    try:
        yield
    finally:
        lowering.IN_PLACE_MIN_BYTES = in_place_min


@contextmanager
def _on_pjrt() -> Iterator[None]:
    """Executables compiled or loaded meanwhile keep to PJRT (CYXLA_RUNNER=pjrt)."""
    saved = os.environ.get("CYXLA_RUNNER")
    os.environ["CYXLA_RUNNER"] = "pjrt"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["CYXLA_RUNNER"]
        else:
            os.environ["CYXLA_RUNNER"] = saved


def setup(program: BenchProgram, threads: int) -> Setup:
    """Lowers and compiles `program` and makes its inputs and outputs."""
    inputs = [plain(a) for a in program.make_inputs(np.random.default_rng(0))]
    lowered = cyxla.lower(program.function, inputs)
    executable, _ = cyxla.compile_program(lowered)
    with _on_pjrt():
        pjrt_executable, _ = cyxla.compile_program(lowered)
    floor_executable = pjrt_executable
    if executable._native.donated_outputs:
        with _outputs_copied_out(), _on_pjrt():
            floor_executable, _ = cyxla.compile_program(cyxla.lower(program.function, inputs))
    outputs = [aligned(np.zeros(s.shape, s.dtype)) for s in executable.outputs]
    aligned_inputs = [aligned(a) for a in inputs]
    # The rounds time what a loop of run calls costs once it is warm: after the first calls,
    # which may compile the variant that reads large unaligned inputs in place.
    for _ in range(8):
        executable.run(inputs)
    if executable._variant_compile is not None:
        executable._variant_compile.join()
    return Setup(
        program,
        executable,
        inputs,
        aligned_inputs,
        outputs,
        threads,
        floor_executable,
        pjrt_executable,
    )


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
    pointers = s.floor_executable._native._pjrt_pointers()
    types = [int(spec.element_type) for spec in s.floor_executable.inputs]
    return lambda n: _benchmark.raw_pjrt_loop(*pointers, s.aligned_inputs, types, s.outputs, n)


@path("native", "cyxla native execute, C++")
def _native(s: Setup) -> Loop:
    handle = s.executable.handle
    return TailLoop(lambda n, t: _benchmark.execute_loop(handle, s.aligned_inputs, s.outputs, n, t))


@path("bound", "cyxla bound call, C++ (inputs wrapped once, at bind)")
def _bound(s: Setup) -> Loop:
    handle = s.executable.handle
    return TailLoop(lambda n, t: _benchmark.bound_loop(handle, s.aligned_inputs, s.outputs, n, t))


@functools.cache
def _numba_loop() -> Callable[[int, int], int]:
    """An njit loop of n calls of a bound call by its handle: the first status not OK, or
    OK. Compiled once per process."""
    import numba

    from cyxla.numba import OK, call_bound

    @numba.njit(nogil=True)
    def loop(handle: int, n: int) -> int:
        for _ in range(n):
            status = call_bound(handle)
            if status != OK:
                return status
        return OK

    loop(0, 0)  # compiles it, outside the rounds
    return loop


@path("numba", "cyxla bound call from numba's nopython mode (cyxla.numba.call_bound)")
def _numba(s: Setup) -> Loop:
    try:
        loop = _numba_loop()
    except ImportError:
        raise Unavailable("numba is not installed") from None
    from cyxla.numba import check

    bound = s.executable.bind(s.aligned_inputs, s.outputs)  # held by the closure below

    def run(n: int) -> float:
        start = time.perf_counter()
        status = loop(bound.handle, n)
        seconds = time.perf_counter() - start
        check(status)
        return seconds

    return run


@path("bound_pjrt", "cyxla bound call, C++, kept on PJRT (CYXLA_RUNNER=pjrt)")
def _bound_pjrt(s: Setup) -> Loop:
    handle = s.pjrt_executable.handle
    return TailLoop(lambda n, t: _benchmark.bound_loop(handle, s.aligned_inputs, s.outputs, n, t))


@path("threads", "cyxla native execute, {threads} threads on one executable")
def _threads(s: Setup) -> Loop:
    # n calls in each thread: the wall time per call of all threads together.
    handle = s.executable.handle
    return lambda n: (
        _benchmark.execute_threads(handle, s.aligned_inputs, s.outputs, n, s.threads) / s.threads
    )


def _batch(s: Setup, size: int) -> Loop:
    """`size` points of the program in one cyxla_execute_batch."""
    batched, _ = cyxla.compile_batched(cyxla.lower_batched(s.program.function, s.inputs, (size,)))
    points = [aligned(np.repeat(a[None], size, axis=0)) for a in s.inputs]
    results = [aligned(np.zeros((size, *o.shape), o.dtype)) for o in batched.outputs]
    # The loop holds `batched`: its handle lives as long as the executable.
    return lambda n: _benchmark.execute_batch_loop(batched.handle, points, results, size, n)


for _size in (16, 256):
    path(
        f"batch_{_size}",
        f"cyxla_execute_batch of {_size} points, per point",
        evaluations=_size,
        programs=("sin3",),
    )(functools.partial(_batch, size=_size))


@path("run", "cyxla Executable.run, plain NumPy arrays")
def _run(s: Setup) -> Loop:
    return timed(lambda: s.executable.run(s.inputs))


@path("run_aligned", "cyxla Executable.run, cyxla.empty arrays in (no input staged)")
def _run_aligned(s: Setup) -> Loop:
    return timed(lambda: s.executable.run(s.aligned_inputs))


@path("run_pjrt", "cyxla Executable.run, plain NumPy arrays, kept on PJRT (CYXLA_RUNNER=pjrt)")
def _run_pjrt(s: Setup) -> Loop:
    return timed(lambda: s.pjrt_executable.run(s.inputs))


@path("numpy", "NumPy's own expression on the same plain arrays")
def _numpy(s: Setup) -> Loop:
    return timed(lambda: s.program.numpy(*s.inputs))


@path("run_out", "cyxla Executable.run(out=), plain NumPy arrays in and out")
def _run_out(s: Setup) -> Loop:
    out = [plain(np.zeros(spec.shape, spec.dtype)) for spec in s.executable.outputs]
    return timed(lambda: s.executable.run(s.inputs, out=out))


@path("run_out_aligned", "cyxla Executable.run(out=), cyxla.empty arrays in and out")
def _run_out_aligned(s: Setup) -> Loop:
    return timed(lambda: s.executable.run(s.aligned_inputs, out=s.outputs))


@path(BOUND_PY, "cyxla BoundCall() from Python (Executable.bind, cyxla.empty arrays)")
def _bound_py(s: Setup) -> Loop:
    bound = s.executable.bind(s.aligned_inputs, s.outputs)
    return timed(bound)


@path(JIT, "jax.jit, NumPy arrays in and out")
def _jax_jit(s: Setup) -> Loop:
    jitted = jax.jit(s.program.function)
    return timed(lambda: [np.asarray(leaf) for leaf in jax.tree.leaves(jitted(*s.inputs))])


@path("jax_jit_device", "jax.jit, device arrays in and out (block_until_ready)")
def _jax_jit_device(s: Setup) -> Loop:
    jitted = jax.jit(s.program.function)
    on_device = [jax.device_put(a) for a in s.inputs]
    return timed(lambda: jax.block_until_ready(jitted(*on_device)))


def _aot_loop(s: Setup, target: str) -> Loop:
    """Calls of the program exported by export_aot for `target`, from a C++ loop."""
    import ctypes
    import tempfile

    from cyxla import _aot, _errors

    # The library stays mapped once loaded: its directory can go.
    with tempfile.TemporaryDirectory(prefix="cyxla-bench-aot-") as directory:
        try:
            library = _aot.export_aot(s.executable.program, directory, name="bench", target=target)
        except (_errors.AotToolchainError, _errors.UnsupportedProgramError) as error:
            raise Unavailable(str(error).splitlines()[0]) from None
        loaded = ctypes.CDLL(str(library.shared_library))
    entry = ctypes.cast(loaded.bench, ctypes.c_void_p).value
    scratch = zeros(max(1, library.scratch_bytes), np.uint8)
    return lambda n: _benchmark.aot_loop(entry, s.aligned_inputs, s.outputs, scratch, n)


@path("aot", "export_aot: kernels called from C, generic CPU (the aot extra)")
def _aot(s: Setup) -> Loop:
    return _aot_loop(s, "generic")


@path("aot_host", "export_aot: kernels called from C, this machine's CPU (the aot extra)")
def _aot_host(s: Setup) -> Loop:
    return _aot_loop(s, "host")


@path("c_by_hand", "sin(x) * 2 written by hand in C++", programs=("sin3",))
def _c_by_hand(s: Setup) -> Loop:
    return lambda n: _benchmark.sin3_by_hand_loop(s.aligned_inputs[0], s.outputs[0], n)


@path("memcpy", "memcpy of the output's bytes (the machine's limit)", programs=("ew1m",))
def _memcpy(s: Setup) -> Loop:
    source, target = s.aligned_inputs[0], s.outputs[0]
    return lambda n: _benchmark.memcpy_loop(source, target, n)
