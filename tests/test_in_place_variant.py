"""Large unaligned inputs read where they are: after a few calls that copy them, run
compiles a variant of the program that slices them out of memory starting at the
alignment below (runtime/in_place_variant.hpp), and uses it while the same inputs come
unaligned. Every result is checked against NumPy or jax.jit on the same arrays."""

from __future__ import annotations

import threading
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import cyxla as cx
from cyxla import _core
from cyxla._program import in_place_variant as _in_place_variant
from cyxla._run.aligned import empty_at

from support import F32, compile_fn, hooks, spec

#: Calls in a row that copy the same inputs before run asks for the variant
#: (CachedCall::kCopiesBeforeVariant).
_COPIES_BEFORE_VARIANT = 4
#: f32 elements of 1 MiB: the least an input read in place has, a whole number of alignments.
_N = 1 << 18
_S32 = int(cx.ElementType.S32)


def _at(offset: int, shape: tuple[int, ...], dtype: Any, seed: int) -> np.ndarray:
    """An array of random values `offset` bytes past a 64-byte boundary."""
    array = empty_at(offset, shape, dtype)
    values = np.random.default_rng(seed).standard_normal(array.shape) * 50
    array[...] = values > 0 if array.dtype == np.bool_ else values.astype(dtype)
    return array


def _asked_and_ready(executable: cx.Executable, arrays: list[np.ndarray]) -> None:
    """Runs until run asks for the variant (not before the count), then waits for it."""
    for _ in range(_COPIES_BEFORE_VARIANT - 1):
        executable.run(arrays)
    assert executable._variant_compile is None
    executable.run(arrays)
    assert executable._variant_compile is not None
    executable._variant_compile.join()


def _reads(executable: cx.Executable) -> int:
    return executable._call.calls_read_in_place


def _affine(x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
    return x * 2 + y[0], jnp.sum(x, axis=0) * y[2]


def test_a_large_unaligned_input_is_read_in_place_once_a_loop_asks() -> None:
    # Two dimensions (the variant reshapes the slice), a large output written in place
    # through a donated parameter, a small output and a small input beside it.
    executable = compile_fn(_affine, [spec((512, 512), np.float32), spec((3,), np.float32)])
    y = np.array([1.5, -2.0, 3.0], np.float32)

    def check(x: np.ndarray) -> None:
        got = executable.run([x, y])
        # The same numbers as the program reading an aligned copy (the copy-free path of
        # before), and as jax.jit up to the order of the sum's additions.
        aligned = cx.empty(x.shape, x.dtype)
        aligned[...] = x
        copied = [np.empty(o.shape, o.dtype) for o in executable.outputs]
        assert hooks.execute_exact(executable._native, [aligned, y], copied)
        for g, w in zip(got, copied, strict=True):
            np.testing.assert_array_equal(g, w)
        want = jax.jit(_affine)(x, y)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-2)

    x = _at(16, (512, 512), np.float32, 0)
    _asked_and_ready(executable, [x, y])
    assert _reads(executable) == 0  # the calls so far copied x
    for k, offset in enumerate((16, 32, 48, 4)):  # any offset of whole elements
        check(_at(offset, (512, 512), np.float32, k + 1))
        assert _reads(executable) == k + 1
    x[...] = _at(48, (512, 512), np.float32, 9)  # new values at a kept address are seen
    check(x)
    check(_at(0, (512, 512), np.float32, 10))  # aligned: read in place by the program itself
    assert _reads(executable) == 5


@pytest.mark.parametrize(
    ("dtype", "offset"),
    [(np.complex64, 24), (np.int8, 1), (np.bool_, 63), (ml_dtypes.bfloat16, 2)],
    ids=["c64", "s8", "pred", "bf16"],
)
def test_each_element_type_is_read_in_place_at_an_offset_of_whole_elements(
    dtype: Any, offset: int
) -> None:
    # Each output element reads the other end of the input: a slice at a wrong offset
    # shows in every element.
    count = (1 << 20) // np.dtype(dtype).itemsize
    executable = compile_fn(jnp.flip, [spec((count,), dtype)])
    _asked_and_ready(executable, [_at(offset, (count,), dtype, 0)])
    for seed in (1, 2):
        x = _at(offset, (count,), dtype, seed)
        np.testing.assert_array_equal(executable.run([x])[0], np.flip(x))
    assert _reads(executable) == 2


def test_a_program_with_no_donated_parameter_reads_in_place_too() -> None:
    # A small output only: the program's main has no parameter that aliases an output.
    executable = compile_fn(lambda x: jnp.sum(x * x), [spec((_N,), np.float32)])
    assert executable._native.donated_outputs == []
    _asked_and_ready(executable, [_at(16, (_N,), np.float32, 0)])
    x = _at(48, (_N,), np.float32, 1)
    aligned, want = cx.empty(_N, np.float32), np.empty((), np.float32)
    aligned[...] = x
    assert hooks.execute_exact(executable._native, [aligned], [want])
    np.testing.assert_array_equal(executable.run([x])[0], want)
    assert _reads(executable) == 1
    np.testing.assert_allclose(want, np.sum(x.astype(np.float64) ** 2), rtol=1e-5)


@pytest.mark.parametrize(
    ("count", "dtype", "offset"),
    [(_N + 1, np.float32, 16), (_N, np.float32, 2), (_N // 2, np.float32, 16)],
    ids=["not-whole-alignments", "offset-inside-an-element", "small"],
)
def test_inputs_a_variant_cannot_read_stay_copied_and_ask_for_nothing(
    count: int, dtype: Any, offset: int
) -> None:
    executable = compile_fn(jnp.flip, [spec((count,), dtype)])
    for seed in range(2 * _COPIES_BEFORE_VARIANT):
        x = _at(offset, (count,), dtype, seed)
        np.testing.assert_array_equal(executable.run([x])[0], np.flip(x))
    assert executable._variant_compile is None


def test_the_variant_runs_only_when_the_inputs_it_reads_are_the_unaligned_ones() -> None:
    def add(a: jax.Array, b: jax.Array) -> jax.Array:
        return a - jnp.flip(b)

    executable = compile_fn(add, [spec((_N,), np.float32), spec((_N,), np.float32)])
    _asked_and_ready(executable, [_at(16, (_N,), np.float32, 0), _at(32, (_N,), np.float32, 1)])
    for seed, (offset_a, offset_b), read in [
        (2, (48, 16), True),
        (3, (0, 16), False),  # a is aligned: the program reads it, b is copied
        (4, (16, 0), False),
        (5, (32, 32), True),
    ]:
        a = _at(offset_a, (_N,), np.float32, seed)
        b = _at(offset_b, (_N,), np.float32, seed + 10)
        before = _reads(executable)
        np.testing.assert_array_equal(executable.run([a, b])[0], a - np.flip(b))
        assert _reads(executable) == before + read


def test_the_core_takes_only_the_variant_it_asked_for() -> None:
    executable = compile_fn(jnp.flip, [spec((_N,), np.float32)])
    cached = _core._CachedRun(executable._native)
    x, out = _at(16, (_N,), np.float32, 0), [cx.empty(_N, np.float32)]
    assert cached.variant_inputs() == []
    with pytest.raises(cx.InvalidArgumentError, match="read_in_place"):
        cached.read_in_place(executable._native)  # nothing asked for yet
    outcomes = [cached([x], out) for _ in range(_COPIES_BEFORE_VARIANT + 2)]
    assert outcomes == [0, 0, 0, 3, 0, 0]  # asked once
    assert cached.variant_inputs() == [(F32, [_N + 16]), (_S32, [1])]
    with pytest.raises(cx.InvalidArgumentError, match="does not take the inputs"):
        cached.read_in_place(executable._native)  # the program itself
    np.testing.assert_array_equal(out[0], np.flip(x))


def test_a_program_from_a_file_reads_in_place_with_its_compile_options(
    tmp_path: Any,
) -> None:
    # The variant compiles with the options the executable was compiled with: here the
    # file's, which keep NaN through max (fast min/max off).
    program = cx.lower(lambda x: jnp.maximum(x, 0.0), [spec((_N,), np.float32)])
    program.save(tmp_path / "max.cyxla")
    executable, _ = cx.compile_program(cx.load_program(tmp_path / "max.cyxla"))
    assert executable._options == executable.program.compile_options
    _asked_and_ready(executable, [_at(16, (_N,), np.float32, 0)])
    x = _at(32, (_N,), np.float32, 1)
    x[::7] = np.nan
    np.testing.assert_array_equal(executable.run([x])[0], np.maximum(x, 0.0))
    assert _reads(executable) == 1


def test_run_from_threads_while_the_variant_arrives() -> None:
    executable = compile_fn(jnp.flip, [spec((_N,), np.float32)])
    inputs = [_at(16 * (1 + k % 3), (_N,), np.float32, k) for k in range(4)]
    failures: list[str] = []
    barrier = threading.Barrier(len(inputs))

    def work(index: int) -> None:
        barrier.wait()
        for _ in range(20):
            if not np.array_equal(executable.run([inputs[index]])[0], np.flip(inputs[index])):
                failures.append(f"thread {index}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if executable._variant_compile is not None:
        executable._variant_compile.join()
    for x in inputs:
        np.testing.assert_array_equal(executable.run([x])[0], np.flip(x))
    assert failures == []


def test_a_variant_that_fails_to_compile_is_a_warning_and_the_inputs_stay_copied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(program: Any, inputs: Any) -> Any:
        raise ValueError("no variant today")

    monkeypatch.setattr(_in_place_variant, "variant_program", refuse)
    executable = compile_fn(jnp.flip, [spec((_N,), np.float32)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _asked_and_ready(executable, [_at(16, (_N,), np.float32, 0)])
    assert [str(w.message) for w in caught if w.category is RuntimeWarning] == [
        f"cyxla: {executable.program.name}: the variant that reads large unaligned inputs in "
        "place could not be compiled, so they are copied on every call: no variant today"
    ]
    x = _at(16, (_N,), np.float32, 1)
    np.testing.assert_array_equal(executable.run([x])[0], np.flip(x))
    assert _reads(executable) == 0
