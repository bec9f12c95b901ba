"""jnp.linalg and jax.scipy.linalg through cyxla, against jax.jit.

On the CPU these lower to custom calls into LAPACK handlers: cyxla's own for most
(tests/test_lapack_handlers.py), jaxlib's for the rest, which loading the plugin registers
with it. Each case compiles one program that applies the function to a
single matrix and, through jax.vmap, to a batch of them, in one dtype; cyxla's results
must match jax.jit's."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest

import cyxla as cx

from support import x64_mode

N = 4  # the size of the matrices (jnp.linalg.det has closed forms up to 3 x 3)
BATCH = 2
#: The coverage is of the custom calls, not of XLA's optimizer: compiling without LLVM's
#: optimizations halves the time of the matrix, on both sides.
OPTIONS = {"xla_backend_optimization_level": 0}
FLOATS = ("float32", "float64")
ALL = ("float32", "float64", "complex64", "complex128")
#: Relative and absolute tolerance by precision: the plugin's XLA is not jaxlib's, so
#: the code around the LAPACK calls may round differently.
TOLERANCE = {32: 2e-4, 64: 1e-10}


@dataclass(frozen=True)
class Case:
    """A function of square matrices (and right-hand sides) and the dtypes it takes."""

    name: str
    fn: Callable[..., Any]
    dtypes: Sequence[str] = ALL
    #: What each argument is: "general", "spd" (Hermitian positive definite), "lower"
    #: (lower triangular) or "rhs" (an N x 2 right-hand side).
    args: Sequence[str] = ("general",)


def lu_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    return jsl.lu_solve(jsl.lu_factor(a), b)


def cho_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    return jsl.cho_solve(jsl.cho_factor(a, lower=True), b)


def tensorsolve(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.linalg.tensorsolve(a.reshape(2, 2, N), b[:, 0].reshape(2, 2))


CASES = [
    # jnp.linalg
    Case("cholesky", jnp.linalg.cholesky, args=("spd",)),
    Case("solve", jnp.linalg.solve, args=("general", "rhs")),
    Case("inv", jnp.linalg.inv),
    Case("det", jnp.linalg.det),
    Case("slogdet", jnp.linalg.slogdet),
    Case("eigh", jnp.linalg.eigh, args=("spd",)),
    Case("eig", jnp.linalg.eig),
    Case("eigvals", jnp.linalg.eigvals),
    Case("eigvalsh", jnp.linalg.eigvalsh, args=("spd",)),
    Case("svd", jnp.linalg.svd),
    Case("qr", jnp.linalg.qr),
    Case("lstsq", lambda a, b: jnp.linalg.lstsq(a, b), args=("general", "rhs")),
    Case("pinv", jnp.linalg.pinv),
    Case("matrix_rank", jnp.linalg.matrix_rank),
    Case("norm", lambda a: (jnp.linalg.norm(a, 2), jnp.linalg.norm(a, "nuc"))),
    Case("matrix_power", lambda a: (jnp.linalg.matrix_power(a, 3), jnp.linalg.matrix_power(a, -2))),
    Case("cond", jnp.linalg.cond),
    Case("tensorsolve", tensorsolve, args=("general", "rhs")),
    # jax.scipy.linalg
    Case("scipy.lu", jsl.lu),
    Case("scipy.lu_factor", jsl.lu_factor),
    Case("scipy.lu_solve", lu_solve, args=("general", "rhs")),
    Case("scipy.cho_factor", lambda a: jsl.cho_factor(a)[0], args=("spd",)),
    Case("scipy.cho_solve", cho_solve, args=("spd", "rhs")),
    Case(
        "scipy.solve_triangular",
        lambda a, b: jsl.solve_triangular(a, b, lower=True),
        args=("lower", "rhs"),
    ),
    Case("scipy.qr", jsl.qr),
    Case("scipy.qr_pivoting", lambda a: jsl.qr(a, pivoting=True)),
    Case("scipy.svd", jsl.svd),
    Case("scipy.eigh", jsl.eigh, args=("spd",)),
    Case("scipy.schur", jsl.schur),
    Case("scipy.hessenberg", jsl.hessenberg),
    Case("scipy.expm", jsl.expm),
    Case("scipy.sqrtm", jsl.sqrtm, args=("spd",)),
    Case("scipy.polar", jsl.polar),
    # lax.linalg kernels that the functions above do not reach
    Case(
        "lax.tridiagonal_solve",
        lambda a, b: jax.lax.linalg.tridiagonal_solve(
            jnp.concatenate([jnp.zeros(1, a.dtype), jnp.diagonal(a, -1)]),
            jnp.diagonal(a),
            jnp.concatenate([jnp.diagonal(a, 1), jnp.zeros(1, a.dtype)]),
            b,
        ),
        args=("spd", "rhs"),
    ),
    Case("lax.tridiagonal", lambda a: jax.lax.linalg.tridiagonal(a), args=("spd",)),
]


def matrix(kind: str, dtype: np.dtype, seed: int) -> np.ndarray:
    """A well-conditioned test matrix of `kind` (see Case.args)."""
    rng = np.random.default_rng(seed)
    shape = (N, 2) if kind == "rhs" else (N, N)
    values = rng.standard_normal(shape)
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    if kind == "general":
        values = values + N * np.eye(N)
    elif kind == "spd":
        values = values @ values.conj().T + N * np.eye(N)
    elif kind == "lower":
        values = np.tril(values) + N * np.eye(N)
    return values.astype(dtype)


def arguments(case: Case, dtype: np.dtype) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """One argument set, and a batch of BATCH argument sets."""
    single = [matrix(kind, dtype, seed) for seed, kind in enumerate(case.args)]
    batch = [
        np.stack([matrix(kind, dtype, 10 * (b + 1) + seed) for b in range(BATCH)])
        for seed, kind in enumerate(case.args)
    ]
    return single, batch


def both(fn: Callable[..., Any], count: int) -> Callable[..., Any]:
    """fn on one argument set and, through jax.vmap, on a batch: one program for both."""

    def program(*args: jax.Array) -> tuple[Any, Any]:
        return fn(*args[:count]), jax.vmap(fn)(*args[count:])

    return program


@pytest.fixture
def precision(request: pytest.FixtureRequest) -> Iterator[None]:
    """jax_enable_x64 on for 64-bit cases (float64, complex128), restored after."""
    dtype = np.dtype(request.node.callspec.params["dtype"])
    with x64_mode(dtype in (np.float64, np.complex128)):
        yield


def assert_close(ours: Any, theirs: Any, dtype: np.dtype, where: str) -> None:
    ours_leaves, theirs_leaves = jax.tree.leaves(ours), jax.tree.leaves(theirs)
    assert len(ours_leaves) == len(theirs_leaves), where
    tolerance = TOLERANCE[np.finfo(dtype).bits]
    for index, (a, b) in enumerate(zip(ours_leaves, theirs_leaves, strict=True)):
        b = np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}, output {index}"
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(
                a, b, rtol=tolerance, atol=tolerance, err_msg=f"{where}, output {index}"
            )
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{where}, output {index}")


PARAMS = [
    pytest.param(case, dtype, id=f"{case.name}-{dtype}") for case in CASES for dtype in case.dtypes
]


@pytest.mark.usefixtures("precision")
@pytest.mark.parametrize(("case", "dtype"), PARAMS)
def test_matches_jit(case: Case, dtype: str) -> None:
    single, batch = arguments(case, np.dtype(dtype))
    fn = both(case.fn, len(single))
    program = cx.lower(fn, [*single, *batch])
    assert any(name.startswith("lapack_") or "tridiagonal" in name for name in program.custom_calls)
    executable, _ = cx.compile_program(program, options=OPTIONS)
    ours = jax.tree.unflatten(program.output_tree, executable.run([*single, *batch]))
    theirs = jax.jit(fn).lower(*single, *batch).compile(OPTIONS)(*single, *batch)
    assert_close(ours, theirs, np.dtype(dtype), f"{case.name} ({dtype})")


def test_readme_cholesky() -> None:
    """The README's second example, as written there."""
    matrix = np.array([[4.0, 1.0], [1.0, 3.0]])
    program = cx.lower(jnp.linalg.cholesky, [jax.ShapeDtypeStruct((2, 2), jnp.float32)])
    executable, _ = cx.compile_program(program)
    (factor,) = executable.run([matrix])
    assert np.allclose(factor, np.linalg.cholesky(matrix))
    assert program.custom_calls == ("lapack_spotrf_ffi",)
