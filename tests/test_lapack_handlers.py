"""cyxla's own LAPACK handlers (src/lapack/), which the core registers with every CPU
plugin in place of jaxlib's.

The oracle of each handler is jaxlib's handler of the same target, run by jax.jit in
JAX's own runtime with the same operands, attributes and layouts: both call the LAPACK
library that SciPy carries, so the outputs must be the same bits (info and the factors of
singular and indefinite matrices included). jax.jit is the oracle on every pairing: on
jax 0.12, jaxlib's handlers are built against a newer XLA FFI than the plugin runs, so the
plugin cannot run them beside cyxla's (issue 32). End to end,
`jnp.linalg` through cyxla is checked against jax.jit, and a program saved here runs in a
process without Python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx
from cyxla import _core
from cyxla._ffi import sources as ffi_sources

from support import run_python, x64_mode

DTYPES = ("float32", "float64", "complex64", "complex128")
LETTER = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}
COMPLEX = {"float32": "complex64", "float64": "complex128"}
COMPLEX.update({"complex64": "complex64", "complex128": "complex128"})
BATCHES = [(), (2, 3)]
I32 = np.dtype(np.int32)


@dataclass(frozen=True)
class Family:
    """One routine's custom call: operand and result shapes from (batch, m, n), its
    attributes and which operand each result overwrites."""

    name: str  # the routine of the real types ("getrf"); `complex_name` of the others
    operands: Callable[[tuple[int, ...], int, int, str], list[tuple[tuple[int, ...], str]]]
    results: Callable[[tuple[int, ...], int, int, str], list[tuple[tuple[int, ...], str]]]
    attributes: dict[str, str] = field(default_factory=dict)
    aliases: dict[int, int] = field(default_factory=lambda: {0: 0})
    complex_name: str | None = None
    shapes: Sequence[tuple[int, int]] = ((4, 4),)
    #: What the matrix operand holds: "general", "spd", "singular", "indefinite".
    kinds: Sequence[str] = ("general",)

    def target(self, dtype: str) -> str:
        name = self.complex_name if dtype.startswith("complex") and self.complex_name else self.name
        return f"lapack_{LETTER[dtype]}{name}_ffi"


def _k(m: int, n: int) -> int:
    return min(m, n)


FAMILIES = [
    Family(
        "getrf",
        lambda b, m, n, t: [((*b, m, n), t)],
        lambda b, m, n, t: [((*b, m, n), t), ((*b, _k(m, n)), "int32"), (b, "int32")],
        # No 0 x 0: the 0.11.2 plugin dies of SIGFPE compiling a custom call on empty
        # column-major matrices, whichever handler the target has.
        shapes=((4, 4), (5, 3), (3, 5)),
        kinds=("general", "singular"),
    ),
    Family(
        "trsm",
        lambda b, m, n, t: [((*b, m, m), t), ((*b, m, n), t)],
        lambda b, m, n, t: [((*b, m, n), t)],
        attributes={"side": "L", "uplo": "L", "trans_x": "T", "diag": "N"},
        aliases={1: 0},
        shapes=((4, 2), (3, 3)),
        kinds=("spd",),
    ),
    Family(
        "potrf",
        lambda b, m, n, t: [((*b, m, m), t)],
        lambda b, m, n, t: [((*b, m, m), t), (b, "int32")],
        attributes={"uplo": "L"},
        shapes=((4, 4), (1, 1)),
        kinds=("spd", "indefinite"),
    ),
    Family(
        "geqrf",
        lambda b, m, n, t: [((*b, m, n), t)],
        lambda b, m, n, t: [((*b, m, n), t), ((*b, _k(m, n)), t)],
        shapes=((4, 4), (6, 3), (3, 6)),
    ),
    Family(
        "orgqr",
        lambda b, m, n, t: [((*b, m, n), t), ((*b, n), t)],
        lambda b, m, n, t: [((*b, m, n), t)],
        complex_name="ungqr",
        shapes=((4, 4), (6, 3)),
    ),
    Family(
        "syevd",
        lambda b, m, n, t: [((*b, m, m), t)],
        lambda b, m, n, t: [((*b, m, m), t), ((*b, m), REAL[t]), (b, "int32")],
        attributes={"uplo": "L", "mode": "V"},
        complex_name="heevd",
        shapes=((4, 4), (7, 7)),
        kinds=("spd", "general"),
    ),
    Family(
        "gesdd",
        lambda b, m, n, t: [((*b, m, n), t)],
        lambda b, m, n, t: [
            ((*b, m, n), t),
            ((*b, _k(m, n)), REAL[t]),
            ((*b, m, m), t),
            ((*b, n, n), t),
            (b, "int32"),
        ],
        attributes={"mode": "A"},
        shapes=((4, 4), (5, 3), (3, 5)),
    ),
]
FAMILIES += [
    Family(
        "geev",
        lambda b, m, n, t: [((*b, m, m), t)],
        lambda b, m, n, t: [
            *([((*b, m), t)] if t.startswith("complex") else [((*b, m), t), ((*b, m), t)]),
            ((*b, m, m), COMPLEX[t]),
            ((*b, m, m), COMPLEX[t]),
            (b, "int32"),
        ],
        attributes={"compute_left": "V", "compute_right": "V"},
        aliases={},
        shapes=((4, 4), (6, 6)),
        kinds=("general", "nonfinite"),
    ),
    Family(
        "gees",
        lambda b, m, n, t: [((*b, m, m), t)],
        lambda b, m, n, t: [
            ((*b, m, m), t),
            ((*b, m, m), t),
            *([((*b, m), t)] if t.startswith("complex") else [((*b, m), t), ((*b, m), t)]),
            (b, "int32"),
            (b, "int32"),
        ],
        attributes={"mode": "V", "sort": "N"},
        shapes=((4, 4), (6, 6)),
    ),
    Family(
        "geqp3",
        lambda b, m, n, t: [((*b, m, n), t), ((*b, n), "int32")],
        lambda b, m, n, t: [((*b, m, n), t), ((*b, n), "int32"), ((*b, min(m, n)), t)],
        aliases={0: 0, 1: 1},
        shapes=((4, 4), (6, 3), (3, 6)),
        kinds=("general", "fixed"),
    ),
    Family(
        "gehrd",
        lambda b, m, n, t: [((*b, m, m), t)],
        lambda b, m, n, t: [((*b, m, m), t), ((*b, m - 1), t), (b, "int32")],
        attributes={"low": np.int32(1), "high": "n"},
        shapes=((4, 4), (7, 7)),
    ),
    Family(
        "sytrd",
        lambda b, m, n, t: [((*b, m, m), t)],
        lambda b, m, n, t: [
            ((*b, m, m), t),
            ((*b, m), REAL[t]),
            ((*b, m - 1), REAL[t]),
            ((*b, m - 1), t),
            (b, "int32"),
        ],
        attributes={"uplo": "L"},
        complex_name="hetrd",
        shapes=((4, 4), (7, 7)),
        kinds=("spd",),
    ),
    Family(
        "gtsv",
        lambda b, m, n, t: [((*b, m), t), ((*b, m), t), ((*b, m), t), ((*b, m, n), t)],
        lambda b, m, n, t: [
            ((*b, m), t),
            ((*b, m), t),
            ((*b, m), t),
            ((*b, m, n), t),
            (b, "int32"),
        ],
        aliases={},
        shapes=((5, 2), (1, 3)),
    ),
]
FAMILIES += [
    Family(
        "gesvd",
        lambda b, m, n, t: [((*b, m, n), t)],
        lambda b, m, n, t: [
            ((*b, m, n), t),
            ((*b, min(m, n)), REAL[t]),
            ((*b, m, m), t),
            ((*b, n, n), t),
            (b, "int32"),
        ],
        attributes={"mode": "A"},
        shapes=((4, 4), (5, 3), (3, 5)),
    ),
    Family(
        "ormqr",
        lambda b, m, n, t: [((*b, m, 3), t), ((*b, 3), t), ((*b, m, n), t)],
        lambda b, m, n, t: [((*b, m, n), t)],
        attributes={"left": np.bool_(True), "transpose": np.bool_(True)},
        aliases={2: 0},
        complex_name="unmqr",
        shapes=((4, 2), (5, 5)),
    ),
]
FAMILY = {f.name: f for f in FAMILIES}


def layout(shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """Column-major matrices, as jaxlib's lowering lays them out (major-to-minor)."""
    rank = len(shape)
    return (*range(rank - 2), rank - 1, rank - 2) if rank >= 2 else None


def raw_call(
    target: str,
    family: Family,
    batch: tuple[int, ...],
    m: int,
    n: int,
    dtype: str,
    attributes: dict[str, Any] | None = None,
) -> Callable[..., Any]:
    """A function that is one custom call to `target` with `family`'s contract."""
    operands = family.operands(batch, m, n, dtype)
    results = family.results(batch, m, n, dtype)
    given = family.attributes if attributes is None else attributes
    attrs = {
        k: np.int32(m) if v == "n" else np.uint8(ord(v)) if isinstance(v, str) else v
        for k, v in given.items()
    }
    call = jax.ffi.ffi_call(
        target,
        [jax.ShapeDtypeStruct(s, np.dtype(t)) for s, t in results],
        input_layouts=[layout(s) for s, _ in operands],
        output_layouts=[layout(s) for s, _ in results],
        input_output_aliases=family.aliases,
        vmap_method="sequential",
    )
    return lambda *args: call(*args, **attrs)


def matrix(kind: str, shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    if kind in ("spd", "indefinite") and shape[-1] == shape[-2]:
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])
        if kind == "indefinite":
            a[..., -1, -1] = -1.0
    if kind == "nonfinite":
        a[..., 0, 0] = np.inf
    if kind == "singular" and shape[-1] > 1 and shape[-2] > 0:
        a[..., :, -1] = 0  # a zero column: an exactly zero pivot
    return np.ascontiguousarray(a.astype(dtype))


def inputs(
    family: Family, kind: str, batch: tuple[int, ...], m: int, n: int, dtype: str
) -> list[np.ndarray]:
    operands = family.operands(batch, m, n, dtype)
    values = [
        matrix(kind, s, t, i) if len(s) >= len(batch) + 2 else matrix("general", s, t, i)
        for i, (s, t) in enumerate(operands)
    ]
    if family.name == "geqp3":
        # The pivots' start: 0 lets a column move; "fixed" pins the last to the front.
        values[1] = np.zeros(values[1].shape, np.int32)
        if kind == "fixed":
            values[1][..., -1] = 1
    if family.name == "orgqr":
        # Reflectors from a real QR, so that Q is a meaningful matrix.
        with x64_mode(True):
            geqrf = FAMILY["geqrf"]
            call = raw_call(geqrf.target(dtype), geqrf, batch, m, n, dtype)
            values = [np.asarray(v) for v in _run_cyxla(call, values[:1])]
    return values


def _run_cyxla(
    fn: Callable[..., Any], args: Sequence[np.ndarray], custom_calls: Sequence[str] = ()
) -> tuple[np.ndarray, ...]:
    program = cx.lower(fn, list(args), custom_calls=list(custom_calls))
    executable, _ = cx.compile_program(program, options={"xla_backend_optimization_level": 0})
    return executable.run(list(args))


@pytest.fixture(scope="module")
def jaxlib_lapack() -> None:
    """jaxlib's handlers, which jax.jit runs, ready to call: the raw custom calls below
    skip `jnp.linalg`, whose lowering would otherwise find SciPy's LAPACK for them."""
    from jaxlib.cpu import _lapack

    _lapack.initialize()


def bits(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array).tobytes()


PARAMS = [
    pytest.param(
        f.name,
        dtype,
        batch,
        shape,
        kind,
        id=f"{f.name}-{dtype}-{batch}-{shape[0]}x{shape[1]}-{kind}",
    )
    for f in FAMILIES
    for dtype in DTYPES
    for batch in BATCHES
    for shape in f.shapes
    for kind in f.kinds
]


@pytest.mark.parametrize(("name", "dtype", "batch", "shape", "kind"), PARAMS)
@pytest.mark.usefixtures("jaxlib_lapack")
def test_same_bits_as_jaxlibs_handler(
    name: str,
    dtype: str,
    batch: tuple[int, ...],
    shape: tuple[int, int],
    kind: str,
) -> None:
    family = FAMILY[name]
    m, n = shape
    target = family.target(dtype)
    with x64_mode(True):
        args = inputs(family, kind, batch, m, n, dtype)
        call = raw_call(target, family, batch, m, n, dtype)
        ours = _run_cyxla(call, args)
        theirs = tuple(np.asarray(r) for r in jax.jit(call)(*args))
    assert len(ours) == len(theirs)
    if kind == "nonfinite":  # geev leaves all but info as they were: compare info (-4)
        ours, theirs = ours[-1:], theirs[-1:]
        assert np.all(ours[0] == -4)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.dtype == b.dtype and a.shape == b.shape, i
        assert bits(a) == bits(b), f"result {i} of {target}: {a} != {b}"
    if kind in ("singular", "indefinite") and m == n:
        assert np.all(ours[-1] > 0), "LAPACK's info reports the failure"


# ------------------------------------------------------------------ what a handler refuses


def custom_call(
    target: str,
    operands: Sequence[np.ndarray],
    results: Sequence[tuple[tuple[int, ...], str]],
    **attributes: Any,
) -> tuple[np.ndarray, ...]:
    """Runs one call of `target` through cyxla with any operands, results and attributes
    (as a program file may say), column-major as jaxlib lays matrices out."""
    call = jax.ffi.ffi_call(
        target,
        [jax.ShapeDtypeStruct(s, np.dtype(t)) for s, t in results],
        input_layouts=[layout(a.shape) for a in operands],
        output_layouts=[layout(s) for s, _ in results],
        vmap_method="sequential",
    )
    with x64_mode(True):
        return _run_cyxla(lambda *args: call(*args, **attributes), operands)


F32 = "float32"
SQUARE = np.eye(3, dtype=np.float32) * 2
L = np.uint8(ord("L"))

REFUSALS = [
    pytest.param(
        "lapack_spotrf_ffi",
        [SQUARE],
        [((3, 3), F32), ((), "int32")],
        {"uplo": np.uint8(88)},
        "the attribute 'uplo' is 88, expected the code of 'L', 'U'",
        id="attribute-value",
    ),
    pytest.param(
        "lapack_spotrf_ffi",
        [SQUARE],
        [((3, 3), F32), ((), "int32")],
        {},
        "the attribute 'uplo' is missing",
        id="attribute-missing",
    ),
    pytest.param(
        "lapack_spotrf_ffi",
        [SQUARE],
        [((3, 3), F32), ((), "int32")],
        {"uplo": np.int32(76)},
        "the attribute 'uplo' is not a uint8 scalar",
        id="attribute-type",
    ),
    pytest.param(
        "lapack_spotrf_ffi",
        [np.ones((3, 2), np.float32)],
        [((3, 2), F32), ((), "int32")],
        {"uplo": L},
        "x holds 3x2 matrices, expected square ones",
        id="not-square",
    ),
    pytest.param(
        "lapack_sgetrf_ffi",
        [SQUARE],
        [((3, 3), F32), ((3,), "int32"), ((), F32)],
        {},
        "result 2 (info) is float32, expected int32",
        id="result-dtype",
    ),
    pytest.param(
        "lapack_sgetrf_ffi",
        [SQUARE],
        [((3, 3), F32), ((4,), "int32"), ((), "int32")],
        {},
        "ipiv has the dimensions [4], expected [3]",
        id="result-dims",
    ),
    pytest.param(
        "lapack_sgetrf_ffi",
        [SQUARE],
        [((3, 3), F32), ((3,), "int32")],
        {},
        "takes 1 operands and 3 results, the program passes 1 and 2",
        id="result-count",
    ),
    pytest.param(
        "lapack_sgetrf_ffi",
        [np.ones(3, np.float32)],
        [((3,), F32), ((1,), "int32"), ((), "int32")],
        {},
        "x has the dimensions [3], expected a matrix or a batch of them",
        id="rank",
    ),
    pytest.param(
        "lapack_dgetrf_ffi",
        [SQUARE],
        [((3, 3), F32), ((3,), "int32"), ((), "int32")],
        {},
        "operand 0 (x) is float32, expected float64",
        id="operand-dtype",
    ),
    pytest.param(
        "lapack_sorgqr_ffi",
        [np.ones((3, 2), np.float32), np.ones(3, np.float32)],
        [((3, 2), F32)],
        {},
        "x holds 3x2 matrices and tau 3 reflectors each, expected rows >= columns >= reflectors",
        id="reflectors",
    ),
    pytest.param(
        "lapack_strsm_ffi",
        [np.eye(2, dtype=np.float32), np.ones((3, 1), np.float32)],
        [((3, 1), F32)],
        {"side": L, "uplo": L, "trans_x": np.uint8(ord("N")), "diag": np.uint8(ord("N"))},
        "a has the dimensions [2, 2], expected [3, 3]",
        id="trsm-side",
    ),
    pytest.param(
        "lapack_ssyevd_ffi",
        [SQUARE],
        [((3, 3), F32), ((3,), "complex64"), ((), "int32")],
        {"uplo": L, "mode": np.uint8(ord("V"))},
        "result 1 (eigenvalues) is complex64, expected float32",
        id="eigenvalues-dtype",
    ),
    pytest.param(
        "lapack_sgesdd_ffi",
        [SQUARE],
        [((3, 3), F32), ((3,), F32), ((3, 3), F32), ((3, 3), F32), ((), "int32")],
        {"mode": np.uint8(ord("O"))},
        "the mode 'O' (U or V^H overwriting x) is not supported",
        id="svd-mode",
    ),
    pytest.param(
        "lapack_sgehrd_ffi",
        [SQUARE],
        [((3, 3), F32), ((2,), F32), ((), "int32")],
        {"low": np.int32(2), "high": np.int32(5)},
        "the attributes low 2 and high 5 are not 1 <= low <= high <= 3",
        id="hessenberg-range",
    ),
    pytest.param(
        "lapack_sgehrd_ffi",
        [SQUARE],
        [((3, 3), F32), ((2,), F32), ((), "int32")],
        {"low": np.uint8(1), "high": np.int32(3)},
        "the attribute 'low' is not an int32 scalar",
        id="hessenberg-type",
    ),
    pytest.param(
        "lapack_sgees_ffi",
        [SQUARE],
        [((3, 3), F32), ((3, 3), F32), ((3,), F32), ((3,), F32), ((), "int32"), ((), "int32")],
        {"mode": np.uint8(ord("V")), "sort": np.uint8(ord("S"))},
        "sorting the eigenvalues (sort 'S') is not supported",
        id="schur-sort",
    ),
    pytest.param(
        "lapack_sgeev_ffi",
        [SQUARE],
        [((3,), F32), ((3,), F32), ((3, 3), F32), ((3, 3), "complex64"), ((), "int32")],
        {"compute_left": np.uint8(ord("N")), "compute_right": np.uint8(ord("V"))},
        "result 2 (vl) is float32, expected complex64",
        id="eig-vectors-dtype",
    ),
    pytest.param(
        "lapack_sgtsv_ffi",
        [
            np.ones(3, np.float32),
            np.ones(4, np.float32),
            np.ones(3, np.float32),
            np.ones((3, 1), np.float32),
        ],
        [((3,), F32), ((3,), F32), ((3,), F32), ((3, 1), F32), ((), "int32")],
        {},
        "d has the dimensions [4], expected [3]",
        id="tridiagonal-solve",
    ),
    pytest.param(
        "lapack_sormqr_ffi",
        [np.ones((4, 3), np.float32), np.ones(3, np.float32), np.ones((4, 2), np.float32)],
        [((4, 2), F32)],
        {"left": np.uint8(1), "transpose": np.bool_(True)},
        "the attribute 'left' is not a boolean scalar",
        id="ormqr-attribute-type",
    ),
    pytest.param(
        "lapack_sormqr_ffi",
        [np.ones((4, 3), np.float32), np.ones(3, np.float32), np.ones((4, 2), np.float32)],
        [((4, 2), F32)],
        {"left": np.bool_(False), "transpose": np.bool_(True)},
        "a holds 4x3 matrices and tau 3 reflectors each, for Q of order 2",
        id="ormqr-side",
    ),
    pytest.param(
        "lapack_sgesdd_ffi",
        [np.ones((4, 2), np.float32)],
        [((4, 2), F32), ((2,), F32), ((4, 2), F32), ((2, 2), F32), ((), "int32")],
        {"mode": np.uint8(ord("A"))},
        "u has the dimensions [4, 2], expected [4, 4]",
        id="svd-u",
    ),
]


@pytest.mark.parametrize(("target", "operands", "results", "attributes", "message"), REFUSALS)
def test_a_call_that_breaks_the_contract_is_refused_naming_what(
    target: str,
    operands: list[np.ndarray],
    results: list[tuple[tuple[int, ...], str]],
    attributes: dict[str, Any],
    message: str,
) -> None:
    """Operands, results and attributes come from the program (a file, perhaps): the
    handler checks each against its target's contract before LAPACK sees it, and fails
    the call with an error that names the target and what it expected."""
    with pytest.raises(cx.PjrtError) as error:
        custom_call(target, operands, results, **attributes)
    assert f"{target}: {message}" in str(error.value)


# ------------------------------------------------------------------ jnp.linalg, end to end


def _systems(dtype: str, kind: str = "general") -> np.ndarray:
    return matrix(kind, (3, 5, 5), dtype, 7)


SVD_QR = jax.lax.linalg.SvdAlgorithm.QR

END_TO_END = {
    "solve": (jnp.linalg.solve, ("general", "rhs")),
    "solve-singular": (jnp.linalg.solve, ("singular", "rhs")),
    "inv": (jnp.linalg.inv, ("general",)),
    "det": (jnp.linalg.det, ("general",)),
    "slogdet": (jnp.linalg.slogdet, ("general",)),
    "lu": (jax.lax.linalg.lu, ("general",)),
    "cholesky": (jnp.linalg.cholesky, ("spd",)),
    "cholesky-indefinite": (jnp.linalg.cholesky, ("indefinite",)),
    "cho_solve": (
        lambda a, b: jax.scipy.linalg.cho_solve((jnp.linalg.cholesky(a), True), b),
        ("spd", "rhs"),
    ),
    "solve_triangular": (
        lambda a, b: jax.scipy.linalg.solve_triangular(a, b, trans=2),
        ("general", "rhs"),
    ),
    "qr": (jnp.linalg.qr, ("general",)),
    "qr-pivoting": (lambda a: jax.scipy.linalg.qr(a, pivoting=True), ("general",)),
    "qr-complete": (lambda a: jnp.linalg.qr(a[:, :, :3], mode="complete"), ("general",)),
    "eigh": (jnp.linalg.eigh, ("spd",)),
    "eigvalsh": (jnp.linalg.eigvalsh, ("spd",)),
    "svd": (jnp.linalg.svd, ("general",)),
    "svd-thin": (lambda a: jnp.linalg.svd(a[:, :, :3], full_matrices=False), ("general",)),
    "svdvals": (lambda a: jnp.linalg.svd(a, compute_uv=False), ("general",)),
    "eig": (jnp.linalg.eig, ("general",)),
    "eigvals": (jnp.linalg.eigvals, ("general",)),
    "eig-nonfinite": (jnp.linalg.eig, ("nonfinite",)),
    "schur": (jax.scipy.linalg.schur, ("general",)),
    "hessenberg": (lambda a: jax.scipy.linalg.hessenberg(a, calc_q=False), ("general",)),
    "tridiagonal": (lambda a: jax.lax.linalg.tridiagonal(a, lower=True), ("spd",)),
    "tridiagonal_solve": (
        lambda a, b: jax.lax.linalg.tridiagonal_solve(a[..., 0], a[..., 1] + 5, a[..., 2], b),
        ("general", "rhs"),
    ),
    "svd-qr": (lambda a: jax.lax.linalg.svd(a, algorithm=SVD_QR), ("general",)),
    "svd-qr-thin": (
        lambda a: jax.lax.linalg.svd(a[:, :, :3], full_matrices=False, algorithm=SVD_QR),
        ("general",),
    ),
    "svdvals-qr": (
        lambda a: jax.lax.linalg.svd(a, compute_uv=False, algorithm=SVD_QR),
        ("general",),
    ),
    # Any reflectors do: a's columns, with a's first row as their factors.
    "ormqr": (
        lambda a, c: jax.lax.linalg.ormqr(a, a[..., 0, :], c, left=True, transpose=True),
        ("general", "rhs"),
    ),
    "ormqr-right": (
        lambda a, c: jax.lax.linalg.ormqr(
            a, a[..., 0, :], jnp.swapaxes(c, -1, -2), left=False, transpose=False
        ),
        ("general", "rhs"),
    ),
    # Not pinv and the like: their matrix products round differently in the plugin's XLA
    # than in jaxlib's (tests/test_linalg.py holds them to a tolerance).
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", END_TO_END)
def test_jnp_linalg_gives_jax_jits_bits(name: str, dtype: str) -> None:
    """The whole function, cyxla's handlers inside the plugin's code against jax.jit
    (jaxlib's handlers inside jaxlib's XLA): the same bits, NaN where JAX fills a failed
    factorisation with NaN (an indefinite Cholesky, a singular solve)."""
    fn, kinds = END_TO_END[name]
    with x64_mode(True):
        args = [
            matrix("general", (3, 5, 2), dtype, 8) if k == "rhs" else _systems(dtype, k)
            for k in kinds
        ]
        program = cx.lower(fn, args)
        executable, _ = cx.compile_program(program)
        ours = executable.run(args)
        theirs = [np.asarray(leaf) for leaf in jax.tree.leaves(jax.jit(fn)(*args))]
    assert set(program.custom_calls) & ffi_sources.cyxla_lapack_targets()
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.dtype == b.dtype and a.shape == b.shape, i
        assert bits(a) == bits(b), f"output {i}: {a} != {b}"
    if name.endswith(("singular", "indefinite", "nonfinite")):
        assert np.isnan(ours[0]).any()


#: The matrix fuzz_lapack_handlers found (column-major 4 x 3, one value -inf): OpenBLAS's
#: sgesdd never returns on it (its bidiagonal QR iteration, sbdsqr, spins), so neither does
#: jax.jit(jnp.linalg.svd) with jaxlib's handler; cyxla's gives info -4 without LAPACK.
_HANGS_LAPACK = ["-inf", -1.60672e32, 1.4718, 0.5, 4, 0.5, 0.5, 0.5, 4, 0.5, 0.5, 0.5]


def test_an_svd_of_a_matrix_that_is_not_finite_fails_instead_of_hanging() -> None:
    """Every SVD target, in every dtype, and jnp.linalg.svd end to end, in a child process
    with a time limit, so that a handler that hands such a matrix to LAPACK fails here
    instead of hanging the suite. The oracle is the contract: info -4, which JAX turns
    into NaN (jax.jit itself never returns on this matrix)."""
    code = f"""
    import json, numpy as np, jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    import cyxla as cx
    from test_lapack_handlers import FAMILY, DTYPES, raw_call, _run_cyxla
    a = np.array({_HANGS_LAPACK!r}, dtype=float).reshape(3, 4).T
    infos = {{}}
    for name in ("gesdd", "gesvd"):
        family = FAMILY[name]
        for dtype in DTYPES:
            call = raw_call(family.target(dtype), family, (), 4, 3, dtype)
            infos[f"{{name}}-{{dtype}}"] = int(_run_cyxla(call, [a.astype(dtype)])[-1])
    program = cx.lower(lambda x: jnp.linalg.svd(x, compute_uv=False), [a.astype(np.float32)])
    (values,) = cx.compile_program(program)[0].run([a.astype(np.float32)])
    print(json.dumps({{"infos": infos, "values": [str(v) for v in values]}}))
    """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.splitlines()[-1])
    assert set(found["infos"].values()) == {-4}, found["infos"]
    assert len(found["infos"]) == 8
    assert found["values"] == ["nan", "nan", "nan"]


# ------------------------------------------------------------------ which LAPACK, and whose


def test_a_python_process_calls_the_lapack_scipy_carries() -> None:
    """jaxlib's handlers call SciPy's OpenBLAS (through scipy.linalg.cython_lapack): cyxla's
    prefer that library in a Python process, which is why the bits above agree."""
    cx.initialize(platform="cpu")
    library = ffi_sources.scipy_lapack()
    assert library is not None and "scipy_openblas" in library
    assert _core.lapack_library() == library
    assert _core.lapack_candidates()[0] == library


def test_cyxla_lapack_is_the_only_candidate_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CYXLA_LAPACK", "/opt/lapack/liblapack.so.3")
    assert _core.lapack_candidates() == ["/opt/lapack/liblapack.so.3"]
    monkeypatch.delenv("CYXLA_LAPACK")
    candidates = _core.lapack_candidates()
    assert candidates[-5:] == [
        "libopenblas.so.0",
        "liblapack.so.3",
        "libflexiblas.so.3",
        "libopenblas.so",
        "liblapack.so",
    ]


_SOLVE = """
import jax, jax.numpy as jnp, numpy as np, cyxla as cx
program = cx.lower(jnp.linalg.solve, [jax.ShapeDtypeStruct((3, 3), jnp.float32)] * 2)
try:
    cx.compile_program(program)
except cx.UnsupportedProgramError as error:
    print(error)
"""


@pytest.mark.parametrize(
    ("library", "why"),
    [
        ("libm.so.6", "libm.so.6 (it has no dgetrf_ (nor scipy_dgetrf_)"),
        ("/no/such/liblapack.so", "/no/such/liblapack.so (/no/such/liblapack.so: cannot open"),
        # NumPy's OpenBLAS: ILP64 (64-bit integers), its symbols end in 64_.
        ("numpy", "not a LAPACK with 32-bit integers"),
    ],
)
def test_a_library_that_is_not_a_usable_lapack_is_refused_at_compile(
    library: str, why: str
) -> None:
    if library == "numpy":
        libs = Path(np.__file__).parents[1] / "numpy.libs"
        library = str(next(libs.glob("libscipy_openblas64_*.so")))
    result = run_python(_SOLVE, {"CYXLA_LAPACK": library})
    assert result.returncode == 0, result.stderr
    assert "calls the LAPACK target 'lapack_sgetrf_ffi', whose handler (cyxla's) needs" in (
        result.stdout
    )
    assert "the LAPACK library that CYXLA_LAPACK names cannot be used: " in result.stdout
    assert why in result.stdout


def test_jaxlibs_handlers_of_cyxlas_targets_are_never_registered() -> None:
    """XLA keeps the first handler of a name and drops a second registration without an
    error, so a registry that registered jaxlib's too would misreport whose handler runs:
    cyxla's are registered as the runtime is created, and the registry leaves the names
    to them. Checked here with a call that each handler refuses in its own words: after a
    second registration, of jaxlib's handler, taken without complaint, cyxla's still runs."""
    code = """
    import jax, numpy as np, cyxla as cx
    from cyxla import _core
    from cyxla._ffi import registry
    from cyxla._ffi.targets import target_from
    from jaxlib.cpu import _lapack
    loaded = cx.initialize(platform="cpu")
    assert registry.registrations()["lapack_spotrf_ffi"].origin == "cyxla"
    _lapack.initialize()
    capsule = _lapack.registrations()["lapack_spotrf_ffi"]
    jaxlib = target_from("lapack_spotrf_ffi", capsule, "cpu", 1, 0, origin="jaxlib")
    _core.register_ffi_handler(loaded.plugin, "lapack_spotrf_ffi", jaxlib.handler, "Host", 0)
    a = np.eye(2, dtype=np.float32)
    shapes = [jax.ShapeDtypeStruct((2, 2), np.float32), jax.ShapeDtypeStruct((), np.int32)]
    call = jax.ffi.ffi_call("lapack_spotrf_ffi", shapes)
    program = cx.lower(lambda x: call(x, uplo=np.uint8(88)), [a])
    try:
        cx.compile_program(program)[0].run([a])
    except cx.PjrtError as error:
        print(error)
    """
    result = run_python(code, {"CYXLA_CACHE_DIR": ""})
    assert result.returncode == 0, result.stderr
    assert "lapack_spotrf_ffi: the attribute 'uplo' is 88, expected" in result.stdout
