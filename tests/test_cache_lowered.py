"""Lowered programs in the disk cache (cyxla._program.cached: store_lowered, load_lowered) and
the keys callers store them under (cyxla._lower.cache_key)."""

from __future__ import annotations

import collections
import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import cyxla as cx
from cyxla.__main__ import main as cli
from cyxla._cache import store
from cyxla._lower import cache_key as cache_keys

from program_file_writer import parts, replace_metadata
from support import (
    cache_entries,
    encode_entry,
    entry_binding,
    entry_path,
    flip,
    last_json,
    read_entry,
    run_python,
    scaled_program,
    shaped,
    split_entry,
    tanh_program,
    write_entry,
)

pytestmark = pytest.mark.usefixtures("no_stray_cache_warnings")


# ------------------------------------------------------------------ keys


def test_cache_key_changes_when_any_part_changes(
    monkeypatch: pytest.MonkeyPatch, x64: None
) -> None:
    missing = "cyxla-test-no-such-distribution"
    base = cx.cache_key("model", shaped(4, 8), {"layers": 3})
    assert base == cx.cache_key("model", shaped(4, 8), {"layers": 3})
    keys = [
        base,
        cx.cache_key("model2", shaped(4, 8), {"layers": 3}),
        cx.cache_key("model", shaped(4, 9), {"layers": 3}),
        cx.cache_key("model", shaped(4, 8, dtype=np.float64), {"layers": 3}),
        cx.cache_key("model", shaped(4, 8), {"layers": 4}),
        cx.cache_key("model", shaped(4, 8), {"layers": 3}, distributions=["numpy"]),
        cx.cache_key("model", shaped(4, 8), {"layers": 3}, distributions=[missing]),
    ]
    assert cache_keys._distribution_version(missing) is None
    assert keys[-1] == cx.cache_key("model", shaped(4, 8), {"layers": 3}, distributions=[missing])
    jax.config.update("jax_enable_x64", False)
    keys.append(cx.cache_key("model", shaped(4, 8), {"layers": 3}))
    jax.config.update("jax_enable_x64", True)
    assert len(set(keys)) == len(keys)

    real = cache_keys._distribution_version
    for name in ("jax", "jaxlib", "numpy"):
        monkeypatch.setattr(
            cache_keys,
            "_distribution_version",
            lambda d, name=name: "9.9" if d == name else real(d),
        )
        keys.append(cx.cache_key("model", shaped(4, 8), {"layers": 3}, distributions=["numpy"]))
    monkeypatch.setattr(cache_keys, "_distribution_version", real)
    monkeypatch.setattr(cache_keys, "cyxla_version", lambda: "9.9")
    keys.append(cx.cache_key("model", shaped(4, 8), {"layers": 3}))
    assert len(set(keys)) == len(keys)


def test_cache_key_refuses_parts_without_a_stable_text() -> None:
    with pytest.raises(TypeError, match="has no stable text"):
        cx.cache_key(object())
    with pytest.raises(TypeError, match="string keys"):
        cx.cache_key({1: "one"})
    # Values of the same text but another type are other keys.
    assert (
        len(
            {
                cx.cache_key(1),
                cx.cache_key("1"),
                cx.cache_key(1.0),
                cx.cache_key(b"1"),
                cx.cache_key(True),
                cx.cache_key(np.int32(1)),
            }
        )
        == 5
    )  # np.int32(1) is 1


def _pairs() -> list[tuple[str, Any, Any]]:
    array = np.zeros((4, 8), np.float32)
    return [
        ("complex vs dict", 1 + 0j, {"complex": [1.0, 0.0]}),
        ("complex vs list", 1 + 2j, [1.0, 2.0]),
        ("bytes vs its digest", b"x", hashlib.sha256(b"x").hexdigest()),
        ("bytes vs dict", b"x", {"bytes": hashlib.sha256(b"x").hexdigest()}),
        ("bytes vs str", b"x", "x"),
        ("dtype vs str", np.dtype(np.float32), "<f4"),
        ("dtype vs dict", np.dtype(np.float32), {"dtype": "<f4"}),
        ("dtype vs its name", np.dtype(np.float32), "float32"),
        ("tuple vs list", (1, 2), [1, 2]),
        ("array vs dict", array, {"shape": [4, 8], "dtype": "float32"}),
        ("array vs list", array, [[4, 8], "float32"]),
        ("spec vs dict", shaped(4, 8), {"shape": [4, 8], "dtype": "float32"}),
        ("None vs str", None, "null"),
        ("int vs str", 1, "1"),
        ("int vs float", 1, 1.0),
        ("bool vs int", True, 1),
        ("nested", [{"a": 1 + 0j}], [{"a": {"complex": [1.0, 0.0]}}]),
        ("nested tuples", {"a": (b"x", np.dtype(np.int8))}, {"a": ["x", "|i1"]}),
        ("dict vs list of pairs", {"a": 1}, [["a", 1]]),
        ("float inf vs str", float("inf"), "inf"),
        ("complex vs its conjugate", 1 + 2j, 1 - 2j),
        ("float32 vs float64", np.dtype(np.float32), np.dtype(np.float64)),
        ("bfloat16 vs float8", np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3fn)),
    ]


@pytest.mark.parametrize("name", [name for name, _, _ in _pairs()])
def test_cache_key_tells_types_apart(name: str) -> None:
    ((_, one, other),) = [pair for pair in _pairs() if pair[0] == name]
    assert cx.cache_key(one) != cx.cache_key(other)
    assert cx.cache_key(one) == cx.cache_key(one)


def test_cache_key_encodings_are_pairwise_distinct() -> None:
    values = [v for _, one, other in _pairs() for v in (one, other)]
    keys = {}
    for value in values:
        keys.setdefault(cx.cache_key(value), []).append(repr(value))
    # Equal only where the values are equal: np.float32 arrays and specs of one shape.
    assert all(len(set(reprs)) == 1 or "array" in reprs[0] for reprs in keys.values()), keys


def test_cache_key_keeps_equal_values_equal() -> None:
    assert cx.cache_key({"b": 1, "a": 2}) == cx.cache_key({"a": 2, "b": 1})
    assert cx.cache_key(np.float32(0.5)) == cx.cache_key(0.5)
    assert cx.cache_key(np.zeros((4, 8), np.float32)) == cx.cache_key(shaped(4, 8))
    assert cx.cache_key(float("nan")) == cx.cache_key(float("nan"))
    # Another sequence keys as the list of its items (a tuple stays apart from both).
    assert cx.cache_key(range(3)) == cx.cache_key([0, 1, 2]) != cx.cache_key((0, 1, 2))


# ------------------------------------------------------------------ lowered programs


def _structured(x: jax.Array, w: jax.Array) -> dict[str, Any]:
    y = x @ w
    return {
        "sum": jnp.sum(y),
        "parts": (y, [x * 2, None]),
        "ordered": collections.OrderedDict(b=y + 1, a=w),
    }


def _structured_program() -> cx.Program:
    return cx.lower(_structured, [shaped(2, 3, dtype=ml_dtypes.bfloat16), shaped(3, 3)])


def test_lowered_program_round_trips(cache: Path) -> None:
    program = _structured_program()
    key = cx.cache_key("structured")
    assert cx.load_lowered(key) is None
    assert cx.store_lowered(key, program)
    loaded = cx.load_lowered(key)
    assert loaded is not None
    assert loaded == program  # every field but the output tree
    assert loaded.output_tree == program.output_tree
    assert loaded.inputs[0].dtype == np.dtype(ml_dtypes.bfloat16)

    x = np.arange(6, dtype=np.float32).reshape(2, 3).astype(ml_dtypes.bfloat16)
    w = np.eye(3, dtype=np.float32)
    executable, _ = cx.compile_program(loaded)
    result = jax.tree.unflatten(loaded.output_tree, executable.run([x, w]))
    assert result["parts"][1][1] is None
    assert list(result["ordered"]) == ["b", "a"]
    np.testing.assert_allclose(result["parts"][0], x.astype(np.float32), rtol=1e-2)


def test_lowered_program_in_another_process(cache: Path) -> None:
    key_parts = ("affine-model", shaped(4, 8), shaped(8, 8))
    cx.store_lowered(cx.cache_key(*key_parts), scaled_program())
    result = run_python(
        """
        import json
        import jax, numpy as np
        import cyxla as cx

        spec = lambda *shape: jax.ShapeDtypeStruct(shape, np.dtype(np.float32))
        program = cx.load_lowered(cx.cache_key("affine-model", spec(4, 8), spec(8, 8)))
        x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
        w = np.linspace(-0.5, 0.5, 64, dtype=np.float32).reshape(8, 8)
        (out,) = cx.compile_program(program)[0].run([x, w])
        print(json.dumps({"right": bool(np.allclose(out, np.tanh(x @ w) * 2, atol=1e-5)),
                          "missing": cx.load_lowered(cx.cache_key("other")) is None}))
        """,
        env={"CYXLA_CACHE_DIR": str(cache)},
    )
    assert last_json(result) == {"right": True, "missing": True}


def test_a_lowered_entry_holds_the_programs_file(cache: Path, tmp_path: Path) -> None:
    program = _structured_program()
    cx.store_lowered("file", program)
    (entry,) = cache_entries(cache, "programs")
    header, payload = read_entry(entry)
    assert header["name"] == program.name
    program.save(tmp_path / "structured.cyxla")
    assert payload == (tmp_path / "structured.cyxla").read_bytes()


def test_store_lowered_refuses_outputs_it_cannot_rebuild(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A namedtuple, dict keys of a kind it cannot store, and (the guard behind the
    encoding) a structure that would come back different: refused, nothing stored."""
    from cyxla._program import output_tree as _output_tree

    pair = collections.namedtuple("pair", "a b")
    refused = {
        "cannot keep": cx.lower(lambda x: pair(x, x + 1), [shaped(2)]),
        "dict key that cannot be stored": cx.lower(lambda x: {(1, 2): x, (3, 4): x}, [shaped(2)]),
    }
    for message, program in refused.items():
        with pytest.raises(cx.UnsupportedProgramError, match=message):
            cx.store_lowered("refused", program)
    with monkeypatch.context() as patched:
        patched.setattr(_output_tree, "_encode", lambda tree, writer: {"tuple": ["*"]})
        with pytest.raises(cx.UnsupportedProgramError, match=r"output structure .* cannot be"):
            cx.store_lowered("lossy", _structured_program())
    assert not (cache / "programs").exists()  # (a first plugin load may store its scan)
    with pytest.raises(TypeError, match="non-empty str"):
        cx.load_lowered("")
    # int keys can be kept, and come back as ints.
    program = cx.lower(lambda x: {2: x, 1: x + 1}, [shaped(2)])
    assert cx.store_lowered("int-keys", program)
    loaded = cx.load_lowered("int-keys")
    assert loaded is not None and loaded.output_tree == program.output_tree


# ------------------------------------------------------------------ entries that do not load


#: Entries the store refuses: the lowered program is a miss, with the store's warning,
#: until it is stored again.
_REFUSED: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "a flipped bit": (flip(-5), "corrupted"),
    "an older format": (lambda d: encode_entry(*split_entry(d), version=1), "cache format 1"),
}


@pytest.mark.parametrize("case", list(_REFUSED))
def test_refused_lowered_entry_gives_none_and_is_replaced(cache: Path, case: str) -> None:
    change, message = _REFUSED[case]
    program = scaled_program()
    cx.store_lowered("refused", program)
    (entry,) = cache_entries(cache, "programs")
    entry.write_bytes(change(entry.read_bytes()))
    assert store.FORMAT_VERSION >= 2
    with pytest.warns(UserWarning, match=message):
        assert cx.load_lowered("refused") is None
    assert cx.store_lowered("refused", program)
    assert cx.load_lowered("refused") == program


@pytest.mark.parametrize(
    ("how", "message"),
    [("copied", "for another key"), ("with its key rewritten", "binding does not match")],
)
def test_lowered_entry_under_another_key_is_a_miss(cache: Path, how: str, message: str) -> None:
    """A copy under another key is caught by the key its header records; one whose header
    was rewritten to match (its checksum recomputed), by its binding."""
    cx.store_lowered("doubled", tanh_program(2.0))
    cx.store_lowered("tripled", tanh_program(3.0))
    header, payload = read_entry(entry_path(cache, "programs", "doubled"))
    if how != "copied":
        header["key"] = "tripled"
    write_entry(entry_path(cache, "programs", "tripled"), header, payload)
    with pytest.warns(UserWarning, match=message):
        assert cx.load_lowered("tripled") is None


def _with_payload(entry: Path, change: Callable[[bytes], bytes]) -> None:
    """Changes an entry's payload, its header (length, binding) and checksum made right
    again: an entry that the store hands on."""
    header, payload = read_entry(entry)
    payload = change(payload)
    header["payload_length"] = len(payload)
    header["binding"] = entry_binding(header["kind"], header["key"], payload)
    entry.write_bytes(encode_entry(header, payload))


#: Program-entry payloads that the store hands on and the program-file reader refuses
#: (tests/test_program_file.py has every refusal), with a part of the warning.
_UNREADABLE_PROGRAMS: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "an altered program file": (flip(-3), "altered or corrupted"),
    "an unknown platform": (
        lambda d: replace_metadata(d, "platform cpu", "platform abacus"),
        "unknown platform 'abacus'",
    ),
    "the StableHLO alone (as entries once held it)": (
        lambda d: parts(d)[1],
        "not a cyxla program file",
    ),
}


@pytest.mark.parametrize("case", sorted(_UNREADABLE_PROGRAMS))
def test_unreadable_lowered_entry_is_a_miss(
    cache: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    change, message = _UNREADABLE_PROGRAMS[case]
    cx.store_lowered("unreadable", tanh_program())
    (entry,) = cache_entries(cache, "programs")
    _with_payload(entry, change)
    warning = f"cyxla cache: ignored an entry: {re.escape(str(entry))}: .*{re.escape(message)}"
    with pytest.warns(UserWarning, match=warning):
        assert cx.load_lowered("unreadable") is None
    assert cli(["cache", "info"]) == 0
    # Listed, as one program (the process's first plugin load may have kept its scan).
    rows = capsys.readouterr().out.splitlines()
    assert len([row for row in rows if row.lstrip().startswith("program ")]) == 1
    assert cx.store_lowered("unreadable", tanh_program())  # and it is replaced
    assert cx.load_lowered("unreadable") == tanh_program()


def test_lowered_programs_in_a_refused_cache(cache: Path) -> None:
    cx.store_lowered("refused", scaled_program())
    cache.chmod(0o777)
    try:
        with pytest.warns(UserWarning, match="can be written by other users"):
            assert not cx.store_lowered("refused", scaled_program())
        with pytest.warns(UserWarning, match="can be written by other users"):
            assert cx.load_lowered("refused") is None
    finally:
        cache.chmod(0o700)
    assert cx.load_lowered("refused") == scaled_program()
