"""The reader of a compiled executable's signature (src/runtime/hlo_signature.cpp): what
the plugin's optimized HLO module says the executable takes and which outputs alias its
parameters, checked against modules that jax.jit compiled, and never a crash on bytes
that are not such a module."""

from __future__ import annotations

import random
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from cyxla._errors import PjrtError
from cyxla._program.dtypes import element_type_of

from support import hooks, x64_mode


def _module(function: Any, *args: Any, donate: tuple[int, ...] = ()) -> bytes:
    """The serialized HloModuleProto of `function` compiled by jax.jit for `args`."""
    compiled = jax.jit(function, donate_argnums=donate).lower(*args).compile()
    (module,) = compiled.runtime_executable().hlo_modules()
    return module.as_serialized_hlo_module_proto()


def _record(array: Any) -> tuple[int, list[int]]:
    element_type = element_type_of(np.dtype(array.dtype))
    assert element_type is not None
    return int(element_type), list(array.shape)


def _with_config(module: bytes) -> bytes:
    """`module` as field 1 of an HloModuleProtoWithConfig (what the CPU plugin returns)."""
    length, size = bytearray(), len(module)
    while True:
        length.append((size & 0x7F) | (0x80 if size > 0x7F else 0))
        size >>= 7
        if not size:
            break
    return b"\x0a" + bytes(length) + module + b"\x12\x00"  # and an empty config


_ARGUMENTS = [
    np.zeros((2, 3), np.float32),
    np.zeros((), np.int32),
    np.zeros((4,), np.bool_),
    np.zeros((1, 2, 3), np.float64),
    np.zeros((5,), np.uint8),
    np.zeros((2,), ml_dtypes.bfloat16),
    np.zeros((3,), np.complex64),
    np.zeros((2, 2), np.complex128),
    np.zeros((7,), np.int8),
    np.zeros((0, 3), np.float16),
]


def test_the_parameters_are_those_jax_jit_compiled() -> None:
    with x64_mode(True):
        module = _module(lambda *args: [a * 1 for a in args], *_ARGUMENTS)
    parameters, aliases = hooks.hlo_signature("hlo", module)
    assert parameters == [_record(a) for a in _ARGUMENTS]
    assert aliases == []
    assert hooks.hlo_signature("hlo_with_config", _with_config(module)) == (parameters, [])


def test_donated_parameters_alias_their_outputs() -> None:
    x, y = np.ones((4,), np.float32), np.ones((2, 2), np.int32)
    module = _module(lambda x, y: (jnp.sum(y), y * 2, x + 1), x, y, donate=(0, 1))
    parameters, aliases = hooks.hlo_signature("hlo", module)
    assert parameters == [_record(x), _record(y)]
    assert sorted(aliases) == [(1, 1), (2, 0)]  # (output, parameter)
    single = _module(lambda x: x + 1, x, donate=(0,))
    assert hooks.hlo_signature("hlo", single)[1] == [(0, 0)]  # the one result, no tuple


def test_another_format_is_not_read() -> None:
    assert hooks.hlo_signature("mlir", b"anything") is None


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x08",
        b"\x0a\x05abc",
        b"\xff" * 11,
        b"\x0b",
        b"\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",
    ],
    ids=[
        "empty",
        "a truncated varint",
        "a field past the end",
        "an endless varint",
        "a group",
        "a huge length",
    ],
)
def test_bytes_that_are_no_module_are_refused(data: bytes) -> None:
    for format in ("hlo", "hlo_with_config"):
        with pytest.raises(PjrtError, match="not a readable HLO module"):
            hooks.hlo_signature(format, data)


def test_damaged_modules_are_read_or_refused_never_a_crash() -> None:
    """Every truncation and a few thousand random byte edits of a real module: each gives
    a signature or a PjrtError (the plugin made these bytes, but they are read with
    checked bounds all the same)."""
    module = _with_config(_module(lambda x, y: (x @ y, y), np.ones((3, 4)), np.ones((4, 4))))
    rng = random.Random(20261203)
    damaged = [module[:cut] for cut in range(len(module))]
    for _ in range(3000):
        data = bytearray(module)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        damaged.append(bytes(data))
    read = refused = 0
    for data in damaged:
        try:
            hooks.hlo_signature("hlo_with_config", data)
            read += 1
        except PjrtError:
            refused += 1
    assert read > 0 and refused > 0  # both arms were reached
