"""The program file: `Program.save`, `load_program` and pickling, checked against jax.jit,
against the layout docs/program-file.md gives (parsed here with `struct`, apart from the
implementation), and with every kind of bad file a reader must refuse."""

from __future__ import annotations

import collections
import dataclasses
import json
import pickle
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
from cyxla._jaxlib import xla_client
from cyxla._output_tree import MAX_NESTING

from support import run_python

HEADER = struct.Struct("<8sIIQQQQ")


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
    lines = _metadata(path.read_bytes()).splitlines()
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


def _rewrite(
    data: bytes,
    *,
    metadata: bytes | None = None,
    version: int | None = None,
    reserved: int | None = None,
    crc: bool = True,
) -> bytes:
    """`data` with fields replaced, sizes and CRC-32 made right again (unless `crc` is False)."""
    magic, old_version, _, m, s, c, old_reserved = HEADER.unpack_from(data)
    body = data[48:]
    meta, rest = (body[:m], body[m:]) if metadata is None else (metadata, body[m:])
    fields = struct.pack("<QQQQ", len(meta), s, c, old_reserved if reserved is None else reserved)
    checked = fields + meta + rest
    return (
        magic
        + struct.pack(
            "<II",
            old_version if version is None else version,
            zlib.crc32(checked) if crc else 0,
        )
        + checked
    )


def _metadata(data: bytes) -> str:
    _, _, _, m, _, _, _ = HEADER.unpack_from(data)
    return data[48 : 48 + m].decode()


def _edit_metadata(edit: Callable[[str], str]) -> Callable[[bytes], bytes]:
    return lambda data: _rewrite(data, metadata=edit(_metadata(data)).encode("utf-8"))


def _replace(old: str, new: str) -> Callable[[bytes], bytes]:
    def edit(text: str) -> str:
        assert old in text, f"{old!r} not in the metadata"
        return text.replace(old, new, 1)

    return _edit_metadata(edit)


def _flip(offset: int) -> Callable[[bytes], bytes]:
    def flip(data: bytes) -> bytes:
        changed = bytearray(data)
        changed[offset] ^= 0x40
        return bytes(changed)

    return flip


_BAD_FILES: dict[str, tuple[Callable[[bytes], bytes], str, str]] = {
    "empty": (lambda d: b"", "magic", "not a cyxla program file"),
    "other file": (lambda d: b"\x7fELF" + d[4:], "magic", "not a cyxla program file"),
    "header only": (lambda d: d[:20], "size", "truncated: 20 bytes"),
    "truncated": (lambda d: d[:-1], "size", "truncated"),
    "trailing": (lambda d: d + b"\0\0", "size", "2 trailing bytes"),
    "huge size": (
        lambda d: d[:16] + struct.pack("<Q", 1 << 62) + d[24:],
        "size",
        "larger than the file",
    ),
    "altered stablehlo": (_flip(-1000), "checksum", "altered or corrupted"),
    "altered metadata": (_flip(50), "checksum", "altered or corrupted"),
    "wrong crc": (lambda d: _rewrite(d, crc=False), "checksum", "altered or corrupted"),
    "newer format": (
        lambda d: _rewrite(d, version=2),
        "version",
        "written by a newer cyxla: format 2, this reads up to 1; upgrade",
    ),
    "format 0": (lambda d: _rewrite(d, version=0), "version", "format 0 does not exist"),
    "reserved": (lambda d: _rewrite(d, reserved=7), "reserved", "reserved header field is 7"),
    "no name": (_replace("name _structured\n", ""), "metadata", "required key(s) name"),
    "no version": (
        _edit_metadata(lambda t: "".join(ln for ln in t.splitlines(True) if "cyxla_v" not in ln)),
        "metadata",
        "required key(s) cyxla_version",
    ),
    "line without space": (_replace("name _structured\n", "name\n"), "metadata", "line 1"),
    "CR": (_replace("platform cpu\n", "platform cpu\r\n"), "metadata", "line 2"),
    "no final LF": (_edit_metadata(lambda t: t[:-1]), "metadata", "does not end with LF"),
    "not UTF-8": (
        lambda d: _rewrite(d, metadata=_metadata(d).encode() + b"key \xff\n"),
        "metadata",
        "not UTF-8",
    ),
    "twice": (_replace("platform cpu\n", "platform cpu\nplatform cpu\n"), "metadata", "twice"),
    "platform": (_replace("platform cpu", "platform abacus"), "metadata", "unknown platform"),
    "element type": (_replace("input F32", "input F33"), "metadata", "unknown element type"),
    "negative": (_replace("input F32 [4,8]", "input F32 [4,-8]"), "metadata", "not 'ELEMENT"),
    "fraction": (_replace("input F32 [4,8]", "input F32 [4,8.5]"), "metadata", "not 'ELEMENT"),
    "spaces": (_replace("input F32 [4,8]", "input F32 [4, 8]"), "metadata", "not 'ELEMENT"),
    "too large": (
        _replace("input F32 [4,8]", f"input F32 [4,{1 << 63}]"),
        "metadata",
        "larger than 2**63",
    ),
    "donated_output of no output": (
        _replace("cyxla_version", "donated_output 5\ncyxla_version"),
        "metadata",
        "donated_output '5' is not the index of one of the 5 outputs",
    ),
    "donated_output not a number": (
        _replace("cyxla_version", "donated_output -1\ncyxla_version"),
        "metadata",
        "donated_output '-1' is not the index",
    ),
    "donated_output twice": (
        _replace("cyxla_version", "donated_output 1\ndonated_output 1\ncyxla_version"),
        "metadata",
        "donated_output 1 appears twice",
    ),
    "tree not JSON": (_replace("output_tree {", "output_tree {{"), "metadata", "not JSON"),
    "tree not a structure": (
        _edit_metadata(lambda t: t[: t.index("output_tree ")] + "output_tree 42\n"),
        "metadata",
        "the output_tree is not an output structure",
    ),
    "tree of other outputs": (
        _replace("output F32 []\n", ""),
        "metadata",
        "output_tree has 5 leaves, but the file 4 outputs",
    ),
    "tree deep": (
        _edit_metadata(
            lambda t: t[: t.index("output_tree ")] + "output_tree " + "[" * 600 + "]" * 600 + "\n"
        ),
        "metadata",
        "nests deeper",
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


def test_unknown_keys_are_ignored_and_a_file_without_tree_is_flat(saved: Path) -> None:
    def edit(text: str) -> str:
        kept = [ln for ln in text.splitlines(True) if not ln.startswith("output_tree ")]
        return "".join(kept) + "written_by a later cyxla with spaces\n"

    other = saved.with_name("later.cyxla")
    other.write_bytes(_edit_metadata(edit)(saved.read_bytes()))
    loaded = cx.load_program(other)
    assert loaded == cx.load_program(saved)
    assert loaded.output_tree == jax.tree.structure((0,) * 5)
