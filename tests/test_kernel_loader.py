"""The kernel loader (src/kernels/): the plugin's own kernels loaded into this process and
called thunk by thunk over buffers laid out as the executable's buffer assignment says,
their results bit-identical to what PJRT computes with the same executable; and objects
it must not load, refused by name."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx
from cyxla._bench.programs import PROGRAMS
from cyxla._errors import PjrtError

from support import NATIVE_SOURCES, bench_specs, fresh_compile, hooks, spec

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
    reason="cyxla loads kernels on x86-64 Linux only",
)

F32 = jnp.float32

#: name -> (function, input specs): programs whose thunks are all kernels (or copies).
CASES: dict[str, tuple[Callable[..., Any], list[Any]]] = {
    **{p.key: (p.function, bench_specs(p)) for p in PROGRAMS if p.key in ("sin3", "mlp64", "ew1m")},
    # expf is inlined; powf is called in libm.
    "exp_pow": (lambda x, y: jnp.exp(x) + jnp.abs(x) ** y, [spec((64,), F32), spec((64,), F32)]),
    "atan2_fmod": (
        lambda x, y: jnp.arctan2(x, y) + jnp.fmod(x, y),
        [spec((33,), F32), spec((33,), F32)],
    ),
    "exp_cos": (lambda x: jnp.exp(x) + jnp.cos(x), [spec((64,), F32)]),
    "where": (lambda x, y: jnp.where(x > y, x, y * 2), [spec((7,), F32), spec((7,), F32)]),
}

#: name -> the libm symbols its objects need (so that the libm paths are reached).
NEEDS = {
    "sin3": ["sinf"],
    "exp_pow": ["powf"],
    "atan2_fmod": ["atan2f", "fmodf"],
    "exp_cos": ["cosf"],
}
#: libc symbols an object may need besides, as the lowering has it: atan2_fmod's copies
#: into `memcpy` as jax 0.10 and 0.11 lower it, not as jax 0.12 does.
LIBC = {"memcpy", "memset"}


@functools.cache
def compiled(name: str) -> tuple[cx.Executable, bytes]:
    """A fresh compile of CASES[name] kept on PJRT (the oracle), and its serialized form,
    objects and all."""
    return fresh_compile(*CASES[name], runner="pjrt")


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
    needed = hooks.compiled_summary(serialized)["undefined_symbols"]
    assert [s for s in needed if s not in LIBC] == NEEDS.get(name, [])
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
    assert hooks.load_object(bytes(data)).mapped_bytes == os.sysconf("SC_PAGE_SIZE")


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
        hooks.load_object(bytes(data))


def test_a_weak_reference_nothing_defines_is_null() -> None:
    data, obj = _sin3_object()
    entry = _symbol_entry(obj, "sinf")
    data[entry + 4] = 2 << 4 | (data[entry + 4] & 0xF)  # STB_WEAK
    at = data.find(b"\0sinf\0") + 1
    data[at : at + 4] = b"sinq"
    assert hooks.load_object(bytes(data)).mapped_bytes > 0


def test_a_common_symbol_is_refused() -> None:
    data, obj = _sin3_object()
    entry = _symbol_entry(obj, "sinf")
    data[entry + 6 : entry + 8] = (0xFFF2).to_bytes(2, "little")
    with pytest.raises(PjrtError, match="has the common symbol 'sinf'"):
        hooks.load_object(bytes(data))


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
    assert hooks.load_object(bytes(data)).mapped_bytes > 0


@pytest.mark.parametrize(("relocation", "name"), [(10, "R_X86_64_32"), (11, "R_X86_64_32S")])
def test_a_value_that_does_not_fit_is_refused(relocation: int, name: str) -> None:
    # libm's sinf lies above 4 GiB: no 32-bit field holds its address.
    data, obj = _sin3_object()
    (at, *_) = _relocation_entries(obj, "sinf")
    data[at + 8 : at + 12] = relocation.to_bytes(4, "little")
    offset = int.from_bytes(data[at : at + 8], "little")
    with pytest.raises(
        PjrtError,
        match=rf"the {name} relocation at offset {offset} of section \d+ \('\.ltext'\) of its "
        "object 'the object'",
    ) as refused:
        hooks.load_object(bytes(data))
    assert "against 'sinf' has a value that does not fit its 32-bit field" in str(refused.value)


def test_a_relocation_it_does_not_apply_is_refused() -> None:
    data, obj = _sin3_object()
    (at, *_) = _relocation_entries(obj, "sinf")
    data[at + 8 : at + 12] = (22).to_bytes(4, "little")
    with pytest.raises(PjrtError, match="has a R_X86_64_GOTTPOFF relocation, which cyxla does"):
        hooks.load_object(bytes(data))


def test_a_misaligned_section_is_refused() -> None:
    data, obj = _sin3_object()
    text = next(i for i, s in enumerate(obj["sections"]) if s[0] == ".ltext")
    header = int.from_bytes(data[40:48], "little") + 64 * text
    data[header + 48 : header + 56] = (24).to_bytes(8, "little")
    with pytest.raises(PjrtError, match=r"asks for an alignment of 24 bytes"):
        hooks.load_object(bytes(data))


# ------------------------------------------------------------------ an object of our own
# tests/native/loader_probe.c, compiled under several code models: calls into libm and
# within the object, read-only, writable and zeroed data, each relocation form the loader
# applies, and code that runs.

_CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_LIBM.sinf.restype, _LIBM.sinf.argtypes = ctypes.c_float, [ctypes.c_float]
_TABLE = np.float32([1.5, -2.5, 3.25, 0.125])


@functools.cache
def _probe(flags: str) -> bytes:
    assert _CC, "the tests need a C compiler (cc) to build their probes"
    with tempfile.TemporaryDirectory() as directory:
        output = Path(directory) / "loader_probe.o"
        command = [_CC, "-std=c11", "-O2", "-ffp-contract=off", "-fno-common", "-Wall"]
        command += ["-Werror", *flags.split(), "-c", str(NATIVE_SOURCES / "loader_probe.c")]
        subprocess.run([*command, "-o", str(output)], check=True, timeout=120)
        return output.read_bytes()


@pytest.mark.parametrize("flags", ["-fpic", "-fpie", "-fno-pic -mcmodel=large"])
def test_an_object_of_our_own_links_and_runs(flags: str) -> None:
    relocations = {
        r for _, entries in hooks.elf_object(_probe(flags))["relocations"] for r in entries
    }
    assert relocations
    code = hooks.load_object(_probe(flags), "loader_probe.o")
    probe = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_int)(code.symbol("probe"))
    bias = ctypes.c_float.from_address(code.symbol("probe_bias"))
    total = ctypes.c_float.from_address(code.symbol("probe_total"))
    assert (bias.value, total.value) == (0.75, 0.0)
    assert code.symbol("kTable") is None  # a local symbol
    running = np.float32(0)
    for i, x in enumerate(np.linspace(-3, 3, 9, dtype=np.float32)):
        expected = np.float32(_LIBM.sinf(x)) * _TABLE[i & 3] + np.float32(0.75)
        assert np.float32(probe(x, i)).view(np.uint32) == expected.view(np.uint32), (i, x)
        running += expected
    assert np.float32(total.value) == running
    bias.value = 2.0  # writable data stays writable
    assert probe(0.0, 0) == 2.0


@contextlib.contextmanager
def _far_trampoline(to: int) -> Iterator[int]:
    """A page mapped far from everything else (at 32 TiB) holding `movabs $to, %rax;
    jmp *%rax`: a function out of any rel32's reach that behaves as `to` does."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, *[ctypes.c_int] * 3, ctypes.c_long]
    libc.munmap.argtypes = libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mprotect.argtypes += [ctypes.c_int]
    page = libc.mmap(1 << 45, 4096, 3, 0x22, -1, 0)  # read|write, private|anonymous
    assert page is not None and page != ctypes.c_void_p(-1).value, ctypes.get_errno()
    try:
        ctypes.memmove(page, b"\x48\xb8" + to.to_bytes(8, "little") + b"\xff\xe0", 12)
        assert libc.mprotect(page, 4096, 5) == 0  # read|execute
        yield page
    finally:
        libc.munmap(page, 4096)


def test_calls_out_of_reach_go_through_a_stub() -> None:
    # probe calls sinf (R_X86_64_PLT32); made an absolute symbol at a far trampoline to
    # the real sinf, the call lands on a stub `jmp *slot(%rip)` whose GOT slot holds it.
    data = bytearray(_probe("-fpic"))
    elf = hooks.elf_object(bytes(data))
    sinf = ctypes.cast(_LIBM.sinf, ctypes.c_void_p).value
    with _far_trampoline(sinf) as far:
        entry = _symbol_entry(elf, "sinf")
        data[entry + 6 : entry + 8] = (0xFFF1).to_bytes(2, "little")  # SHN_ABS
        data[entry + 8 : entry + 16] = far.to_bytes(8, "little")
        code = hooks.load_object(bytes(data))
        assert abs(code.symbol("probe") - far) > 1 << 32
        text = next(i for i, s in enumerate(elf["sections"]) if s[0] == ".text")
        (value,) = [s[4] for s in elf["symbols"] if s[0] == "probe"]
        ((offset, kind, _, addend),) = [
            e
            for target, entries in elf["relocations"]
            if target == text
            for e in entries
            if elf["symbols"][e[2]][0] == "sinf"
        ]
        assert kind == "R_X86_64_PLT32"
        field_at = code.symbol("probe") - value + offset
        field = int.from_bytes(ctypes.string_at(field_at, 4), "little", signed=True)
        stub = field_at + field - addend
        jump = ctypes.string_at(stub, 6)
        assert jump[:2] == b"\xff\x25"
        slot = stub + 6 + int.from_bytes(jump[2:], "little", signed=True)
        assert ctypes.c_uint64.from_address(slot).value == far
        probe = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_int)(code.symbol("probe"))
        expected = np.float32(_LIBM.sinf(1.25)) * _TABLE[1] + np.float32(0.75)
        assert np.float32(probe(1.25, 1)) == expected
        del code  # unmapped before the trampoline


def test_an_absolute_32_bit_address_is_refused() -> None:
    # The small code model without PIC indexes its table at a sign-extended 32-bit address,
    # which no mapping above 2 GiB can give it.
    data = _probe("-fno-pic")
    with pytest.raises(
        PjrtError,
        match=r"the R_X86_64_32S relocation at offset \d+ of section \d+ \('\.text'\) of its "
        r"object 'probe\.o' against section \d+ \('\.rodata'\) has a value that does not fit",
    ):
        hooks.load_object(data, "probe.o")
