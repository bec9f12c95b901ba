"""cyxla's own LAPACK handlers (src/lapack/), which the core registers with every CPU
plugin in place of jaxlib's.

The oracle of each handler is jaxlib's handler of the same target, registered under
another name and called through the same plugin with the same operands, attributes and
layouts: both call the LAPACK library that SciPy carries, so the outputs must be the same
bits (info and the factors of singular and indefinite matrices included). End to end,
`jnp.linalg` through cyxla is checked against jax.jit, and a program saved here runs in a
process without Python."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
import pytest

import cyxla as cx
from cyxla._ffi import registry

from support import x64_mode

DTYPES = ("float32", "float64", "complex64", "complex128")
LETTER = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}
BATCHES = [(), (3,), (2, 2)]
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
    attrs = {k: np.uint8(ord(v)) if isinstance(v, str) else v for k, v in given.items()}
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
def jaxlib_alias() -> Callable[[str], str]:
    """jaxlib's handler of a target, registered as "cyxla_test_jaxlib_<target>"."""
    from jaxlib.cpu import _lapack

    _lapack.initialize()
    capsules = _lapack.registrations()

    def alias(target: str) -> str:
        name = f"cyxla_test_jaxlib_{target}"
        if name not in registry.registrations():
            cx.register_ffi_target(name, capsules[target], platform="cpu")
        return name

    return alias


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
def test_same_bits_as_jaxlibs_handler(
    jaxlib_alias: Callable[[str], str],
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
        ours = _run_cyxla(raw_call(target, family, batch, m, n, dtype), args)
        theirs = _run_cyxla(
            raw_call(jaxlib_alias(target), family, batch, m, n, dtype),
            args,
            custom_calls=[jaxlib_alias(target)],
        )
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.dtype == b.dtype and a.shape == b.shape, i
        assert bits(a) == bits(b), f"result {i} of {target}: {a} != {b}"
    if kind in ("singular", "indefinite") and m == n:
        assert np.all(ours[-1] > 0), "LAPACK's info reports the failure"
