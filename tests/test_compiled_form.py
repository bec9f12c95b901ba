"""The readers of the CPU plugin's serialized executable (src/compiled/): the protobuf
wire reader against Google's protobuf library, the ELF reader against binutils' `readelf`, the
thunks and buffers against what the program is (its kernels, its inputs' and outputs'
sizes), the runner verdict on real programs, and malformed bytes refused by name, each
refusal keeping the program on PJRT with the reader's message."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from google.protobuf import empty_pb2
from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

import cyxla as cx
from cyxla import _core
from cyxla._bench.programs import PROGRAMS
from cyxla._errors import PjrtError

from support import bench_specs, fresh_compile, hooks, spec

F32 = jnp.float32

#: name -> (function, input specs): the programs read below.
CASES: dict[str, tuple[Callable[..., Any], list[Any]]] = {
    **{p.key: (p.function, bench_specs(p)) for p in PROGRAMS},
    "tanh_sum": (lambda x, w: jnp.tanh(x @ w).sum(), [spec((8, 16), F32), spec((16, 16), F32)]),
    "sort": (jnp.sort, [spec((16,), F32)]),
    "fori": (lambda x: jax.lax.fori_loop(0, 10, lambda i, v: jnp.sin(v), x), [spec((4,), F32)]),
    "cholesky": (jnp.linalg.cholesky, [spec((2, 2), F32)]),
    "exp_cos": (lambda x: jnp.exp(x) + jnp.cos(x), [spec((64,), F32)]),
    "cumsum": (jnp.cumsum, [spec((33,), F32)]),
    "where": (lambda x, y: jnp.where(x > y, x, y * 2), [spec((7,), F32), spec((7,), F32)]),
}

#: name -> (runner it would take, words its reason holds).
VERDICTS = {
    "sin3": ("kernels", "its objects need only sinf"),
    "mlp64": ("kernels", "(4 kernels), and its objects need no outside symbol"),
    "ew1m": ("kernels", "(1 kernel), and its objects need no outside symbol"),
    "matmul100": ("pjrt", "'ynn-fusion' thunk"),
    "tanh_sum": ("pjrt", "'ynn-fusion' thunk"),
    "cholesky": ("pjrt", "'custom-call' thunk"),
    "sort": ("pjrt", "'sort' thunk"),
    "fori": ("kernels", "holds only what cyxla runs (1 kernel, 2 copies)"),
}


@functools.cache
def compiled(name: str) -> tuple[cx.Executable, bytes]:
    """A fresh compile of CASES[name] and its serialized form (support.fresh_compile)."""
    return fresh_compile(*CASES[name])


def details(name: str) -> dict[str, Any]:
    return hooks.compiled_details(compiled(name)[1])


# ------------------------------------------------------------------ oracles


def _readelf(path: Path, flag: str) -> str:
    return subprocess.run(
        ["readelf", "-W", flag, str(path)], check=True, capture_output=True, text=True
    ).stdout


@pytest.mark.skipif(shutil.which("readelf") is None, reason="binutils' readelf is not installed")
@pytest.mark.parametrize("name", ["sin3", "mlp64", "sort", "fori", "tanh_sum"])
def test_the_elf_reader_reads_what_readelf_reads(name: str, tmp_path: Path) -> None:
    for number, obj in enumerate(details(name)["objects"]):
        path = tmp_path / f"{number}.o"
        path.write_bytes(obj["contents"])
        theirs = [
            (m[2], int(m[3], 16), int(m[4], 16))
            for m in re.finditer(
                r"^\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)",
                _readelf(path, "-S"),
                re.MULTILINE,
            )
            if m[1] != "0"
        ]
        ours = [(s[0], s[3], s[4]) for s in obj["sections"][1:]]
        assert ours == theirs and ours
        ndx = {0: "UND", 0xFFF1: "ABS", 0xFFF2: "COM"}
        theirs_symbols = [
            (int(m[1], 16), int(m[2]), m[3], m[4])
            for m in re.finditer(
                r"^\s*\d+: ([0-9a-f]+)\s+(\d+)\s+\S+\s+\S+\s+\S+\s+(\S+) ?(.*)$",
                _readelf(path, "-s"),
                re.MULTILINE,
            )
        ]
        # readelf names a section's symbol (STT_SECTION, 3) after the section.
        ours_symbols = [
            (s[4], s[5], ndx.get(s[3], str(s[3])), s[0] or obj["sections"][s[3]][0] * (s[2] == 3))
            for s in obj["symbols"]
        ]
        assert ours_symbols == theirs_symbols
        theirs_relocations = []
        for m in re.finditer(
            r"^([0-9a-f]{16})\s+([0-9a-f]{16})\s+(R_X86_64_\w+)\s.*?([+-]) ([0-9a-f]+)$",
            _readelf(path, "-r"),
            re.MULTILINE,
        ):
            addend = int(m[5], 16) * (-1 if m[4] == "-" else 1)
            theirs_relocations.append((int(m[1], 16), m[3], int(m[2], 16) >> 32, addend))
        ours_relocations = [r for _, entries in obj["relocations"] for r in entries]
        assert ours_relocations == theirs_relocations


def _protobuf_fields(message: bytes) -> list[tuple[int, int, object]] | None:
    """The top-level fields of `message` as Google's protobuf library reads it without a
    schema (every field of an empty message is unknown): (number, wire type, value), or None
    where the library refuses the bytes as a message."""
    holder = empty_pb2.Empty()
    try:
        holder.ParseFromString(message)
    except DecodeError:
        return None
    return [(f.field_number, f.wire_type, f.data) for f in UnknownFieldSet(holder)]


@pytest.mark.parametrize("name", ["sin3", "mlp64", "fori"])
def test_the_wire_reader_reads_what_protobuf_reads(name: str) -> None:
    messages = [compiled(name)[1]]
    agreed = 0
    while messages:
        message = messages.pop()
        theirs = _protobuf_fields(message)
        try:
            ours = hooks.wire_fields(message)
        except PjrtError as e:
            # Strings and ELF bytes are no messages; the library lets field number 0 by.
            assert theirs is None or "field number 0" in str(e), e
            assert agreed, "the executable itself is a message"
            continue
        assert ours == theirs
        agreed += 1
        messages += [value for _, wire, value in ours if wire == 2][: 200 - agreed]
    assert agreed > 20


# ------------------------------------------------------------------ what the form says


@pytest.mark.parametrize("name", ["sin3", "mlp64", "ew1m", "fori", "exp_cos", "where"])
def test_thunks_buffers_and_objects_agree_with_the_program(name: str) -> None:
    executable, _ = compiled(name)
    d = details(name)
    kernels = [t["name"] for t in d["thunks"] if t["kind"] == "kernel"]
    assert sorted(kernels) == sorted(n for kind, n in d["symbols"] if kind == 1)
    exported = {s[0] for o in d["objects"] for s in o["symbols"] if s[1] == 1 and s[3] != 0}
    assert set(kernels) <= exported
    allocations = d["allocations"]
    assert [a["index"] for a in allocations] == list(range(len(allocations)))
    parameters = {
        a["parameter_number"]: a["size"] for a in allocations if a["is_entry_computation_parameter"]
    }
    (output,) = executable.outputs
    # After the inputs, a parameter per output written in place (its donated argument).
    sizes = [s.nbytes for s in executable.inputs] + [output.nbytes] * (
        len(parameters) > len(executable.inputs)
    )
    assert parameters == dict(enumerate(sizes))
    live_out = [a["size"] for a in allocations if a["maybe_live_out"] and not a["is_tuple"]]
    assert output.nbytes in live_out
    for thunk in d["thunks"]:
        for allocation, offset, size in thunk.get("arguments", []) + thunk.get("results", []):
            assert offset + size <= allocations[allocation]["size"]
    assert d["target"][0].startswith("x86_64")


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_runner_verdicts_on_real_programs(name: str) -> None:
    runner, words = VERDICTS[name]
    executable, serialized = compiled(name)
    assert hooks.runner_verdict(serialized)[0] == runner
    assert executable.runner.would_take == runner and words in executable.runner.reason
    assert executable.runner.name == runner


def test_a_cache_hit_reads_the_entry_the_compile_stored() -> None:
    # A hit on the kernel runner is made from the entry's payload without PJRT's
    # deserialization (which drops the objects), and serializes as that payload: its
    # verdict is the compile's.
    program = cx.lower(lambda x: jnp.sin(x) * 3, [spec((5,), F32)])
    first, _ = cx.compile_program(program)
    second, statistics = cx.compile_program(program)
    assert statistics.cache_hit
    assert first.runner == second.runner and second.runner.would_take == "kernels"
    summary = _core.compiled_summary_of(second._native)
    assert summary is not None and summary["undefined_symbols"] == ["sinf"]
    assert second._native.serialize() == first._native.serialize()
    assert hooks.runner_verdict(second._native.serialize())[0] == "kernels"


# ------------------------------------------------------------------ malformed bytes


@pytest.mark.parametrize(
    ("message", "words"),
    [
        (b"\x08", "a varint is cut short"),
        (b"\x08" + b"\xff" * 10 + b"\x01", "a varint is longer than 64 bits"),
        (b"\x08" + b"\xff" * 9 + b"\x02", "a varint is longer than 64 bits"),
        (b"\x0a\x05ab", "field 1 needs 5 bytes, and 2 are left"),
        (b"\x0b", "is a group"),
        (b"\x0f", "wire type 7"),
        (b"\x00", "field number 0"),
    ],
)
def test_malformed_wire_bytes_are_refused_by_name(message: bytes, words: str) -> None:
    with pytest.raises(PjrtError, match=re.escape(words)):
        hooks.wire_fields(message)
    runner, reason = hooks.runner_verdict(message)
    assert runner == "pjrt" and reason.startswith("its serialized form could not be read")
    assert words in reason


def test_fixed_fields_are_little_endian() -> None:
    message = b"\x09" + bytes(range(1, 9)) + b"\x15\x01\x02\x03\x04"
    assert hooks.wire_fields(message) == [(1, 1, 0x0807060504030201), (2, 5, 0x04030201)]
    with pytest.raises(PjrtError, match="field 1 needs 8 bytes, and 7 are left"):
        hooks.wire_fields(message[:8])


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field, encoded independently of the reader."""
    out, n = bytearray([number << 3 | 2]), len(payload)
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out) + payload


def _loops(count: int) -> bytes:
    """An executable whose thunk sequence nests `count` loops, each three messages deep."""
    sequence = b""
    for _ in range(count):
        sequence = _field(1, _field(10, _field(2, sequence)))  # thunk { while { body } }
    return _field(1, _field(6, sequence))


def test_nesting_is_limited() -> None:
    # Read to the end: its loops' condition buffers name allocations it does not have.
    runner, reason = hooks.runner_verdict(_loops(15))
    assert runner == "pjrt" and "'s condition buffer names allocation 0 of 0" in reason
    runner, reason = hooks.runner_verdict(_loops(30))
    assert runner == "pjrt" and "messages nest deeper than 64 levels" in reason


def _rebuilt(serialized: bytes, edit: Callable[[int, bytes], bytes]) -> bytes:
    """`serialized` with each field of its CompilationResultProto replaced by edit(number,
    payload) (length-delimited fields only)."""
    ((_, _, executable), *rest) = hooks.wire_fields(serialized)
    fields = b""
    for number, wire, value in hooks.wire_fields(executable):
        assert wire == 2 or number == 5
        fields += _field(number, edit(number, value)) if wire == 2 else bytes([number << 3, value])
    return _field(1, fields) + b"".join(_field(n, v) for n, _, v in rest)


def _object_edit(change: Callable[[bytearray], None]) -> Callable[[int, bytes], bytes]:
    def edit(number: int, value: bytes) -> bytes:
        if number != 8:
            return value
        ((_, _, contents), *others) = hooks.wire_fields(value)
        obj = bytearray(contents)
        change(obj)
        return _field(1, bytes(obj)) + b"".join(_field(n, v) for n, _, v in others)

    return edit


def _section_header(obj: bytearray, index: int) -> int:
    return int.from_bytes(obj[40:48], "little") + 64 * index


def _set(obj: bytearray, at: int, value: int, size: int) -> None:
    obj[at : at + size] = value.to_bytes(size, "little")


def _first_rela(obj: bytearray) -> int:
    sections = hooks.elf_object(bytes(obj))["sections"]
    index = next(i for i, s in enumerate(sections) if s[1] == 4)
    return sections[index][3]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda o: _set(o, 62, 200, 2), "its section names are in section 200 of"),
        (lambda o: _set(o, 40, 1 << 40, 8), "the section headers ("),
        (lambda o: _set(o, 4, 1, 1), "it is not ELF64 (class 1)"),
        (lambda o: _set(o, 18, 183, 2), "it is for machine 183, not x86-64"),
        (lambda o: _set(o, 16, 3, 2), "it is not relocatable (ET_REL)"),
        (lambda o: _set(o, _section_header(o, 2) + 32, 1 << 50, 8), "section 2 ("),
        (lambda o: _set(o, _first_rela(o) + 12, 9999, 4), "names symbol 9999 of"),
        (lambda o: _set(o, _first_rela(o), 1 << 40, 8), "writes past section"),
        (lambda o: _set(o, _first_rela(o) + 8, 22, 4), "R_X86_64_GOTTPOFF relocation"),
        (
            lambda o: o.__setitem__(
                slice(o.find(b"\0sinf\0") + 1, o.find(b"\0sinf\0") + 5), b"sinx"
            ),
            "needs the symbol 'sinx', which is not in libc, libm or the compiler runtime",
        ),
        (
            lambda o: o.__setitem__(
                slice(o.find(b"\0sinf\0") + 1, o.find(b"\0sinf\0") + 5), b"\xffinf"
            ),
            "needs the symbol '\\xffinf'",  # bytes that are not UTF-8, written out
        ),
    ],
)
def test_damaged_objects_keep_pjrt_and_say_why(
    change: Callable[[bytearray], None], words: str
) -> None:
    damaged = _rebuilt(compiled("sin3")[1], _object_edit(change))
    runner, reason = hooks.runner_verdict(damaged)
    assert runner == "pjrt" and words in reason


def test_an_unharmed_rebuild_still_takes_the_kernels() -> None:
    rebuilt = _rebuilt(compiled("sin3")[1], lambda number, value: value)
    assert hooks.runner_verdict(rebuilt)[0] == "kernels"


def test_another_architecture_is_refused_by_name() -> None:
    def edit(number: int, value: bytes) -> bytes:
        if number != 9:
            return value
        return b"".join(
            _field(n, b"aarch64-unknown-linux-gnu" if n == 1 else v)
            for n, _, v in hooks.wire_fields(value)
        )

    assert hooks.runner_verdict(_rebuilt(compiled("sin3")[1], edit)) == (
        "pjrt",
        "it was compiled for aarch64",
    )


def test_a_slice_past_its_allocation_is_refused() -> None:
    def edit(number: int, value: bytes) -> bytes:
        if number != 2:
            return value
        # Every allocation shrinks to one byte: the kernel's 12-byte slices no longer fit.
        out = b""
        for n, wire, v in hooks.wire_fields(value):
            if n == 3:
                fields = [(m, w, x) for m, w, x in hooks.wire_fields(v) if m != 2]
                v = b"".join(bytes([m << 3, x]) for m, w, x in fields if w == 0) + b"\x10\x01"
            out += _field(n, v) if wire == 2 else b""
        return out

    runner, reason = hooks.runner_verdict(_rebuilt(compiled("sin3")[1], edit))
    assert runner == "pjrt" and "runs past allocation" in reason


def _varint_field(number: int, value: int) -> bytes:
    """A varint field, encoded independently of the reader."""
    out = bytearray([number << 3])
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def _with_workgroups(x: int, y: int, z: int) -> Callable[[int, bytes], bytes]:
    """An edit giving every kernel thunk x by y by z workgroups (KernelThunkProto field 2)."""

    def kernel(value: bytes) -> bytes:
        dims = _varint_field(1, x) + _varint_field(2, y) + _varint_field(3, z)
        return b"".join(
            _field(n, dims if n == 2 else v) for n, wire, v in hooks.wire_fields(value) if wire == 2
        )

    def thunk(value: bytes) -> bytes:
        return b"".join(
            _field(n, kernel(v) if n == 11 else v) if wire == 2 else b""
            for n, wire, v in hooks.wire_fields(value)
        )

    def edit(number: int, value: bytes) -> bytes:
        if number != 6:
            return value
        return b"".join(
            _field(n, thunk(v) if n == 1 else v) for n, wire, v in hooks.wire_fields(value)
        )

    return edit


@pytest.mark.parametrize(
    ("workgroups", "runner"),
    [((3, 1, 1), "kernels"), ((0, 1, 1), "pjrt"), ((1 << 20, 1 << 20, 1), "pjrt")],
)
def test_a_kernels_workgroup_count_is_bounded(
    workgroups: tuple[int, int, int], runner: str
) -> None:
    # Workgroups are pieces of shared work, counted in 32 bits: none, or more, stays on PJRT.
    edited = _rebuilt(compiled("sin3")[1], _with_workgroups(*workgroups))
    assert hooks.compiled_details(edited)["thunks"][0]["workgroups"] == workgroups
    got, reason = hooks.runner_verdict(edited)
    assert got == runner, reason
    if runner == "pjrt":
        assert "a count cyxla's runner does not take" in reason


def test_the_summary_names_what_the_form_holds() -> None:
    summary = hooks.compiled_summary(compiled("tanh_sum")[1])
    assert summary["thunk_kinds"] == {"kernel": 1, "ynn-fusion": 1}
    assert summary["objects"] == 1 and summary["triple"].startswith("x86_64")
    with pytest.raises(PjrtError, match="malformed at byte 0"):
        hooks.compiled_summary(b"\x0a\x05ab")
