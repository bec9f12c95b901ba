"""Results written in place: `lower` adds a donated parameter per large output on the CPU,
and the core passes the caller's output memory there, so the plugin writes the result
straight into it; where it cannot (overlap, misalignment) the result is copied. Checked
against jax.jit, and with the core's report of where the plugin wrote each result."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla
from cyxla import _benchmark
from cyxla._lower import lowering as _lowering
from cyxla._lower.lowering import IN_PLACE_MIN_BYTES

from support import hooks

LARGE = IN_PLACE_MIN_BYTES // 4  # f32 elements of the smallest output written in place


def flip2(x: jax.Array) -> jax.Array:
    """Reads other elements than it writes: wrong if written over its own input."""
    return jnp.flip(x) * 2


def two(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    return x * 2 + 1, x.sum(), jnp.cos(x)


def compiled(function, length: int) -> cyxla.Executable:
    program = cyxla.lower(function, [jax.ShapeDtypeStruct((length,), jnp.float32)])
    return cyxla.compile_program(program)[0]


def data(length: int, seed: int = 0) -> np.ndarray:
    x = cyxla.zeros((length,), np.float32)
    x[...] = np.random.default_rng(seed).standard_normal(length)
    return x


def test_large_outputs_get_a_donated_parameter_the_caller_does_not_see() -> None:
    program = cyxla.lower(two, [jax.ShapeDtypeStruct((LARGE,), jnp.float32)])
    assert [s.shape for s in program.inputs] == [(LARGE,)]  # the caller's inputs only
    assert program.donated_outputs == (0, 2)  # not the scalar sum
    executable = cyxla.compile_program(program)[0]
    assert executable._native.donated_outputs == [0, 2]
    assert [s.shape for s in executable.inputs] == [(LARGE,)]


@pytest.mark.parametrize("platform", ["cuda", "rocm", "tpu"])
def test_only_the_cpu_gets_donated_parameters(platform: str) -> None:
    """Elsewhere the plugin copies results to the host anyway: nothing to write in place.
    (Lowering for those platforms needs their plugins; their export does not.)"""
    spec = jax.ShapeDtypeStruct((LARGE,), jnp.float32)
    exported = jax.export.export(jax.jit(two), platforms=[platform])(spec)
    assert _lowering._donated_outputs(exported, platform) == ()
    cpu = jax.export.export(jax.jit(two), platforms=["cpu"])(spec)
    assert _lowering._donated_outputs(cpu, "cpu") == (0, 2)


def test_small_outputs_are_copied() -> None:
    program = cyxla.lower(two, [jax.ShapeDtypeStruct((LARGE - 1,), jnp.float32)])
    assert program.donated_outputs == ()


def test_results_are_written_in_place_and_match_jax() -> None:
    executable = compiled(two, LARGE)
    x = data(LARGE)
    outputs = [cyxla.zeros(s.shape, s.dtype) for s in executable.outputs]
    assert hooks.writes_in_place(executable._native, [x], outputs) == [True, False, True]
    for got, want in zip(outputs, jax.jit(two)(x), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_the_in_place_probe_takes_one_array_per_input_and_output() -> None:
    executable = compiled(two, LARGE)
    x = data(LARGE)
    outputs = [cyxla.zeros(s.shape, s.dtype) for s in executable.outputs]
    with pytest.raises(cyxla.InvalidArgumentError, match="writes_in_place: one array per input"):
        hooks.writes_in_place(executable._native, [x, x], outputs)
    with pytest.raises(cyxla.InvalidArgumentError, match="writes_in_place: one array per output"):
        hooks.writes_in_place(executable._native, [x], outputs[:2])
    assert not any(o.any() for o in outputs)  # nothing ran


def test_an_output_over_its_input_is_copied_not_corrupted() -> None:
    executable = compiled(flip2, LARGE)
    x = data(LARGE)
    want = np.asarray(jax.jit(flip2)(x))
    assert hooks.writes_in_place(executable._native, [x], [x]) == [False]
    np.testing.assert_array_equal(x, want)


def test_an_unaligned_output_is_copied() -> None:
    executable = compiled(flip2, LARGE)
    x = data(LARGE)
    raw = np.empty(LARGE + 16, np.float32)
    offset = next(k for k in range(16) if (raw[k:].ctypes.data % cyxla.HOST_ALIGNMENT) != 0)
    y = raw[offset : offset + LARGE]
    assert hooks.writes_in_place(executable._native, [x], [y]) == [False]
    np.testing.assert_array_equal(y, jax.jit(flip2)(x))


def test_run_execute_and_bound_calls_agree_with_jax() -> None:
    executable = compiled(two, LARGE)
    x = data(LARGE, seed=1)
    want = jax.jit(two)(x)
    for got, expected in zip(executable.run([x]), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)
    outputs = [cyxla.zeros(s.shape, s.dtype) for s in executable.outputs]
    _benchmark.execute_loop(executable.handle, [x], outputs, 2)  # cyxla_execute
    for got, expected in zip(outputs, want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)
    bound = executable.bind([x], None)
    for seed in (2, 3):  # new inputs each call, into the same (in place) outputs
        x[...] = data(LARGE, seed)
        for got, expected in zip(bound(), jax.jit(two)(x), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)


def test_a_bound_call_over_its_own_input_iterates_correctly() -> None:
    executable = compiled(flip2, LARGE)
    x = data(LARGE)
    want = x.copy()
    bound = executable.bind([x], [x])  # x <- flip2(x): the copy, not in place
    for _ in range(3):
        bound()
        want = np.asarray(jax.jit(flip2)(want))
        np.testing.assert_array_equal(x, want)


def test_stored_and_cached_programs_keep_their_donated_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cyxla.CACHE_ENVIRONMENT_VARIABLE, str(tmp_path))
    program = cyxla.lower(two, [jax.ShapeDtypeStruct((LARGE,), jnp.float32)])
    assert cyxla.store_lowered("two", program)
    loaded = cyxla.load_lowered("two")
    assert loaded is not None and loaded.donated_outputs == (0, 2)
    first, statistics = cyxla.compile_program(loaded)
    again, statistics_again = cyxla.compile_program(loaded)
    assert not statistics.cache_hit and statistics_again.cache_hit
    x = data(LARGE, seed=4)
    for executable in (first, again):
        assert executable._native.donated_outputs == [0, 2]
        outputs = [cyxla.zeros(s.shape, s.dtype) for s in executable.outputs]
        assert hooks.writes_in_place(executable._native, [x], outputs) == [True, False, True]
        np.testing.assert_allclose(outputs[2], np.cos(x), rtol=1e-5, atol=1e-6)
