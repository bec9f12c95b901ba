"""The program file: `Program.save`, `load_program` and pickling, checked against jax.jit,
against the layout docs/program-file.md gives (parsed here with `struct`, apart from the
implementation), and with every kind of bad file a reader must refuse."""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import pickle
import stat
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import jaxlib
import ml_dtypes
import numpy as np
import pytest

import cyxla as cx
from cyxla import _core
from cyxla._jax.compile_options import compile_options
from cyxla._jax.jaxlib import xla_client
from cyxla._program.output_tree import MAX_NESTING

from program_file_writer import HEADER, metadata_of, pack, parts, replace_metadata, rewrite
from support import INVALID_ARGUMENT, PROGRAM_FILE, run_python


def _spec(*shape: int, dtype: Any = np.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, np.dtype(dtype))


def _structured(x: jax.Array, w: jax.Array, n: jax.Array) -> dict[str, Any]:
    y = jnp.tanh(x @ w)
    return {
        "sum": jnp.sum(y),
        "parts": (y, [x * 2, None]),
        "ordered": collections.OrderedDict(b=y + n, a=w),
    }


_ARGS = [_spec(4, 8), _spec(8, 8), _spec(dtype=np.int32)]


def _inputs() -> list[np.ndarray]:
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
    w = np.linspace(-0.5, 0.5, 64, dtype=np.float32).reshape(8, 8)
    return [x, w, np.array(3, dtype=np.int32)]


@pytest.fixture(scope="module")
def program() -> cx.Program:
    return cx.lower(_structured, _ARGS)


@pytest.fixture
def saved(tmp_path: Path, program: cx.Program) -> Path:
    path = tmp_path / "model.cyxla"
    program.save(path)
    return path


def _check_against_jit(program: cx.Program) -> None:
    executable, _ = cx.compile_program(program)
    result = jax.tree.unflatten(program.output_tree, executable.run(_inputs()))
    expected = jax.jit(_structured)(*_inputs())
    assert jax.tree.structure(result) == jax.tree.structure(expected)
    assert list(result["ordered"]) == ["b", "a"]
    for got, want in zip(jax.tree.leaves(result), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------ round trips


def test_a_loaded_program_is_the_saved_one_and_gives_jits_results(
    saved: Path, program: cx.Program
) -> None:
    loaded = cx.load_program(saved)
    assert loaded == program  # every field but the output tree
    assert loaded.output_tree == program.output_tree
    _check_against_jit(loaded)


def test_a_program_loads_in_another_process(saved: Path) -> None:
    result = run_python(
        f"""
        import json
        import jax, numpy as np
        import cyxla as cx

        program = cx.load_program({str(saved)!r})
        x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
        w = np.linspace(-0.5, 0.5, 64, dtype=np.float32).reshape(8, 8)
        outputs = cx.compile_program(program)[0].run([x, w, np.int32(3)])
        result = jax.tree.unflatten(program.output_tree, outputs)
        print(json.dumps(float(result["sum"])))
        """
    )
    assert result.returncode == 0, result.stderr
    x, w, _ = _inputs()
    assert json.loads(result.stdout.splitlines()[-1]) == pytest.approx(
        float(np.sum(np.tanh(x @ w))), rel=1e-5
    )


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (lambda x: x * 2, [_spec(3)]),
        (lambda x: (x, x + 1), [_spec(3)]),
        (lambda x: [x, (x,)], [_spec(3)]),
        (lambda x: {9: x, 7: x - 1}, [_spec(3)]),
        (lambda x: (None, x), [_spec(3)]),
        (lambda x: x.astype(jnp.bfloat16), [_spec(2, 0)]),
        (lambda x: jnp.sum(x), [_spec(dtype=ml_dtypes.bfloat16)]),
    ],
    ids=["leaf", "tuple", "list", "dict", "none", "empty", "scalar"],
)
def test_output_structures_and_specs_round_trip(
    tmp_path: Path, fn: Callable[..., Any], args: list[Any]
) -> None:
    program = cx.lower(fn, args)
    program.save(tmp_path / "p.cyxla")
    loaded = cx.load_program(tmp_path / "p.cyxla")
    assert loaded == program
    assert loaded.output_tree == program.output_tree


def test_custom_pytree_nodes_are_refused_at_save_and_saved_flat_when_dropped(
    tmp_path: Path,
) -> None:
    pair = collections.namedtuple("pair", "a b")
    program = cx.lower(lambda x: pair(x, x + 1), [_spec(2)])
    path = tmp_path / "pair.cyxla"
    with pytest.raises(cx.UnsupportedProgramError, match=r"pair, which Program\.save cannot"):
        program.save(path)
    assert not path.exists()
    assert not list(tmp_path.iterdir())  # no temporary left behind either
    dataclasses.replace(program, output_tree=None).save(path)
    loaded = cx.load_program(path)
    assert loaded.output_tree == jax.tree.structure((0, 0))
    x = np.array([1.0, 2.0], dtype=np.float32)
    a, b = cx.compile_program(loaded)[0].run([x])
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, x + 1)


def _nested(levels: int, container: Callable[[Any], Any]) -> Callable[[jax.Array], Any]:
    """A function whose result is `x` inside `levels` levels of `container`."""

    def nested(x: jax.Array) -> Any:
        result: Any = x
        for _ in range(levels):
            result = container(result)
        return result

    return nested


@pytest.mark.parametrize(
    ("levels", "container"),
    [
        (MAX_NESTING // 2 + 1, lambda v: (v,)),  # one list and one dict per level
        (MAX_NESTING, lambda v: (v,)),  # once a RecursionError instead
        (MAX_NESTING // 3 + 1, lambda v: {"k": v}),  # a dict and two lists per level
    ],
    ids=["tuples", "deep-tuples", "dicts"],
)
def test_an_output_structure_nested_too_deeply_is_refused_at_save(
    tmp_path: Path, levels: int, container: Callable[[Any], Any]
) -> None:
    program = cx.lower(_nested(levels, container), [_spec(2)])
    path = tmp_path / "deep.cyxla"
    with pytest.raises(cx.UnsupportedProgramError, match=r"nests too deeply for Program\.save"):
        program.save(path)
    assert not list(tmp_path.iterdir())
    dataclasses.replace(program, output_tree=None).save(path)  # flat, it saves
    (y,) = cx.compile_program(cx.load_program(path))[0].run([np.ones(2, np.float32)])
    np.testing.assert_array_equal(y, np.ones(2, np.float32))


def test_an_output_structure_nested_as_deeply_as_allowed_round_trips(tmp_path: Path) -> None:
    program = cx.lower(_nested(MAX_NESTING // 2, lambda v: [v]), [_spec(2)])
    program.save(tmp_path / "deep.cyxla")
    loaded = cx.load_program(tmp_path / "deep.cyxla")
    assert loaded.output_tree == program.output_tree
    x = np.array([1.0, 2.0], np.float32)
    result = jax.tree.unflatten(loaded.output_tree, cx.compile_program(loaded)[0].run([x]))
    assert jax.tree.structure(result) == jax.tree.structure(
        _nested(MAX_NESTING // 2, lambda v: [v])(x)
    )
    np.testing.assert_array_equal(jax.tree.leaves(result)[0], x)


def test_save_refuses_names_with_line_breaks_and_bad_paths(
    tmp_path: Path, program: cx.Program
) -> None:
    with pytest.raises(ValueError, match="line break"):
        dataclasses.replace(program, name="two\nlines").save(tmp_path / "x.cyxla")
    with pytest.raises(TypeError, match=r"Program\.save: path must be a str"):
        program.save(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="load_program: path must be a str"):
        cx.load_program(None)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        cx.load_program(tmp_path / "missing.cyxla")
    # A missing directory is reported with the file asked for (it named a temporary file).
    target = tmp_path / "no" / "such" / "x.cyxla"
    with pytest.raises(FileNotFoundError) as caught:
        program.save(target)
    assert caught.value.filename == str(target)
    assert not (tmp_path / "no").exists()


def test_only_what_the_reader_reads_is_written(tmp_path: Path, program: cx.Program) -> None:
    path = tmp_path / "x.cyxla"
    cases = {
        "unknown platform 'abacus'": dataclasses.replace(program, platform="abacus"),
        "the output_tree has 2 leaves, but the file 5 outputs": dataclasses.replace(
            program, output_tree=jax.tree.structure((0, 0))
        ),
    }
    for message, bad in cases.items():
        with pytest.raises(cx.InvalidArgumentError, match=r"^cannot write a program file: ") as e:
            bad.save(path)
        assert message in str(e.value)
    with pytest.raises(cx.InvalidArgumentError, match="element type 16 is not one cyxla carries"):
        _core._pack_program_file(
            name="f8",
            platform="cpu",
            stablehlo_version="1.0.0",
            inputs=[(16, [2])],  # F8E5M2
            outputs=[],
            custom_calls=[],
            donated_outputs=[],
            stablehlo=b"",
            compile_options=b"",
            cyxla_version=cx.__version__,
            jax_version="",
            jaxlib_version="",
            output_tree=None,
        )
    assert not list(tmp_path.iterdir())


def test_a_save_that_fails_leaves_no_file_behind(tmp_path: Path, program: cx.Program) -> None:
    """The file is written whole or not at all: a save that cannot replace what is at its
    path (here a directory) raises OSError and removes its temporary file."""
    target = tmp_path / "model.cyxla"
    target.mkdir()
    with pytest.raises(OSError, match="Is a directory"):
        program.save(target)
    assert [p.name for p in tmp_path.iterdir()] == ["model.cyxla"] and target.is_dir()
    program.save(tmp_path / "other.cyxla")  # beside it, a save works
    _check_against_jit(cx.load_program(tmp_path / "other.cyxla"))


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_a_saved_file_has_the_mode_the_umask_gives(
    tmp_path: Path, program: cx.Program, umask: int
) -> None:
    """A saved file is created as the process creates any file, not private (0600)."""
    old = os.umask(umask)
    try:
        program.save(tmp_path / "model.cyxla")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "model.cyxla").stat().st_mode) == 0o666 & ~umask


def test_a_loaded_program_keeps_the_files_compile_options(saved: Path, program: cx.Program) -> None:
    assert program.compile_options is None  # lower's: cyxla's defaults when saved
    metadata, code, _ = parts(saved.read_bytes())
    options = compile_options({"xla_cpu_enable_fast_math": False})
    assert options != compile_options()
    other = saved.with_name("options.cyxla")
    other.write_bytes(pack(metadata, code, options))
    loaded = cx.load_program(other)
    assert loaded.compile_options == options
    assert loaded == program  # the options are not compared
    assert "compile_options" not in repr(loaded)
    loaded.save(saved.with_name("again.cyxla"))
    assert parts(saved.with_name("again.cyxla").read_bytes())[2] == options
    assert pickle.loads(pickle.dumps(loaded)).compile_options == options


# ------------------------------------------------------------------ pickling


def test_a_program_pickles_as_its_files_bytes(saved: Path, program: cx.Program) -> None:
    data = pickle.dumps(program)
    assert saved.read_bytes() in data
    copy = pickle.loads(data)
    assert copy == program
    assert copy.output_tree == program.output_tree
    _check_against_jit(copy)


def test_an_altered_pickle_is_refused(program: cx.Program) -> None:
    data = bytearray(pickle.dumps(program))
    start = data.index(b"CYXLAPRG")
    data[start + 100] ^= 0x01
    with pytest.raises(cx.ProgramFileError, match=r"pickled cyxla\.Program: altered") as error:
        pickle.loads(bytes(data))
    assert error.value.reason == "checksum"
    assert pickle.loads(pickle.dumps(error.value)).reason == "checksum"


# ------------------------------------------------------------------ the layout


def test_the_layout_is_the_documented_one(saved: Path, program: cx.Program) -> None:
    data = saved.read_bytes()
    magic, version, crc, m, s, c, reserved = HEADER.unpack_from(data)
    assert (magic, version, reserved) == (b"CYXLAPRG", 1, 0)
    assert HEADER.size == 48
    assert len(data) == 48 + m + s + c
    assert crc == zlib.crc32(data[16:])
    assert data[48 + m : 48 + m + s] == program.stablehlo
    options = data[48 + m + s :]
    assert options == xla_client.CompileOptions().SerializeAsString()
    lines = data[48 : 48 + m].decode("utf-8").split("\n")
    assert lines[-1] == ""  # every line ends with LF
    pairs = [line.split(" ", 1) for line in lines[:-1]]
    assert [k for k, _ in pairs] == [
        "name",
        "platform",
        "stablehlo_version",
        "input",
        "input",
        "input",
        "output",
        "output",
        "output",
        "output",
        "output",
        "cyxla_version",
        "jax_version",
        "jaxlib_version",
        "output_tree",
    ]
    values = dict(pairs)
    assert values["name"] == "_structured"
    assert values["platform"] == "cpu"
    assert values["stablehlo_version"] == program.stablehlo_version
    assert [v for k, v in pairs if k == "input"] == ["F32 [4,8]", "F32 [8,8]", "S32 []"]
    # jax.tree order: the dict's keys sorted, an OrderedDict's in order, None no leaf.
    assert [v for k, v in pairs if k == "output"] == [
        "F32 [4,8]",
        "F32 [8,8]",
        "F32 [4,8]",
        "F32 [4,8]",
        "F32 []",
    ]
    assert values["cyxla_version"] == cx.__version__
    assert values["jax_version"] == jax.__version__
    assert values["jaxlib_version"] == jaxlib.__version__
    json.loads(values["output_tree"])


def test_outputs_written_in_place_are_listed(tmp_path: Path) -> None:
    # On the CPU, lower adds a donated parameter for each output of 64 KiB or more: a
    # native loader cannot read that from the StableHLO, so the file says it.
    def big_then_small(x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return jnp.sin(x), jnp.sum(x)

    program = cx.lower(big_then_small, [_spec(128, 128)])
    path = tmp_path / "big.cyxla"
    program.save(path)
    lines = metadata_of(path.read_bytes()).splitlines()
    assert [line for line in lines if line.startswith("donated_output")] == ["donated_output 0"]
    loaded = cx.load_program(path)
    x = np.linspace(-3, 3, 128 * 128, dtype=np.float32).reshape(128, 128)
    big, total = cx.compile_program(loaded)[0].run([x])
    expected = jax.jit(big_then_small)(x)
    np.testing.assert_allclose(big, expected[0], rtol=1e-6)
    np.testing.assert_allclose(total, expected[1], rtol=1e-5)


def test_custom_call_targets_are_listed(tmp_path: Path) -> None:
    program = cx.lower(jnp.linalg.inv, [_spec(3, 3)])
    assert program.custom_calls  # jaxlib's LAPACK target
    program.save(tmp_path / "inv.cyxla")
    data = (tmp_path / "inv.cyxla").read_bytes()
    _, _, _, m, _, _, _ = HEADER.unpack_from(data)
    lines = data[48 : 48 + m].decode().splitlines()
    assert [line[len("custom_call ") :] for line in lines if line.startswith("custom_call ")] == [
        *program.custom_calls
    ]
    assert cx.load_program(tmp_path / "inv.cyxla").custom_calls == program.custom_calls


# ------------------------------------------------------------------ bad files


def _edit_metadata(edit: Callable[[str], str]) -> Callable[[bytes], bytes]:
    return lambda data: rewrite(data, metadata=edit(metadata_of(data)).encode("utf-8"))


def _replace(old: str, new: str) -> Callable[[bytes], bytes]:
    return lambda data: replace_metadata(data, old, new)


def _with_lines(*lines: str) -> Callable[[bytes], bytes]:
    """Lines added after the cyxla_version line."""
    return _replace("cyxla_version", "".join(f"{line}\n" for line in lines) + "cyxla_version")


def _with_tree(text: str) -> Callable[[bytes], bytes]:
    return _edit_metadata(lambda t: t[: t.index("output_tree ")] + f"output_tree {text}\n")


def _flip(offset: int) -> Callable[[bytes], bytes]:
    def flip(data: bytes) -> bytes:
        changed = bytearray(data)
        changed[offset] ^= 0x40
        return bytes(changed)

    return flip


def _size_field(offset: int, value: int) -> Callable[[bytes], bytes]:
    return lambda d: d[:offset] + struct.pack("<Q", value) + d[offset + 8 :]


#: Every kind of file a reader refuses: (the change to a good file, `reason`, a part of
#: the message), in the order the reader checks. The metadata of the good file: name,
#: platform, stablehlo_version, three inputs (F32 [4,8] first), five outputs, the three
#: versions and the output_tree.
_BAD_FILES: dict[str, tuple[Callable[[bytes], bytes], str, str]] = {
    "other file": (
        lambda d: b"\x7fELF" + d[4:],
        "magic",
        "not a cyxla program file (it does not start with CYXLAPRG)",
    ),
    "empty": (lambda d: b"", "size", "truncated: 0 bytes, shorter than the 48-byte header"),
    "within the magic": (lambda d: d[:5], "size", "truncated: 5 bytes, shorter than the 48"),
    "header only": (lambda d: d[:20], "size", "truncated: 20 bytes, shorter than the 48"),
    "newer format": (
        lambda d: rewrite(d, version=2),
        "version",
        "written by a newer cyxla: format 2, this reads up to 1; upgrade cyxla",
    ),
    "format 0": (
        lambda d: rewrite(d, version=0),
        "version",
        "format 0 does not exist (formats start at 1)",
    ),
    "huge size": (
        _size_field(16, 1 << 62),
        "size",
        f"malformed header: the metadata size {1 << 62} is larger than the file (",
    ),
    "the largest size": (
        _size_field(32, (1 << 64) - 1),
        "size",
        f"the compile-options size {(1 << 64) - 1} is larger than the file",
    ),
    "truncated": (lambda d: d[:-1], "size", "bytes, the header describes"),
    "trailing": (lambda d: d + b"\0\0", "size", "2 trailing bytes after the"),
    "altered stablehlo": (
        _flip(-1000),
        "checksum",
        "altered or corrupted (its CRC-32 does not match)",
    ),
    "altered metadata": (_flip(50), "checksum", "altered or corrupted"),
    "wrong crc": (lambda d: rewrite(d, crc=False), "checksum", "altered or corrupted"),
    "reserved": (
        lambda d: rewrite(d, reserved=7),
        "reserved",
        "malformed header: the reserved field is 7, not 0",
    ),
    # The CRC-32 is checked before the reserved field.
    "reserved and wrong crc": (
        lambda d: rewrite(d, reserved=7, crc=False),
        "checksum",
        "altered or corrupted",
    ),
    "not UTF-8": (
        lambda d: rewrite(d, metadata=metadata_of(d).encode() + b"key \xff\n"),
        "metadata",
        "malformed metadata: not UTF-8 text (at byte ",
    ),
    **{
        f"not UTF-8: {what}": (
            lambda d, b=bad: rewrite(d, metadata=metadata_of(d).encode() + b"key " + b + b"\n"),
            "metadata",
            "not UTF-8 text",
        )
        for what, bad in {
            "a surrogate": b"\xed\xa0\x80",
            "an overlong form": b"\xe0\x80\xaf",
            "past U+10FFFF": b"\xf4\x90\x80\x80",
            "a cut sequence": b"\xe2\x82",
        }.items()
    },
    "no final LF": (
        _edit_metadata(lambda t: t[:-1]),
        "metadata",
        "the last line does not end with LF",
    ),
    "line without space": (
        _replace("name _structured\n", "name\n"),
        "metadata",
        "malformed metadata: line 1 'name': expected 'key value'",
    ),
    "line without key": (
        _replace("name _structured\n", " name _structured\n"),
        "metadata",
        "line 1 ' name _structured': expected 'key value'",
    ),
    "CR": (
        _replace("platform cpu\n", "platform cpu\r\n"),
        "metadata",
        r"line 2 'platform cpu\x0d': expected 'key value'",
    ),
    "no name": (
        _replace("name _structured\n", ""),
        "metadata",
        "the required key 'name' is missing",
    ),
    "no version": (
        _edit_metadata(lambda t: "".join(ln for ln in t.splitlines(True) if "cyxla_v" not in ln)),
        "metadata",
        "the required key 'cyxla_version' is missing",
    ),
    "platform twice": (
        _replace("platform cpu\n", "platform cpu\nplatform cpu\n"),
        "metadata",
        "the key 'platform' appears twice",
    ),
    "jax_version twice": (
        _with_lines(f"jax_version {jax.__version__}"),
        "metadata",
        "the key 'jax_version' appears twice",
    ),
    "jaxlib_version twice": (
        _with_lines("jaxlib_version 0.0"),
        "metadata",
        "the key 'jaxlib_version' appears twice",
    ),
    "output_tree twice": (
        _with_lines('output_tree "*"'),
        "metadata",
        "the key 'output_tree' appears twice",
    ),
    "unknown platform": (
        _replace("platform cpu", "platform abacus"),
        "metadata",
        "malformed metadata: unknown platform 'abacus' (known: cpu, cuda, rocm, tpu)",
    ),
    "an alias for a platform": (
        _replace("platform cpu", "platform host"),
        "metadata",
        "unknown platform 'host'",
    ),
    "no shape": (
        _replace("input F32 [4,8]", "input F32"),
        "metadata",
        "line 4 'input F32': expected 'ELEMENT_TYPE [d0,d1,...]'",
    ),
    "element type": (
        _replace("input F32", "input F33"),
        "metadata",
        "line 4 'input F33 [4,8]': unknown element type 'F33' (known: PRED, S8,",
    ),
    "element type cyxla does not carry": (
        _replace("input F32", "input F8E5M2"),
        "metadata",
        "unknown element type 'F8E5M2'",
    ),
    "no brackets": (
        _replace("input F32 [4,8]", "input F32 4,8"),
        "metadata",
        "the shape must be [d0,d1,...] ([] for a scalar)",
    ),
    "negative": (
        _replace("input F32 [4,8]", "input F32 [4,-8]"),
        "metadata",
        "the dimension '-8' is not an integer from 0 to 2^63-1",
    ),
    "fraction": (
        _replace("input F32 [4,8]", "input F32 [4,8.5]"),
        "metadata",
        "the dimension '8.5' is not an integer",
    ),
    "spaces": (
        _replace("input F32 [4,8]", "input F32 [4, 8]"),
        "metadata",
        "the dimension ' 8' is not an integer",
    ),
    "trailing comma": (
        _replace("input F32 [4,8]", "input F32 [4,8,]"),
        "metadata",
        "the dimension '' is not an integer",
    ),
    "too large": (
        _replace("input F32 [4,8]", f"input F32 [4,{1 << 63}]"),
        "metadata",
        f"the dimension '{1 << 63}' is not an integer from 0 to 2^63-1",
    ),
    # Dims whose product wraps around 2^64 would size buffers small (issue 20).
    "bytes past 2^64": (
        _replace("input F32 [4,8]", f"input F32 [{1 << 62},4]"),
        "metadata",
        f"the shape '[{1 << 62},4]' holds more bytes than a 64-bit size counts",
    ),
    "elements past 2^64": (
        _replace("input F32 [4,8]", f"input S8 [{1 << 32},{1 << 32}]"),
        "metadata",
        f"line 4 'input S8 [{1 << 32},{1 << 32}]': the shape",
    ),
    "donated_output of no output": (
        _with_lines("donated_output 5"),
        "metadata",
        "donated_output '5' is not the index of one of the 5 outputs",
    ),
    "donated_output not a number": (
        _with_lines("donated_output -1"),
        "metadata",
        "donated_output '-1' is not the index",
    ),
    "donated_output twice": (
        _with_lines("donated_output 1", "donated_output 1"),
        "metadata",
        "donated_output 1 appears twice",
    ),
    "tree not JSON": (
        _replace("output_tree {", "output_tree {{"),
        "metadata",
        "malformed metadata: the output_tree is not JSON",
    ),
    "tree deep": (
        _with_tree("[" * 600 + "]" * 600),
        "metadata",
        "the output_tree nests deeper than 512",
    ),
    "tree a number": (
        _with_tree("42"),
        "metadata",
        "the output_tree is not an output structure (a node that is not",
    ),
    "tree of an unknown node": (
        _with_tree('{"set":["*"]}'),
        "metadata",
        "the output_tree is not an output structure (the unknown node 'set')",
    ),
    "tree of keys without children": (
        _with_tree('{"dict":[["a"],[]]}'),
        "metadata",
        "(a dict that does not hold [keys, children] of one length)",
    ),
    "tree with a key twice": (
        _with_tree('{"ordered_dict":[["a","a"],["*","*"]]}'),
        "metadata",
        "(a key appears twice)",
    ),
    "tree of a dict with mixed keys": (
        _with_tree('{"dict":[["a",1],["*","*"]]}'),
        "metadata",
        "(a dict with both str and int keys)",
    ),
    "tree with a bool key": (
        _with_tree('{"dict":[[true],["*"]]}'),
        "metadata",
        "(a key that is not a str or int)",
    ),
    "tree of other outputs": (
        _replace("output F32 []\n", ""),
        "metadata",
        "the output_tree has 5 leaves, but the file 4 outputs",
    ),
}


@pytest.mark.parametrize("case", list(_BAD_FILES))
def test_bad_files_are_refused_saying_which(saved: Path, case: str) -> None:
    change, reason, message = _BAD_FILES[case]
    bad = saved.with_name("bad.cyxla")
    bad.write_bytes(change(saved.read_bytes()))
    with pytest.raises(cx.ProgramFileError) as error:
        cx.load_program(bad)
    assert error.value.reason == reason
    assert str(error.value).startswith(f"{bad}: ")
    assert message in str(error.value)
    assert isinstance(error.value, ValueError)


def test_a_message_quotes_what_it_cannot_print_escaped(saved: Path) -> None:
    # What a JSON string decodes to need not be printable text (a control character, a
    # byte that \udc80 stands for): escaped, and cut after 80 characters.
    bad = saved.with_name("bad.cyxla")
    bad.write_bytes(_with_tree('{"a\\u0001\\udc80' + "b" * 100 + '":[]}')(saved.read_bytes()))
    with pytest.raises(cx.ProgramFileError, match=r"unknown node 'a\\x01\\x80b{77}\.\.\.'\)$"):
        cx.load_program(bad)


def test_the_limits_of_a_file_are_read(saved: Path) -> None:
    """The largest dimension, and a file with no output_tree, a key a later cyxla may add
    and no jax versions."""

    def edit(text: str) -> str:
        kept = [
            ln
            for ln in text.splitlines(True)
            if not ln.startswith(("output_tree ", "jax_version ", "jaxlib_version "))
        ]
        return "".join(kept) + "written_by a later cyxla with spaces\n"

    other = saved.with_name("later.cyxla")
    other.write_bytes(_edit_metadata(edit)(saved.read_bytes()))
    loaded = cx.load_program(other)
    assert loaded == cx.load_program(saved)
    assert loaded.output_tree == jax.tree.structure((0,) * 5)
    other.write_bytes(_replace("name _structured", "name π_模型_😀")(saved.read_bytes()))
    assert cx.load_program(other).name == "π_模型_😀"
    largest = (1 << 63) - 1
    other.write_bytes(_replace("input F32 [4,8]", f"input F32 [{largest},0]")(saved.read_bytes()))
    assert cx.load_program(other).inputs[0].shape == (largest, 0)


def test_a_core_error_reaches_python_as_its_kind_s_class() -> None:
    """The one table of error kinds (src/common/error.hpp): a program file's refusal is
    ProgramFileError with its reason, not InvalidArgumentError."""
    with pytest.raises(cx.ProgramFileError, match=r"^x: truncated") as error:
        _core._read_program_file(b"CYXLAPRG", b"x")
    assert error.value.reason == "size"
    kinds = {kind: (name, status) for kind, name, status in _core._ERROR_KINDS}
    assert kinds["ProgramFile"] == ("ProgramFileError", PROGRAM_FILE)
    assert kinds["InvalidArgument"] == ("InvalidArgumentError", INVALID_ARGUMENT)
    assert all(issubclass(getattr(cx, name), Exception) for name, _ in kinds.values())
