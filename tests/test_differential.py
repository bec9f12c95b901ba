"""cyxla against jax.jit: the same function on the same inputs must give the same outputs.

jax.jit runs jaxlib's own XLA; cyxla runs the plugin's separate build of XLA. Integer,
boolean, data-movement and single IEEE operations (+, -, *, /, comparisons, sorting,
gathers) are exact in both, so they are compared exactly. Transcendental functions,
reductions and dot products may use other polynomials, vector widths or summation
orders in the two builds; those are compared with a tolerance of a few float32 ulps
scaled to the size of the computation (documented at each use).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import cyxla as cx
from cyxla._run.aligned import empty_at

from support import specs_of

#: float32 results of a few transcendental operations: the builds may differ by a few
#: ulps (eps = 1.19e-7), so 1e-5 relative with an absolute floor for values near zero.
TRANSCENDENTAL = {"rtol": 1e-5, "atol": 1e-6}
#: float32 reductions and dot products of N(0, 1) values over up to ~100 terms: another
#: summation order changes the result by about sqrt(n) * eps * max|term|.
ACCUMULATED = {"rtol": 2e-5, "atol": 2e-5}
#: Sums of a few float32 terms that either build may add in another order (scatter-add
#: to a repeated index, segment sums): a rounding or two of values of magnitude ~3.
REORDERED = {"rtol": 1e-6, "atol": 1e-6}
EXACT: dict[str, float] = {"rtol": 0.0, "atol": 0.0}


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def normal(shape: Sequence[int], seed: int = 0, dtype: Any = np.float32) -> np.ndarray:
    return rng(seed).standard_normal(tuple(shape)).astype(dtype)


def run_both(
    fn: Callable[..., Any], args: Sequence[Any]
) -> tuple[cx.Program, tuple[np.ndarray, ...], list[np.ndarray]]:
    """Lowers, compiles and runs `fn` with cyxla, and runs it with jax.jit."""
    program = cx.lower(fn, specs_of(args))
    executable, _ = cx.compile_program(program)
    ours = executable.run(jax.tree.leaves(list(args)))
    theirs = [np.asarray(leaf) for leaf in jax.tree.leaves(jax.jit(fn)(*args))]
    return program, ours, theirs


def assert_matches(
    ours: Sequence[np.ndarray], theirs: Sequence[np.ndarray], rtol: float, atol: float
) -> None:
    assert len(ours) == len(theirs)
    for index, (mine, reference) in enumerate(zip(ours, theirs, strict=True)):
        assert isinstance(mine, np.ndarray), index
        assert mine.dtype == reference.dtype, (index, mine.dtype, reference.dtype)
        assert mine.shape == reference.shape, (index, mine.shape, reference.shape)
        if rtol == 0 and atol == 0:
            np.testing.assert_array_equal(mine, reference, err_msg=f"output {index}")
        else:
            np.testing.assert_allclose(
                mine, reference, rtol=rtol, atol=atol, err_msg=f"output {index}"
            )


def check(fn: Callable[..., Any], *args: Any, tolerance: dict[str, float] = EXACT) -> None:
    _, ours, theirs = run_both(fn, args)
    assert_matches(ours, theirs, **tolerance)


# ------------------------------------------------------------------------ the cases


def elementwise(x: jax.Array, y: jax.Array) -> jax.Array:
    return (
        jnp.sin(x) * jnp.exp(-(x**2))
        + jnp.tanh(y) / (1 + jnp.abs(x))
        + jnp.log1p(jnp.abs(y))
        + jnp.sqrt(jnp.abs(x * y))
        + jnp.arctan2(x, y)
        + jnp.where(x > y, jnp.cos(y), jnp.expm1(x))
    )


def reductions(x: jax.Array) -> tuple[jax.Array, ...]:
    return (
        jnp.sum(x),
        jnp.sum(x, axis=0),
        jnp.mean(x, axis=1),
        jnp.max(x, axis=1),
        jnp.min(x),
        jnp.prod(x[:2, :3], axis=1),
        jnp.cumsum(x, axis=1),
        jax.nn.logsumexp(x, axis=0),
        jnp.std(x),
    )


def arg_reductions(x: jax.Array) -> tuple[jax.Array, ...]:
    return jnp.argmax(x, axis=1), jnp.argmin(x, axis=0)


def matmul(x: jax.Array, w: jax.Array, a: jax.Array, b: jax.Array) -> tuple[jax.Array, ...]:
    return (
        x @ w,
        jnp.einsum("bij,bjk->bik", a, b),
        lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
        jnp.dot(x[0], w[:, 1]),
    )


def broadcasting(x: jax.Array, y: jax.Array, s: jax.Array) -> tuple[jax.Array, ...]:
    return x + y * s, jnp.broadcast_to(y, (5, 3, 4)) - x, jnp.maximum(x, s)


def cond(p: jax.Array, x: jax.Array) -> jax.Array:
    return lax.cond(p, lambda v: v * 2 + 1, lambda v: v - 10, x)


def switch(i: jax.Array, x: jax.Array) -> jax.Array:
    return lax.switch(i, [lambda v: v + 1, lambda v: v * v, lambda v: -v], x)


def while_loop(n: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Counts Collatz steps of n, and repeats a Newton step for sqrt(x) that often."""

    def body(state: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        value, steps, root = state
        value = jnp.where(value % 2 == 0, value // 2, 3 * value + 1)
        return value, steps + 1, 0.5 * (root + x / root)

    _, steps, root = lax.while_loop(lambda s: s[0] != 1, body, (n, jnp.int32(0), x))
    return steps, root


def scan(xs: jax.Array, init: jax.Array) -> tuple[jax.Array, jax.Array]:
    def step(carry: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        carry = 0.9 * carry + x
        return carry, carry * 2

    return lax.scan(step, init, xs)


def sorting(x: jax.Array, keys: jax.Array) -> tuple[jax.Array, ...]:
    return (
        jnp.sort(x, axis=-1),
        jnp.argsort(keys, stable=True),
        jnp.sort(keys)[::-1],
        lax.sort((keys, x[0]), num_keys=1)[1],
        lax.top_k(x, 3)[0],
    )


def gather_scatter(
    x: jax.Array, idx: jax.Array, rows: jax.Array, v: jax.Array
) -> tuple[jax.Array, ...]:
    return (
        x.at[idx].add(v),  # repeated indices accumulate
        x.at[idx].set(v[::-1]),
        x[idx],
        x.reshape(4, 5)[rows, :],
        x.reshape(4, 5)[rows, idx[:3] % 5],
        jnp.take(x, idx, axis=0),
        jax.ops.segment_sum(v, idx % 3, num_segments=3),
        x.at[idx].max(v),
    )


def integer_ops(a: jax.Array, b: jax.Array, u: jax.Array) -> tuple[jax.Array, ...]:
    nonzero = jnp.where(b == 0, 1, b)
    return (
        a + b,
        a * b * 65537,  # wraps around in int32, in both
        a // nonzero,  # floor division of negative numbers
        a % nonzero,
        a & b,
        a | b,
        a ^ b,
        ~a,
        a << 3,
        a >> 2,
        u >> 3,
        jnp.abs(a),
        jnp.sign(a),
        jnp.minimum(a, b),
        a < b,
        (a == b).astype(jnp.int8),
        u * u,
        u - 7,  # wraps around in uint32
        jnp.sum(a, axis=0),
        jnp.clip(a, -5, 5),
    )


def bool_ops(p: jax.Array, q: jax.Array) -> tuple[jax.Array, ...]:
    return (
        p & q,
        p | q,
        p ^ q,
        ~p,
        jnp.any(p, axis=0),
        jnp.all(q),
        jnp.where(p, 1.5, -2.0),
        jnp.sum(p),
        jnp.logical_and(p, ~q),
    )


def mixed_types(x: jax.Array, n: jax.Array) -> tuple[jax.Array, ...]:
    return (x * n, x.astype(jnp.int32), n.astype(jnp.float32) / 3, (x > 0).astype(jnp.uint8))


CASES: dict[str, tuple[Callable[..., Any], tuple[Any, ...], dict[str, float]]] = {
    "elementwise": (elementwise, (normal((3, 4)), normal((3, 4), 1)), TRANSCENDENTAL),
    "reductions": (reductions, (normal((5, 7)),), ACCUMULATED),
    "arg_reductions": (arg_reductions, (normal((5, 7)),), EXACT),
    "matmul": (
        matmul,
        (normal((8, 16)), normal((16, 4), 1), normal((3, 4, 5), 2), normal((3, 5, 2), 3)),
        ACCUMULATED,
    ),
    "broadcasting": (
        broadcasting,
        # A power of two for s keeps y * s exact, so a fused multiply-add in either build
        # rounds the same as a multiply and an add.
        (normal((5, 3, 1)), normal((3, 4), 1), np.float32(0.5)),
        EXACT,
    ),
    "while_loop": (while_loop, (np.int32(27), np.float32(2.0)), TRANSCENDENTAL),
    "scan": (scan, (normal((12, 3)), normal((3,), 1)), ACCUMULATED),
    "sorting": (
        sorting,
        (normal((4, 9)), np.array([3, 1, 2, 1, 3, 0, 2, 1, 3], np.int32)),
        EXACT,
    ),
    "gather_scatter": (
        gather_scatter,
        (
            normal((20,)),
            np.array([3, 7, 3, 19, 0, -1, 7], np.int32),
            np.array([2, 0, 3], np.int32),
            normal((7,), 1),
        ),
        REORDERED,
    ),
    "integer_ops": (
        integer_ops,
        (
            rng(1).integers(-50, 50, (4, 6), dtype=np.int32),
            rng(2).integers(-9, 9, (4, 6), dtype=np.int32),
            rng(3).integers(0, 2**32, (6,), dtype=np.uint32),
        ),
        EXACT,
    ),
    "bool_ops": (
        bool_ops,
        (rng(4).integers(0, 2, (3, 5)).astype(bool), rng(5).integers(0, 2, (3, 5)).astype(bool)),
        EXACT,
    ),
    "mixed_types": (mixed_types, (normal((6,)) * 10, np.int32(7)), EXACT),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_jit(name: str) -> None:
    fn, args, tolerance = CASES[name]
    check(fn, *args, tolerance=tolerance)


def test_cond_takes_either_branch() -> None:
    x = normal((4,))
    executable = cx.compile_program(cx.lower(cond, specs_of([np.bool_(True), x])))[0]
    jitted = jax.jit(cond)
    for p in (True, False):
        (ours,) = executable.run([np.bool_(p), x])
        np.testing.assert_array_equal(ours, np.asarray(jitted(p, x)))
    # The two branches differ, so the comparison above could not pass by accident.
    assert not np.array_equal(executable.run([True, x])[0], executable.run([False, x])[0])


def test_switch_takes_every_branch() -> None:
    x = normal((3,))
    executable = cx.compile_program(cx.lower(switch, specs_of([np.int32(0), x])))[0]
    results = []
    for i in (0, 1, 2, 7):  # lax.switch clamps an index out of range, in both
        (ours,) = executable.run([np.int32(i), x])
        np.testing.assert_array_equal(ours, np.asarray(jax.jit(switch)(np.int32(i), x)))
        results.append(ours)
    assert len({r.tobytes() for r in results[:3]}) == 3


def test_while_loop_counts_the_steps() -> None:
    """An independent check of the loop: 27 takes 111 Collatz steps to reach 1."""
    _, (steps, root), _ = run_both(while_loop, (np.int32(27), np.float32(2.0)))
    assert steps == 111
    np.testing.assert_allclose(root, np.sqrt(2.0), rtol=1e-6)


def test_scan_matches_numpy() -> None:
    xs, init = normal((12, 3)), normal((3,), 1)
    _, (carry, ys), _ = run_both(scan, (xs, init))
    expected, stacked = init.astype(np.float64), []
    for x in xs:
        expected = 0.9 * expected + x
        stacked.append(expected * 2)
    np.testing.assert_allclose(carry, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ys, np.array(stacked), rtol=1e-5, atol=1e-5)


def test_gather_scatter_matches_numpy() -> None:
    x, idx = normal((20,)), np.array([3, 7, 3, 19, 0, -1, 7], np.int32)
    v = normal((7,), 1)
    _, outputs, _ = run_both(gather_scatter, (x, idx, np.array([2, 0, 3], np.int32), v))
    added = x.copy()
    np.add.at(added, idx, v)
    np.testing.assert_allclose(outputs[0], added, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(outputs[2], x[idx])


# ------------------------------------------------------------------------ outputs


def test_multiple_outputs_of_different_types() -> None:
    def fn(x: jax.Array) -> tuple[jax.Array, ...]:
        return x.sum(), x > 0, x.astype(jnp.int16), jnp.zeros((2, 0), jnp.float32), x.T

    program, ours, theirs = run_both(fn, (normal((3, 2)),))
    assert [str(o) for o in program.outputs] == [
        "float32[]",
        "bool[3,2]",
        "int16[3,2]",
        "float32[2,0]",
        "float32[2,3]",
    ]
    assert_matches(ours, theirs, rtol=1e-6, atol=1e-6)


def test_pytree_outputs_come_back_in_tree_order() -> None:
    def fn(x: jax.Array, y: jax.Array) -> dict[str, Any]:
        return {"z": x * 2, "a": (y + 1, {"m": x - y, "b": y.sum()}), "n": [x.max()]}

    x, y = normal((3,)), normal((3,), 1)
    program, ours, theirs = run_both(fn, (x, y))
    assert_matches(ours, theirs, **EXACT)
    reference = jax.jit(fn)(x, y)
    assert program.output_tree == jax.tree.structure(reference)
    rebuilt = jax.tree.unflatten(program.output_tree, ours)
    assert set(rebuilt) == {"z", "a", "n"}
    np.testing.assert_array_equal(rebuilt["z"], x * 2)
    np.testing.assert_array_equal(rebuilt["a"][0], y + 1)
    np.testing.assert_array_equal(rebuilt["a"][1]["m"], x - y)
    np.testing.assert_array_equal(rebuilt["n"][0], x.max())


def test_pytree_inputs_are_flattened_in_tree_order() -> None:
    def fn(params: dict[str, Any], batch: tuple[jax.Array, jax.Array]) -> jax.Array:
        w, (b, scale) = params["w"], params["extra"]
        x, y = batch
        return jnp.sum((x @ w + b) * scale - y)

    params = {"w": normal((4, 2)), "extra": (normal((2,), 1), np.float32(0.5))}
    batch = (normal((5, 4), 2), normal((5, 2), 3))
    program, ours, theirs = run_both(fn, (params, batch))
    leaves = jax.tree.leaves([params, batch])
    assert [s.shape for s in program.inputs] == [leaf.shape for leaf in leaves]
    assert [s.shape for s in program.inputs] == [(2,), (), (4, 2), (5, 4), (5, 2)]
    assert_matches(ours, theirs, **ACCUMULATED)


def test_outputs_are_fresh_arrays() -> None:
    """Each run returns new arrays: a later run leaves earlier results alone, and the
    inputs are not modified, even though the CPU plugin aliases them."""
    x = normal((1024,))
    original = x.copy()
    executable = cx.compile_program(cx.lower(lambda v: v * 3, specs_of([x])))[0]
    (first,) = executable.run([x])
    (second,) = executable.run([x + 1])
    np.testing.assert_array_equal(first, original * 3)
    np.testing.assert_array_equal(second, (original + 1) * 3)
    np.testing.assert_array_equal(x, original)
    assert first.flags.owndata and first.flags.c_contiguous


# ------------------------------------------------------------------------ shapes


def test_scalars() -> None:
    def fn(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
        return a * b + 1, jnp.int32(3) * (a > b)

    program, ours, theirs = run_both(fn, (np.float32(2.5), np.float32(-1.25)))
    assert [s.shape for s in program.inputs + program.outputs] == [(), (), (), ()]
    assert_matches(ours, theirs, **EXACT)
    executable = cx.compile_program(program)[0]
    # Python numbers and 0-d arrays are accepted for scalar inputs.
    for a, b in [(2.5, -1.25), (np.array(2.5), np.float64(-1.25)), (5, 2)]:
        got = executable.run([a, b])
        want = jax.jit(fn)(np.float32(a), np.float32(b))
        assert_matches(got, [np.asarray(w) for w in want], **EXACT)
        assert got[0].shape == ()


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3)])
def test_zero_size_arrays(shape: tuple[int, ...]) -> None:
    def fn(x: jax.Array, y: jax.Array) -> tuple[jax.Array, ...]:
        return x * 2, jnp.sum(x), jnp.max(x, initial=-1.0), jnp.concatenate([x.ravel(), y])

    x, y = np.zeros(shape, np.float32), normal((3,))
    program, ours, theirs = run_both(fn, (x, y))
    assert program.inputs[0].shape == shape
    assert program.inputs[0].nbytes == 0
    assert_matches(ours, theirs, **EXACT)
    assert ours[0].shape == shape
    assert ours[1] == 0.0
    np.testing.assert_array_equal(ours[3], y)


def test_zero_size_output_from_nonempty_input() -> None:
    check(lambda x: (x[:0], x[:, 2:2] + 1, x.sum()), normal((3, 4)), tolerance=ACCUMULATED)


def _cumsum_twice(v: jax.Array) -> jax.Array:
    return jnp.cumsum(v, axis=0) * 2


@pytest.fixture(scope="module")
def cumsum_executable() -> cx.Executable:
    program = cx.lower(_cumsum_twice, [jax.ShapeDtypeStruct((8, 6), jnp.float32)])
    return cx.compile_program(program)[0]


def _unaligned(a: np.ndarray) -> np.ndarray:
    """A writable C-contiguous copy of `a` that starts 4 bytes past a 64-byte boundary."""
    view = empty_at(4, a.shape, a.dtype)
    view[...] = a
    assert view.ctypes.data % 64 == 4 and view.flags.c_contiguous
    return view


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda a: np.asfortranarray(a), id="fortran"),
        pytest.param(lambda a: np.repeat(a, 2, axis=1)[:, ::2], id="strided"),
        pytest.param(_unaligned, id="unaligned"),
    ],
)
def test_inputs_in_any_memory_layout(
    make: Callable[[np.ndarray], np.ndarray], cumsum_executable: cx.Executable
) -> None:
    """Non-contiguous inputs are made contiguous; unaligned ones are copied by the core
    instead of aliased. Either way the program sees the same values."""
    x = normal((8, 6))
    view = make(x)
    np.testing.assert_array_equal(view, x)
    (ours,) = cumsum_executable.run([view])
    np.testing.assert_allclose(ours, np.asarray(jax.jit(_cumsum_twice)(x)), **ACCUMULATED)


def test_read_only_inputs() -> None:
    """Inputs are only read: arrays that NumPy marks read-only work like any other."""
    x = normal((5,))
    executable = cx.compile_program(cx.lower(lambda v: v + 1, specs_of([x])))[0]
    frozen = x.copy()
    frozen.flags.writeable = False
    from_jax = np.asarray(jnp.asarray(x))
    assert not from_jax.flags.writeable
    for value in (frozen, from_jax):
        (ours,) = executable.run([value])
        np.testing.assert_array_equal(ours, x + 1)


def test_large_input() -> None:
    """About 64 MB of float32 in, the same out, and a reduction over all of it."""
    n = 16 * 1024 * 1024
    x = rng(7).random(n, dtype=np.float32)

    def fn(v: jax.Array) -> tuple[jax.Array, jax.Array]:
        return v * 2 + 1, jnp.mean(v)

    program, (scaled, mean), theirs = run_both(fn, (x,))
    assert program.inputs[0].nbytes == 64 * 1024 * 1024
    np.testing.assert_array_equal(scaled, theirs[0])  # one rounding, the same in both
    np.testing.assert_array_equal(scaled[:1000], x[:1000] * 2 + 1)
    # A mean of 2**24 values in [0, 1) summed in float32, in another order in each build:
    # pairwise or blocked summation keeps the error near 1e-6 relative; 1e-4 leaves room
    # for a plainer order, and is still far below what a wrong or missing block gives.
    np.testing.assert_allclose(mean, theirs[1], rtol=1e-4)
    np.testing.assert_allclose(mean, x.mean(dtype=np.float64), rtol=1e-4)
