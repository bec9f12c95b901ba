"""The kernel loader (src/kernels/): the plugin's own kernels loaded into this process and
called thunk by thunk over buffers laid out as the executable's buffer assignment says,
their results bit-identical to what PJRT computes with the same executable; and objects
it must not load, refused by name."""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx
from cyxla._bench.programs import PROGRAMS
from cyxla._errors import PjrtError

from support import hooks, spec

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
    reason="cyxla loads kernels on x86-64 Linux only",
)

F32 = jnp.float32

#: name -> (function, input specs): programs whose thunks are all kernels (or copies).
CASES: dict[str, tuple[Callable[..., Any], list[Any]]] = {
    **{
        p.key: (
            p.function,
            [spec(a.shape, a.dtype) for a in p.make_inputs(np.random.default_rng(0))],
        )
        for p in PROGRAMS
        if p.key in ("sin3", "mlp64", "ew1m")
    },
    # expf is inlined; powf is called in libm.
    "exp_pow": (lambda x, y: jnp.exp(x) + jnp.abs(x) ** y, [spec((64,), F32), spec((64,), F32)]),
    "atan2_fmod": (
        lambda x, y: jnp.arctan2(x, y) + jnp.fmod(x, y),
        [spec((33,), F32), spec((33,), F32)],
    ),
    "exp_cos": (lambda x: jnp.exp(x) + jnp.cos(x), [spec((64,), F32)]),
    "where": (lambda x, y: jnp.where(x > y, x, y * 2), [spec((7,), F32), spec((7,), F32)]),
}

#: name -> the host symbols its objects need (so that the libc and libm paths are reached).
NEEDS = {
    "sin3": ["sinf"],
    "exp_pow": ["powf"],
    "atan2_fmod": ["atan2f", "fmodf", "memcpy"],
    "exp_cos": ["cosf"],
}


@contextlib.contextmanager
def _no_cache() -> Iterator[None]:
    saved = os.environ.get(cx.CACHE_ENVIRONMENT_VARIABLE)
    os.environ[cx.CACHE_ENVIRONMENT_VARIABLE] = "0"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(cx.CACHE_ENVIRONMENT_VARIABLE, None)
        else:
            os.environ[cx.CACHE_ENVIRONMENT_VARIABLE] = saved


@functools.cache
def compiled(name: str) -> tuple[cx.Executable, bytes]:
    """A fresh compile of CASES[name] and its serialized form, objects and all."""
    function, specs = CASES[name]
    with _no_cache():
        executable, statistics = cx.compile_program(cx.lower(function, specs))
    assert not statistics.cache_hit
    return executable, executable._native.serialize()


def _inputs(name: str, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal(s.shape, dtype=np.float32) * (4 if seed % 2 else 1 / 8)
        for s in CASES[name][1]
    ]


def run_kernels(serialized: bytes, inputs: list[np.ndarray]) -> list[bytearray]:
    """Every allocation of the buffer assignment after the thunks ran in order, each
    kernel called through the loader over its argument slices, then its result slices."""
    d = hooks.compiled_details(serialized)
    memory = [bytearray(a["size"]) for a in d["allocations"]]
    for a in d["allocations"]:
        assert not a["is_constant"], "the values of constants are in the HLO module"
        number = a["parameter_number"]
        if a["is_entry_computation_parameter"] and number < len(inputs):
            memory[a["index"]][:] = inputs[number].tobytes()
    for thunk in d["thunks"]:
        if thunk["kind"] == "copy":
            (sa, so, ss), (da, do, ds) = thunk["source"], thunk["destination"]
            memory[da][do : do + ds] = memory[sa][so : so + ss]
            continue
        assert thunk["kind"] == "kernel"
        slices = thunk["arguments"] + thunk["results"]
        buffers = [bytearray(memory[a][o : o + s]) for a, o, s in slices]
        hooks.call_kernel(serialized, thunk["name"], buffers, thunk["workgroups"])
        results = buffers[len(thunk["arguments"]) :]
        for (a, o, s), buffer in zip(thunk["results"], results, strict=True):
            assert len(buffer) == s
            memory[a][o : o + s] = buffer
    return memory


@pytest.mark.parametrize("name", sorted(CASES))
def test_loaded_kernels_compute_what_pjrt_computes(name: str) -> None:
    executable, serialized = compiled(name)
    assert hooks.runner_verdict(serialized)[0] == "kernels"
    assert hooks.compiled_summary(serialized)["undefined_symbols"] == NEEDS.get(name, [])
    (output,) = executable.outputs
    d = hooks.compiled_details(serialized)
    (live,) = [
        a["index"]
        for a in d["allocations"]
        if a["maybe_live_out"] and not a["is_tuple"] and a["size"] == output.nbytes
    ]
    for seed in range(3):
        inputs = _inputs(name, seed)
        expected = np.asarray(executable.run(inputs)[0])
        memory = run_kernels(serialized, inputs)
        ours = np.frombuffer(bytes(memory[live][: output.nbytes]), expected.dtype)
        assert np.array_equal(ours.view(np.uint32), expected.reshape(-1).view(np.uint32)), seed


def test_every_workgroup_runs() -> None:
    # ew1m's kernel runs in two workgroups: one alone leaves half the result unwritten.
    executable, serialized = compiled("ew1m")
    (thunk,) = hooks.compiled_details(serialized)["thunks"]
    assert thunk["workgroups"] == (2, 1, 1)
    x = np.random.default_rng(0).standard_normal(1 << 20, dtype=np.float32)
    out = bytearray(x.nbytes)
    hooks.call_kernel(serialized, thunk["name"], [bytearray(x.tobytes()), out], (1, 1, 1))
    half = np.frombuffer(bytes(out), np.float32)
    expected = np.asarray(executable.run([x])[0])
    assert np.array_equal(half[: 1 << 19], expected[: 1 << 19])
    assert not half[1 << 19 :].any()


def test_what_is_mapped() -> None:
    _, serialized = compiled("mlp64")
    mapped = hooks.loaded_code_bytes(serialized)
    assert mapped > 0 and mapped % os.sysconf("SC_PAGE_SIZE") == 0
    with pytest.raises(PjrtError, match="no object defines the kernel 'nothing'"):
        hooks.call_kernel(serialized, "nothing", [])


# ------------------------------------------------------------------ objects refused


def _sin3_object() -> tuple[bytearray, dict[str, Any]]:
    (obj,) = hooks.compiled_details(compiled("sin3")[1])["objects"]
    return bytearray(obj["contents"]), obj


def _symbol_entry(obj: dict[str, Any], name: str) -> int:
    """Where symbol `name`'s 24-byte entry lies in the object."""
    symtab = next(s for s in obj["sections"] if s[1] == 2)
    index = next(i for i, s in enumerate(obj["symbols"]) if s[0] == name)
    return symtab[3] + 24 * index


def _relocation_entries(obj: dict[str, Any], symbol: str) -> list[int]:
    """Where each relocation against `symbol` lies in the object (its 24-byte entry)."""
    index = next(i for i, s in enumerate(obj["symbols"]) if s[0] == symbol)
    found = []
    for section in obj["sections"]:
        if section[1] != 4:
            continue
        for n in range(section[4] // 24):
            at = section[3] + 24 * n
            info = int.from_bytes(obj["contents"][at + 8 : at + 16], "little")
            if info >> 32 == index:
                found.append(at)
    assert found, symbol
    return found


def test_an_unharmed_object_loads() -> None:
    data, _ = _sin3_object()
    assert hooks.loaded_object_bytes(bytes(data)) == os.sysconf("SC_PAGE_SIZE")


def test_a_symbol_this_process_lacks_is_refused_by_name() -> None:
    data, _ = _sin3_object()
    at = data.find(b"\0sinf\0") + 1
    data[at : at + 4] = b"sinq"
    with pytest.raises(
        PjrtError,
        match=re.escape(
            "its object 'the object' needs the symbol 'sinq', which this process does not provide"
        ),
    ):
        hooks.loaded_object_bytes(bytes(data))


def test_a_weak_reference_nothing_defines_is_null() -> None:
    data, obj = _sin3_object()
    entry = _symbol_entry(obj, "sinf")
    data[entry + 4] = 2 << 4 | (data[entry + 4] & 0xF)  # STB_WEAK
    at = data.find(b"\0sinf\0") + 1
    data[at : at + 4] = b"sinq"
    assert hooks.loaded_object_bytes(bytes(data)) > 0


def test_a_common_symbol_is_refused() -> None:
    data, obj = _sin3_object()
    entry = _symbol_entry(obj, "sinf")
    data[entry + 6 : entry + 8] = (0xFFF2).to_bytes(2, "little")
    with pytest.raises(PjrtError, match="has the common symbol 'sinf'"):
        hooks.loaded_object_bytes(bytes(data))


@pytest.mark.parametrize(
    "relocation",
    [
        1,  # R_X86_64_64
        2,  # R_X86_64_PC32: sinf lies out of reach, through a stub
        4,  # R_X86_64_PLT32: the same
        9,  # R_X86_64_GOTPCREL: a GOT slot
        24,  # R_X86_64_PC64
        25,  # R_X86_64_GOTOFF64
        41,  # R_X86_64_GOTPCRELX
        42,  # R_X86_64_REX_GOTPCRELX
    ],
)
def test_every_relocation_type_applies(relocation: int) -> None:
    data, obj = _sin3_object()
    for at in _relocation_entries(obj, "sinf"):
        data[at + 8 : at + 12] = relocation.to_bytes(4, "little")
    assert hooks.loaded_object_bytes(bytes(data)) > 0


@pytest.mark.parametrize(("relocation", "name"), [(10, "R_X86_64_32"), (11, "R_X86_64_32S")])
def test_a_value_that_does_not_fit_is_refused(relocation: int, name: str) -> None:
    # libm's sinf lies above 4 GiB: no 32-bit field holds its address.
    data, obj = _sin3_object()
    (at, *_) = _relocation_entries(obj, "sinf")
    data[at + 8 : at + 12] = relocation.to_bytes(4, "little")
    offset = int.from_bytes(data[at : at + 8], "little")
    with pytest.raises(
        PjrtError,
        match=re.escape(f"the {name} relocation at offset {offset} of its object 'the object'"),
    ) as refused:
        hooks.loaded_object_bytes(bytes(data))
    assert "against 'sinf' has a value that does not fit its 32-bit field" in str(refused.value)


def test_a_relocation_it_does_not_apply_is_refused() -> None:
    data, obj = _sin3_object()
    (at, *_) = _relocation_entries(obj, "sinf")
    data[at + 8 : at + 12] = (22).to_bytes(4, "little")
    with pytest.raises(PjrtError, match="has a R_X86_64_GOTTPOFF relocation, which cyxla does"):
        hooks.loaded_object_bytes(bytes(data))


def test_a_misaligned_section_is_refused() -> None:
    data, obj = _sin3_object()
    text = next(i for i, s in enumerate(obj["sections"]) if s[0] == ".ltext")
    header = int.from_bytes(data[40:48], "little") + 64 * text
    data[header + 48 : header + 56] = (24).to_bytes(8, "little")
    with pytest.raises(PjrtError, match=r"asks for an alignment of 24 bytes"):
        hooks.loaded_object_bytes(bytes(data))
