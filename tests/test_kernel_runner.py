"""The kernel runner (src/kernels/): a CPU program whose compiled form qualifies runs the
plugin's own kernels without PJRT's executor, from `run`, bound calls and the C API's
execute, and its outputs equal the PJRT runner's bit for bit (the same object code runs)
and jax.jit's. CYXLA_RUNNER=pjrt keeps a program on PJRT; what does not qualify stays
there, saying why."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx
from cyxla._bench.programs import PROGRAMS
from cyxla._lower import lowering

from program_file_writer import save
from support import (
    OK,
    SWEEP_FUNCTIONS,
    all_at_once,
    bench_specs,
    environment,
    fresh_compile,
    hooks,
    load_from_c,
    run_from_c,
    spec,
    sweep_values,
    table,
)

F32 = jnp.float32


def both_runners(program: cx.Program) -> tuple[cx.Executable, cx.Executable]:
    """`program` compiled for the default runner and for PJRT: the same compiled code (the
    second load is the disk cache's entry of the first compile, or the same compile)."""
    with environment(CYXLA_RUNNER="pjrt"):
        pjrt, _ = cx.compile_program(program)
    with environment(CYXLA_RUNNER=None):
        default, _ = cx.compile_program(program)
    assert pjrt.runner.name == "pjrt"
    assert pjrt.runner.would_take == default.runner.would_take
    return default, pjrt


def same_bits(ours: Any, theirs: Any, where: str = "") -> None:
    """Equal as bytes, NaN payloads and signed zeros included."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, where
    assert ours.tobytes() == theirs.tobytes(), where


def random_inputs(executable: cx.Executable, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for s in executable.inputs:
        dtype = np.dtype(s.dtype)
        if dtype.kind == "f":
            arrays.append(rng.uniform(-3, 3, s.shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.integers(0, 2, s.shape).astype(dtype))
        else:
            arrays.append(rng.integers(-9, 10, s.shape).astype(dtype))
    return arrays


def check_doors(default: cx.Executable, pjrt: cx.Executable, seeds: int = 3) -> None:
    """run, run with outputs given, and a bound call of `default` equal `pjrt`'s run, bit
    for bit, on several inputs."""
    for seed in range(seeds):
        inputs = random_inputs(default, seed)
        theirs = pjrt.run(inputs)
        for o, t in zip(default.run(inputs), theirs, strict=True):
            same_bits(o, t, f"run, seed {seed}")
        outputs = [np.full(s.shape, 7, s.dtype) for s in default.outputs]
        default.run(inputs, out=outputs)
        for o, t in zip(outputs, theirs, strict=True):
            same_bits(o, t, f"run(out=), seed {seed}")
        bound = default.bind(inputs)
        bound()
        for o, t in zip(bound.outputs, theirs, strict=True):
            same_bits(o, t, f"bound call, seed {seed}")


# ------------------------------------------------------------------ programs that qualify


def _fori(x: jax.Array) -> jax.Array:
    return jax.lax.fori_loop(0, 10, lambda i, v: jnp.sin(v) + i, x)


def _while(x: jax.Array) -> jax.Array:
    """A loop whose trip count depends on the data: its condition runs every time."""
    return jax.lax.while_loop(lambda v: v.sum() < 100.0, lambda v: v * 1.5 + 1.0, x)


def _cond(x: jax.Array) -> jax.Array:
    return jax.lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x)


def _switch(i: jax.Array, x: jax.Array) -> jax.Array:
    return jax.lax.switch(i, [jnp.sin, jnp.cos, lambda v: v * 3.0], x)


def _dynamic_update(x: jax.Array) -> jax.Array:
    """A loop of dynamic slices and updates, ended by a counter or by the data."""

    def body(c: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, v = c
        return i + 1, jax.lax.dynamic_update_slice(
            v, jnp.sin(jax.lax.dynamic_slice(v, (i,), (1,))) * 2, (i,)
        )

    return jax.lax.while_loop(lambda c: (c[0] < 6) & (c[1].sum() < 1e6), body, (0, x))[1]


def _scan(x: jax.Array) -> jax.Array:
    return jax.lax.scan(lambda c, y: (c * 0.5 + jnp.sin(y), c.sum()), x[0], x)[1]


def _nested(x: jax.Array) -> jax.Array:
    return jax.lax.fori_loop(
        0,
        3,
        lambda i, v: jax.lax.while_loop(lambda u: u.sum() < 10.0 * (i + 1), lambda u: u + 1.0, v),
        x,
    )


def _value_and_grad(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    return jax.value_and_grad(lambda v: jnp.sum(jnp.tanh(v) ** 2))(x)


QUALIFYING: dict[str, tuple[Callable[..., Any], list[Any]]] = {
    "fori": (_fori, [spec((5,), F32)]),
    "while": (_while, [spec((4,), F32)]),
    "dynamic_update": (_dynamic_update, [spec((8,), F32)]),
    "scan": (_scan, [spec((6, 4), F32)]),
    "nested": (_nested, [spec((4,), F32)]),
    "cond": (_cond, [spec((6,), F32)]),
    "value_and_grad": (_value_and_grad, [spec((8,), F32)]),
    "two_outputs": (lambda x, y: (x * y, jnp.exp(x) - y), [spec((3,), F32), spec((3,), F32)]),
    "passthrough": (lambda x, y: (y, x + 1), [spec((4,), F32), spec((5,), F32)]),
    "identity": (lambda x: x, [spec((7,), F32)]),
}


@pytest.mark.parametrize("name", list(QUALIFYING))
def test_a_qualifying_program_runs_on_kernels_bit_for_bit(name: str) -> None:
    function, specs = QUALIFYING[name]
    default, pjrt = both_runners(cx.lower(function, specs))
    assert default.runner.name == "kernels", default.runner.reason
    check_doors(default, pjrt)
    inputs = random_inputs(default, 0)
    for o, t in zip(default.run(inputs), jax.tree.leaves(jax.jit(function)(*inputs)), strict=True):
        np.testing.assert_allclose(o, t, rtol=1e-6, atol=1e-6)


def test_a_kernel_of_hundreds_of_arguments_runs_on_kernels_bit_for_bit() -> None:
    """A kernel's arguments are resolved once for the call's memory, so their number has
    no limit of its own (one of 256 came from a frame on the stack, which no call uses)."""

    def weighted_sum(*xs: jax.Array) -> jax.Array:
        return sum(x * (i + 1) for i, x in enumerate(xs))

    default, pjrt = both_runners(cx.lower(weighted_sum, [spec((4,), F32)] * 300))
    assert default.runner.name == "kernels", default.runner.reason
    assert "(1 kernel)" in default.runner.reason  # one kernel of 301 arguments
    check_doors(default, pjrt, seeds=1)


def test_a_switch_takes_the_branch_its_index_names_and_clamps_the_rest() -> None:
    default, pjrt = both_runners(cx.lower(_switch, [spec((), jnp.int32), spec((4,), F32)]))
    assert default.runner.name == "kernels", default.runner.reason
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    for i in [-5, 0, 1, 2, 3, 99]:
        index = np.int32(i)
        (ours,), (theirs,) = default.run([index, x]), pjrt.run([index, x])
        same_bits(ours, theirs, f"index {i}")
        same_bits(ours, jax.jit(_switch)(index, x), f"index {i}")
    # A bound call resolves the index's address once and reads what it holds at each call.
    with default.bind([np.zeros((), np.int32), x]) as bound:
        for i in [2, -5, 1, 99, 0]:
            bound.inputs[0][...] = i
            (ours,) = bound()
            same_bits(ours, jax.jit(_switch)(np.int32(i), x), f"bound, index {i}")


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.key)
def test_the_bench_programs_take_the_runner_their_verdict_allows(program: Any) -> None:
    """Each bench program on both runners: equal bit for bit wherever it runs on kernels,
    and a reason wherever it does not."""
    default, pjrt = both_runners(cx.lower(program.function, bench_specs(program)))
    runner = default.runner
    assert runner.name == runner.would_take, runner.reason
    if runner.name == "kernels":
        check_doors(default, pjrt, seeds=2)
    else:
        assert runner.reason


_SMALL_SHAPES = ((), (1,), (3,), (7,), (2, 3), (0, 3), (16,))


def _sweep_cases() -> Iterator[Any]:
    for name in SWEEP_FUNCTIONS:
        for dtype in ("float32", "int32", "complex64", "bool"):
            yield pytest.param(name, dtype, id=f"{name}-{dtype}")


_SWEEP_RUNNERS: dict[str, str] = {}


@pytest.mark.parametrize(("name", "dtype_name"), list(_sweep_cases()))
def test_the_jnp_sweep_is_bit_for_bit_on_kernels(name: str, dtype_name: str) -> None:
    """Each function of the jnp sweep on one dtype, at small shapes, as one program: where
    it qualifies, its outputs equal the PJRT runner's bit for bit (NaN, infinities and
    signed zeros among the inputs)."""
    fn, arity = SWEEP_FUNCTIONS[name]
    dtype = np.dtype(dtype_name)
    shapes = []
    for shape in _SMALL_SHAPES:  # the shapes jax.jit lowers it at (jnp.max: not (0, 3))
        with contextlib.suppress(TypeError, ValueError):
            jax.jit(fn).lower(*[sweep_values(shape, dtype, i) for i in range(arity)])
            shapes.append(shape)
    if not shapes:
        pytest.skip(f"JAX does not trace {name} on {dtype_name} at any of these shapes")
    flat = [sweep_values(s, dtype, i) for s in shapes for i in range(arity)]
    every = all_at_once(fn, arity, len(shapes))
    default, pjrt = both_runners(cx.lower(every, flat))
    _SWEEP_RUNNERS[f"{name}-{dtype_name}"] = default.runner.name
    if default.runner.name != "kernels":
        assert default.runner.would_take == "pjrt", default.runner.reason
        return
    for ours, theirs in zip(default.run(flat), pjrt.run(flat), strict=True):
        same_bits(ours, theirs, f"{name} on {dtype_name}")


def test_common_elementwise_programs_qualify() -> None:
    """Six common functions of the sweep run on kernels, not on PJRT: each is run here
    unless this test process ran it already (the sanitizers' job runs only these)."""
    for name in ("sin", "add", "where", "exp", "tanh", "power"):
        if f"{name}-float32" not in _SWEEP_RUNNERS:
            test_the_jnp_sweep_is_bit_for_bit_on_kernels(name, "float32")
        assert _SWEEP_RUNNERS[f"{name}-float32"] == "kernels", name


# ------------------------------------------------------------------ memory


def test_unaligned_inputs_and_outputs_are_staged_and_copied() -> None:
    default, pjrt = both_runners(cx.lower(_value_and_grad, [spec((8,), F32)]))
    raw = np.zeros(8 * 4 + 4, np.uint8)
    x = raw[4:].view(np.float32)  # 4 bytes past an aligned start at best
    x[...] = np.linspace(-2, 2, 8, dtype=np.float32)
    value = np.zeros((), np.float32)
    grad_raw = np.zeros(8 * 4 + 4, np.uint8)
    grad = grad_raw[4:].view(np.float32)
    default.run([x], out=[value, grad])
    theirs = pjrt.run([x])
    same_bits(value, theirs[0])
    same_bits(grad, theirs[1])
    bound = default.bind([x], [value, grad])
    x[...] = -x
    bound()
    theirs = pjrt.run([x])
    same_bits(value, theirs[0])
    same_bits(grad, theirs[1])


def test_a_call_repeated_over_the_same_memory_reuses_its_layout_and_stays_right() -> None:
    """execute() remembers a thread's last kernel-runner call; the same executable over the
    same memory again runs that call resolved, as a bound call does. It must still stage
    an unaligned input's new contents, write every output, say which outputs it wrote in
    place, and forget a call whose scratch another executable's larger call reallocated."""
    small, small_pjrt = both_runners(cx.lower(_value_and_grad, [spec((8,), F32)]))
    large, large_pjrt = both_runners(cx.lower(_affine, [spec((1 << 16,), F32)]))
    assert small.runner.name == large.runner.name == "kernels"
    x = np.zeros(8 * 4 + 4, np.uint8)[4:].view(np.float32)  # staged in the scratch
    value, grad = cx.empty((), np.float32), cx.empty((8,), np.float32)
    grad_off = np.zeros(8 * 4 + 4, np.uint8)[4:].view(np.float32)  # copied out
    big = np.zeros((1 << 18) + 4, np.uint8)[4:].view(np.float32)  # staging larger than x's
    big_out = cx.empty((1 << 16,), np.float32)
    rng = np.random.default_rng(0)
    for k in range(6):
        for outputs, in_place in ([value, grad], [True, True]), ([value, grad_off], [True, False]):
            for call in range(3):  # the second and third reuse the first's layout
                x[...] = rng.uniform(-3, 3, 8).astype(np.float32)
                theirs = small_pjrt.run([x])
                for o in outputs:
                    o[...] = 7
                assert hooks.writes_in_place(small._native, [x], outputs) == in_place
                same_bits(outputs[0], theirs[0], f"round {k}, {in_place}, call {call}")
                same_bits(outputs[1], theirs[1], f"round {k}, {in_place}, call {call}")
        if k % 2 == 1:  # grows this thread's scratch past the small call's staging
            big[...] = rng.uniform(-3, 3, 1 << 16).astype(np.float32)
            large.run([big], out=[big_out])
            same_bits(big_out, large_pjrt.run([big])[0], f"round {k}, the larger program")


def test_outputs_written_in_place_on_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Donated outputs (here made small, so that the program qualifies) are written into
    the caller's memory where it is aligned, and through staging where it is not."""
    monkeypatch.setattr(lowering, "IN_PLACE_MIN_BYTES", 16)
    program = cx.lower(lambda x: (jnp.flip(x) * 2, x.sum()), [spec((8,), F32)])
    assert program.donated_outputs == (0,)
    default, pjrt = both_runners(program)
    assert default.runner.name == "kernels", default.runner.reason
    check_doors(default, pjrt)
    x = cx.zeros((8,), np.float32)
    x[...] = np.arange(8)
    raw = np.zeros(8 * 4 + 4, np.uint8)
    unaligned = raw[4:].view(np.float32)
    total = np.zeros((), np.float32)
    default.run([x], out=[unaligned, total])
    same_bits(unaligned, np.flip(x) * 2)


def _affine(x: jax.Array) -> jax.Array:
    return 2 * x + 1


def test_a_kernel_over_several_workgroups_shares_them_with_helper_threads() -> None:
    """XLA splits a large kernel into workgroups; the runner spreads them over its helper
    threads as PJRT does over its own. Every workgroup runs, once, wherever it runs."""
    specs = [spec((1 << 20,), F32)]
    _, serialized = fresh_compile(_affine, specs, runner="pjrt")
    (thunk,) = hooks.compiled_details(serialized)["thunks"]
    assert thunk["workgroups"][0] * thunk["workgroups"][1] * thunk["workgroups"][2] > 1
    default, pjrt = both_runners(cx.lower(_affine, specs))
    assert default.runner.name == "kernels", default.runner.reason
    check_doors(default, pjrt, seeds=2)


@pytest.mark.parametrize(
    "function, shape, calls",
    [(_fori, (5,), 200), (_affine, (1 << 16,), 50)],
    ids=["fori", "workgroups"],
)
def test_many_threads_run_one_executable_at_once(
    function: Callable[[jax.Array], jax.Array], shape: tuple[int, ...], calls: int
) -> None:
    # With several workgroups, one thread's call shares them with the helpers at a time,
    # and the others run theirs alone.
    default, pjrt = both_runners(cx.lower(function, [spec(shape, F32)]))
    assert default.runner.name == "kernels"
    inputs = [random_inputs(default, seed) for seed in range(8)]
    expected = [pjrt.run(i)[0] for i in inputs]
    failures: list[str] = []

    def work(k: int) -> None:
        for _ in range(calls):
            (got,) = default.run(inputs[k])
            if got.tobytes() != expected[k].tobytes():
                failures.append(f"thread {k}")
                return

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


# ------------------------------------------------------------------ the C door, and choosing


def test_the_c_loader_runs_a_saved_program_on_kernels(tmp_path: Path) -> None:
    program = cx.lower(_value_and_grad, [spec((8,), F32)])
    default, pjrt = both_runners(program)
    status, handle, error = load_from_c(save(program, tmp_path / "vg.cyxla"))
    assert status == OK, error.message
    try:
        x = random_inputs(default, 3)
        for o, t in zip(run_from_c(handle, x), pjrt.run(x), strict=True):
            assert o.tobytes() == np.asarray(t).tobytes()
    finally:
        table().release_program(handle)


def test_cyxla_runner_pjrt_keeps_a_qualifying_program_on_pjrt() -> None:
    program = cx.lower(jnp.sin, [spec((3,), F32)])
    with environment(CYXLA_RUNNER="pjrt"):
        executable, _ = cx.compile_program(program)
    assert executable.runner.name == "pjrt"
    assert executable.runner.would_take == "kernels"
    assert executable.runner.reason == "CYXLA_RUNNER=pjrt asks for PJRT"


def test_an_unknown_cyxla_runner_is_refused_saying_what_it_takes() -> None:
    program = cx.lower(jnp.cos, [spec((3,), F32)])
    with environment(CYXLA_RUNNER="kernel"), pytest.raises(cx.InvalidArgumentError) as raised:
        cx.compile_program(program)
    assert str(raised.value) == (
        "CYXLA_RUNNER is 'kernel'; it takes 'auto' (the kernel runner where a program "
        "qualifies, the default) or 'pjrt'"
    )


def test_the_runner_argument_chooses_over_the_environment() -> None:
    program = cx.lower(jnp.tan, [spec((3,), F32)])
    pjrt, _ = cx.compile_program(program, runner="pjrt")
    assert (pjrt.runner.name, pjrt.runner.would_take) == ("pjrt", "kernels")
    assert pjrt.runner.reason == "runner='pjrt' asks for PJRT"
    with environment(CYXLA_RUNNER="pjrt"):
        auto, _ = cx.compile_program(program, runner="auto")
        from_environment, _ = cx.compile_program(program)
    assert auto.runner.name == "kernels"
    assert from_environment.runner.name == "pjrt"
    x = np.linspace(-1, 1, 3, dtype=np.float32)
    same_bits(auto.run([x])[0], pjrt.run([x])[0])
    batched, _ = cx.compile_batched(
        cx.lower_batched(jnp.tan, [spec((3,), F32)], (4,)), runner="pjrt"
    )
    assert [e.runner.name for e in batched.executables] == ["pjrt"]


@pytest.mark.parametrize(
    ("runner", "error", "words"),
    [
        ("kernel", cx.InvalidArgumentError, "runner is 'kernel'; it takes 'auto' (the kernel"),
        (1, TypeError, "compile_program: runner must be 'auto', 'pjrt' or None, given 1"),
    ],
)
def test_a_runner_argument_naming_no_runner_is_refused(
    runner: Any, error: type, words: str
) -> None:
    with pytest.raises(error) as raised:
        cx.compile_program(cx.lower(jnp.tan, [spec((3,), F32)]), runner=runner)
    assert words in str(raised.value)


def test_a_program_that_does_not_qualify_says_why_and_runs_on_pjrt() -> None:
    executable, _ = cx.compile_program(cx.lower(jnp.sort, [spec((16,), F32)]))
    assert executable.runner.name == executable.runner.would_take == "pjrt"
    assert "'sort' thunk" in executable.runner.reason


def test_batches_run_their_points_on_kernels_bit_for_bit() -> None:
    """A batched program's executables load like any other: each batch size that
    qualifies runs on kernels, points padded or split as before."""
    program = cx.lower_batched(_value_and_grad, [spec((8,), F32)], (16, 256))
    with environment(CYXLA_RUNNER="pjrt"):
        pjrt, _ = cx.compile_batched(program)
    default, _ = cx.compile_batched(program)
    assert [e.runner.name for e in default.executables] == ["kernels", "kernels"]
    rng = np.random.default_rng(5)
    for points in (5, 16, 300):
        x = rng.uniform(-2, 2, (points, 8)).astype(np.float32)
        for ours, theirs in zip(default.run([x]), pjrt.run([x]), strict=True):
            same_bits(ours, theirs, f"{points} points")
