"""Memory: executing and compiling repeatedly must not grow the heap.

The plugin and the core allocate with glibc's malloc (the plugin imports malloc, free
and operator new from the C and C++ libraries), so glibc's own count of the bytes in
use, `mallinfo2()`, sees what both hold: uordblks (in use in the arenas, over all
threads) plus hblkhd (in use in blocks mmapped on their own). Each test first shows that
the thing it watches for would be visible: a leaked PJRT buffer costs at least a few
hundred bytes per call, a leaked executable about 200 KB.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import sys
import weakref
from collections.abc import Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx

from support import hooks

CALLS = 20_000
#: Growth allowed over CALLS executions: a leak of 13 bytes per call would exceed it.
EXECUTE_BUDGET = 256 * 1024
CYCLES = 20
#: Growth allowed over CYCLES compile-and-delete cycles, after a warmup.
COMPILE_BUDGET = 1024 * 1024


class Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


_libc = ctypes.CDLL(None)
_libc.mallinfo2.restype = Mallinfo2
_libc.malloc.restype = ctypes.c_void_p
_libc.malloc.argtypes = [ctypes.c_size_t]
_libc.free.argtypes = [ctypes.c_void_p]


def heap_in_use() -> int:
    """Bytes that glibc's malloc has handed out and not had back."""
    gc.collect()
    info = _libc.mallinfo2()
    return int(info.uordblks + info.hblkhd)


def growth(action: Callable[[], object]) -> int:
    before = heap_in_use()
    action()
    return heap_in_use() - before


def aligned(values: np.ndarray, offset: int = 0) -> np.ndarray:
    """A writable copy of `values` that starts `offset` bytes past a 64-byte boundary:
    0 lets the CPU plugin alias it, anything else makes the core copy it."""
    raw = np.empty(values.nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    array = raw[start : start + values.nbytes].view(values.dtype).reshape(values.shape)
    array[...] = values
    assert array.ctypes.data % 64 == offset
    return array


@pytest.fixture
def no_disk_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every compile_program compiles: nothing is stored or loaded."""
    monkeypatch.setenv("CYXLA_CACHE_DIR", "0")
    yield


def two_outputs(x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
    return x * 2 + y, jnp.sum(x * y)


@pytest.fixture(scope="module")
def executable() -> cx.Executable:
    spec = jax.ShapeDtypeStruct((256,), jnp.float32)
    return cx.compile_program(cx.lower(two_outputs, [spec, spec]))[0]


def test_mallinfo2_sees_native_allocations() -> None:
    """The instrument: 20,000 blocks of 64 bytes malloc'ed natively show up, and go."""
    blocks: list[int] = []
    grew = growth(lambda: blocks.extend(_libc.malloc(64) for _ in range(CALLS)))
    for block in blocks:
        _libc.free(block)
    assert grew >= CALLS * 64
    assert grew > 4 * EXECUTE_BUDGET


@pytest.mark.parametrize("offset", [0, 4], ids=["aliased", "copied"])
def test_execute_does_not_leak(executable: cx.Executable, offset: int) -> None:
    rng = np.random.default_rng(0)
    x = aligned(rng.standard_normal(256).astype(np.float32), offset)
    y = aligned(rng.standard_normal(256).astype(np.float32), offset)
    outputs = [np.empty(256, np.float32), np.empty((), np.float32)]
    inputs = [x, y]
    execute = hooks.execute_exact
    native = executable._native

    def loop(count: int) -> None:
        for _ in range(count):
            execute(native, inputs, outputs)

    loop(1000)  # warm up: first-use allocations of the plugin and the core
    grew = growth(lambda: loop(CALLS))
    assert grew < EXECUTE_BUDGET, f"{grew} bytes more in use after {CALLS} executions"
    # The runs computed something: the last outputs are right.
    np.testing.assert_allclose(outputs[0], x * 2 + y, rtol=1e-6)
    np.testing.assert_allclose(outputs[1], np.sum(x * y), rtol=1e-4, atol=1e-4)


def test_run_does_not_leak(executable: cx.Executable) -> None:
    """The Python path, which converts arguments and allocates its outputs each time."""
    x = np.arange(256, dtype=np.float64)  # cast to float32 on every call
    y = np.ones(256, np.float32)
    for _ in range(200):
        executable.run([x, y])
    calls = 5000
    grew = growth(lambda: [executable.run([x, y]) for _ in range(calls)])
    assert grew < EXECUTE_BUDGET, f"{grew} bytes more in use after {calls} runs"


def test_refused_executions_do_not_leak(executable: cx.Executable) -> None:
    """Calls refused before the plugin runs (an input of the wrong size, an output of
    the wrong size) free the buffer views they took."""
    good = [np.ones(256, np.float32), np.ones(256, np.float32)]
    bad = [np.ones(256, np.float32), np.ones(255, np.float32)]
    outputs = [np.empty(256, np.float32), np.empty((), np.float32)]
    bad_outputs = [np.empty(256, np.float32), np.empty(2, np.float32)]

    def loop(count: int) -> None:
        for _ in range(count):
            assert not hooks.execute_exact(executable._native, bad, outputs)
            with contextlib.suppress(cx.InvalidArgumentError):
                hooks.execute_exact(executable._native, good, bad_outputs)

    loop(200)
    grew = growth(lambda: loop(5000))
    assert grew < EXECUTE_BUDGET


def test_low_level_callables_do_not_leak() -> None:
    """Executable.low_level_callable: a callable, with its bound call and memory, is freed
    with its capsule. The control: the callables kept alive grow the heap past the budget
    that those dropped must stay under."""
    scalar = cx.compile_program(
        cx.lower(lambda x: jnp.sum(x * x), [jax.ShapeDtypeStruct((9,), jnp.float32)])
    )[0]
    count = 2000
    for _ in range(100):
        scalar.low_level_callable("ndimage")
    kept: list[object] = []
    grew = growth(lambda: kept.extend(scalar.low_level_callable("ndimage") for _ in range(count)))
    assert grew > 2 * EXECUTE_BUDGET, f"a callable takes {grew / count} bytes"
    kept.clear()
    grew = growth(lambda: [scalar.low_level_callable("ndimage") for _ in range(count)])
    assert grew < EXECUTE_BUDGET, f"{grew} bytes more in use after {count} callables"


@pytest.fixture(scope="module")
def small_program() -> cx.Program:
    return cx.lower(lambda x: jnp.tanh(x) @ x.T + 1, [jax.ShapeDtypeStruct((8, 8), jnp.float32)])


def test_an_executable_costs_enough_to_be_seen(
    small_program: cx.Program, no_disk_cache: None
) -> None:
    """The control for the next test: ten live executables take far more than the
    budget would let twenty leaked ones take."""
    for _ in range(3):
        cx.compile_program(small_program)
    kept: list[cx.Executable] = []
    grew = growth(lambda: kept.extend(cx.compile_program(small_program)[0] for _ in range(10)))
    assert grew / 10 * CYCLES > 2 * COMPILE_BUDGET, f"an executable takes {grew / 10} bytes"


def test_compile_and_delete_does_not_leak(small_program: cx.Program, no_disk_cache: None) -> None:
    def cycle() -> None:
        executable, _ = cx.compile_program(small_program)
        (out,) = executable.run([np.eye(8, dtype=np.float32)])
        assert out.shape == (8, 8)
        del executable

    for _ in range(3):
        cycle()
    grew = growth(lambda: [cycle() for _ in range(CYCLES)])
    assert grew < COMPILE_BUDGET, f"{grew} bytes more in use after {CYCLES} compiles"


def test_executables_are_freed(small_program: cx.Program, no_disk_cache: None) -> None:
    """Nothing but the Executable holds its native executable, and nothing holds the
    Executable once the caller drops it (nanobind objects take no weak references, so
    the wrapper's reference count stands in for the native one)."""
    executable, _ = cx.compile_program(small_program)
    native = executable._native
    # getrefcount counts its argument; the wrapper's attribute, its run's cache (which
    # holds the native executable as a shared_ptr) and `native` are the rest.
    assert sys.getrefcount(native) == 4
    del native
    wrapper = weakref.ref(executable)
    del executable
    gc.collect()
    assert wrapper() is None
