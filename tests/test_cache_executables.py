"""Compiled executables in the disk cache (src/cache/executable_key.cpp,
src/loading/load_or_compile.cpp): hits and misses across processes, what the key holds
(the program, its options, the plugin build), and entries that hold another program or
hostile fields. The store itself is tested in test_cache_store.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx
from cyxla._jax.compile_options import compile_options
from cyxla._run import plugins as _plugins

from program_file_writer import pack, parts
from support import (
    cache_entries,
    check_scaled,
    encode_entry,
    entry_binding,
    last_json,
    plugin_library,
    read_entry,
    run_python,
    scaled_program,
    shaped,
    tanh_program,
    tanh_x,
    write_entry,
)

pytestmark = pytest.mark.usefixtures("no_stray_cache_warnings")


#: A program lowered and compiled in a fresh process. With BARRIER set, the process
#: waits before storing its entry until one other process has got as far, so both
#: compiled the program (both missed) and both write at once.
_CHILD = """
import json, os, time
import numpy as np
import jax, jax.numpy as jnp
import cyxla as cx

def affine(x, w):
    return jnp.tanh(x @ w) + 1.0

f32 = jnp.float32
program = cx.lower(affine, [jax.ShapeDtypeStruct((4, 8), f32), jax.ShapeDtypeStruct((8, 8), f32)])
barrier = os.environ.get("BARRIER")
if barrier:
    # Both processes start compile_program together, with the plugin loaded: both look
    # the program up before either has stored it, compile it, and write at once.
    cx.initialize()
    open(os.path.join(barrier, f"at-compile-{os.getpid()}"), "w").close()
    deadline = time.monotonic() + 120
    while sum(n.startswith("at-compile-") for n in os.listdir(barrier)) < 2:
        assert time.monotonic() < deadline, "the other process never came"
        time.sleep(0.001)

x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
w = np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8)
executable, stats = cx.compile_program(program)
(out,) = executable.run([x, w])
right = bool(np.allclose(out, np.tanh(x @ w) + 1.0, atol=1e-5))
print(json.dumps({"hit": stats.cache_hit, "error": stats.cache_error, "right": right,
                  "library": cx.library_identity()["path"]}))
"""


def _child(cache: Path, **env: str) -> dict[str, Any]:
    return last_json(run_python(_CHILD, env={"CYXLA_CACHE_DIR": str(cache), **env}))


# ------------------------------------------------------------------ hits and misses


def test_hit_in_process_reports_its_statistics(cache: Path) -> None:
    program = scaled_program()
    executable, miss = cx.compile_program(program)
    check_scaled(executable)
    assert (miss.cache_hit, miss.cache_error) == (False, None)
    assert miss.compile_seconds > 0
    executable, hit = cx.compile_program(program)
    check_scaled(executable)
    assert (hit.cache_hit, hit.cache_error, hit.compile_seconds) == (True, None, 0.0)
    assert hit.load_seconds > 0


def test_compile_options_are_part_of_the_key(cache: Path) -> None:
    program = scaled_program()
    cx.compile_program(program)
    _, stats = cx.compile_program(program, options={"xla_backend_optimization_level": 1})
    assert not stats.cache_hit
    _, stats = cx.compile_program(program, options={"xla_backend_optimization_level": 1})
    assert stats.cache_hit
    assert len(cache_entries(cache)) == 2


def test_a_program_from_a_file_compiles_with_the_files_options(cache: Path, tmp_path: Path) -> None:
    """compile_program takes a loaded file's compile-options section, as the native loader
    does: the options are part of the key, so the statistics show which were used."""
    program = scaled_program()
    cx.compile_program(program)  # stored under cyxla's default options
    path = tmp_path / "program.cyxla"
    program.save(path)
    _, stats = cx.compile_program(cx.load_program(path))
    assert stats.cache_hit  # the file holds the default options
    other = compile_options({"xla_backend_optimization_level": 1})
    metadata, stablehlo, _ = parts(path.read_bytes())
    path.write_bytes(pack(metadata, stablehlo, other))
    loaded = cx.load_program(path)
    executable, stats = cx.compile_program(loaded)
    assert not stats.cache_hit  # the file's options: another key
    check_scaled(executable)
    _, stats = cx.compile_program(program, options={"xla_backend_optimization_level": 1})
    assert stats.cache_hit  # the same options, given by name
    _, stats = cx.compile_program(loaded, options={"xla_backend_optimization_level": 1})
    assert stats.cache_hit  # options given replace the file's


def test_two_processes_compiling_the_same_program_at_once(cache: Path, tmp_path: Path) -> None:
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {**os.environ, "CYXLA_CACHE_DIR": str(cache), "BARRIER": str(barrier)}
    code = textwrap.dedent(_CHILD)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outcomes = []
    for child in children:
        stdout, stderr = child.communicate(timeout=300)
        outcomes.append(
            last_json(subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr))
        )
    # Both met at the barrier, then compiled and wrote at once (a hit is possible only if
    # one process compiled before the other looked, which the 20 ms compile makes rare).
    assert len(list(barrier.iterdir())) == 2
    assert all(o["error"] is None and o["right"] for o in outcomes)
    assert not all(o["hit"] for o in outcomes)
    assert len(cache_entries(cache)) == 1
    assert not [p for p in (cache / "executables").iterdir() if p.suffix != ".entry"]
    third = _child(cache)
    assert third == {**third, "hit": True, "error": None, "right": True}


# ------------------------------------------------------------------ the plugin build


def test_library_identity_describes_the_loaded_plugin() -> None:
    loaded = cx.initialize()
    identity = cx.library_identity()
    info = os.stat(loaded.library)
    assert identity == {
        "path": loaded.library,
        "size": info.st_size,
        "mtime_ns": info.st_mtime_ns,
        "pjrt_version": list(loaded.plugin.version),
        "xla_version": loaded.plugin.attributes.get("xla_version"),
    }


def test_another_plugin_build_does_not_hit(cache: Path, tmp_path: Path) -> None:
    """A copy of the plugin is another build to the cache until its identity matches."""
    original = _plugins.entry_for("cpu").library_path()
    copy = tmp_path / "copy" / "pjrt_c_api_cpu_plugin.so"
    copy.parent.mkdir()
    shutil.copy2(original, copy)
    with_copy = {"CYXLA_PJRT_PLUGIN": str(copy), "CYXLA_PLATFORM": "cpu"}

    try:
        first = _child(cache, **with_copy)
        assert (first["hit"], first["right"]) == (False, True)
        assert Path(first["library"]) == copy.resolve()
        assert _child(cache, **with_copy)["hit"]
        assert not _child(cache)["hit"]  # the installed library: another identity
        os.utime(copy, ns=(time.time_ns(), time.time_ns()))  # as if rebuilt in place
        assert not _child(cache, **with_copy)["hit"]
        assert len(cache_entries(cache)) == 3
    finally:
        copy.unlink()  # 200 MB: not left for pytest's kept temporary directories


_MOVED_PLUGIN = """
import json, os, sys
import jax, jax.numpy as jnp, numpy as np
import cyxla as cx
library = sys.argv[1]
cx.initialize(library, platform="cpu")
os.unlink(library)  # the library this process runs is gone from its path
program = cx.lower(jnp.sin, [jax.ShapeDtypeStruct((3,), jnp.float32)])
executable, stats = cx.compile_program(program)
x = np.array([0.5, 1.0, 2.0], np.float32)
right = bool(np.allclose(executable.run([x])[0], np.sin(x)))
print(json.dumps({"hit": stats.cache_hit, "error": stats.cache_error, "right": right}))
"""


def test_plugin_library_that_moved_is_not_identified(cache: Path, tmp_path: Path) -> None:
    """No key can be trusted, so the program is compiled and nothing is stored."""
    library = tmp_path / "plugin.so"
    shutil.copyfile(plugin_library(), library)
    result = subprocess.run(
        [sys.executable, "-c", _MOVED_PLUGIN, str(library)],
        env={**os.environ, "CYXLA_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    outcome = last_json(result)
    assert (outcome["hit"], outcome["right"]) == (False, True)
    assert outcome["error"] == (
        f"cannot identify the plugin library {library}: it is no longer there"
    )
    assert cache_entries(cache) == []


# ------------------------------------------------------------------ another program's entries


#: Another program's entry in place of this one's, and what gives it away.
_ANOTHER_PROGRAMS = {
    "copied as it is": "for another key",
    "with its key rewritten": "binding does not match",
    # A faulty writer's entry under the wrong key: the program digest recorded is compared
    # with the program's.
    "with its key and binding rewritten": "was compiled from another program or with other",
}


@pytest.mark.parametrize("how", list(_ANOTHER_PROGRAMS))
def test_entry_of_another_program_is_a_miss(cache: Path, how: str) -> None:
    doubled, tripled = tanh_program(2.0), tanh_program(3.0)
    cx.compile_program(doubled)
    (doubled_entry,) = cache_entries(cache)
    cx.compile_program(tripled)
    (tripled_entry,) = [e for e in cache_entries(cache) if e != doubled_entry]
    header, payload = read_entry(doubled_entry)
    if how != "copied as it is":
        header["key"] = read_entry(tripled_entry)[0]["key"]
    if how == "with its key and binding rewritten":
        header["binding"] = entry_binding("executables", header["key"], payload)
    write_entry(tripled_entry, header, payload)
    executable, stats = cx.compile_program(tripled)
    assert not stats.cache_hit
    assert stats.cache_error is not None and _ANOTHER_PROGRAMS[how] in stats.cache_error
    np.testing.assert_allclose(executable.run([tanh_x()])[0], np.tanh(tanh_x()) * 3.0, rtol=1e-5)
    _, stats = cx.compile_program(tripled)
    assert stats.cache_hit  # replaced


def test_cached_executable_with_other_outputs_is_not_used(cache: Path) -> None:
    """An entry that passes every check but holds another program's code (as a buggy or
    altered build could write) is caught by the outputs of what the plugin loaded."""
    inputs = [shaped(4, 8), shaped(8, 8)]
    product = cx.lower(lambda x, w: x @ w, inputs)  # f32[4,8]
    total = cx.lower(lambda x, w: jnp.sum(x @ w), inputs)  # f32[]
    cx.compile_program(product)
    (product_entry,) = cache_entries(cache)
    cx.compile_program(total)
    (total_entry,) = [e for e in cache_entries(cache) if e != product_entry]
    header, _ = read_entry(total_entry)
    header["payload_length"] = len(read_entry(product_entry)[1])
    header["binding"] = entry_binding("executables", header["key"], read_entry(product_entry)[1])
    total_entry.write_bytes(encode_entry(header, read_entry(product_entry)[1]))

    executable, stats = cx.compile_program(total)
    assert not stats.cache_hit
    assert stats.cache_error is not None
    assert "the output specs are (f32[]), but the compiled program returns (f32[4,8])" in (
        stats.cache_error
    )
    x = np.ones((4, 8), np.float32)
    (out,) = executable.run([x, np.ones((8, 8), np.float32)])
    assert out.shape == () and out == pytest.approx(256.0)
    _, stats = cx.compile_program(total)  # the entry was replaced by the right one
    assert (stats.cache_hit, stats.cache_error) == (True, None)


#: Executable-entry header fields with a valid checksum that must read as a miss.
_HOSTILE_EXECUTABLES = {
    "deep nesting": ("name", "[" * 100_000 + "]" * 100_000),
    "an Infinity": ("name", "Infinity"),
    "a huge number": ("name", "1e400"),
    "a payload length that is a bool": ("payload_length", "true"),
    "a key of another type": ("key", "1"),
    "a signature that is a list": ("signature", "[1]"),
    "a signature without aliases": ("signature", '{"parameters": [[11, [4, 8]]]}'),
    "a negative dimension in the signature": (
        "signature",
        '{"aliases": [], "parameters": [[11, [-4, 8]]]}',
    ),
    "a float in the signature": ("signature", '{"aliases": [], "parameters": [[11.0, [4, 8]]]}'),
    "a signature of another parameter": (
        "signature",
        '{"aliases": [], "parameters": [[4, [4, 8]]]}',
    ),
    # An output written into a parameter the executable does not have: the plugin's
    # parameter count refuses it (it would fail every call, and never be replaced).
    "a signature with a donated parameter too many": (
        "signature",
        '{"aliases": [[0, 1]], "parameters": [[11, [4, 8]], [11, [4, 8]]]}',
    ),
    # And the reverse: a program that writes in place, recorded as one that does not.
    "a signature without its donated parameter": (
        "signature",
        '{"aliases": [], "parameters": [[11, [256, 256]]]}',
    ),
}


@pytest.mark.parametrize("case", sorted(_HOSTILE_EXECUTABLES))
def test_hostile_executable_entry_is_a_miss(cache: Path, case: str) -> None:
    field, text = _HOSTILE_EXECUTABLES[case]
    program = tanh_program()
    x = tanh_x()
    if "donated parameter" in case and "256" in text:  # a program writing in place
        program = cx.lower(lambda v: jnp.tanh(v) * 2.0, [shaped(256, 256)])
        x = np.linspace(-1, 1, 256 * 256, dtype=np.float32).reshape(256, 256)
    cx.compile_program(program)
    (entry,) = cache_entries(cache, "executables")
    header, payload = read_entry(entry)
    header[field] = "@@HOSTILE@@"
    raw = json.dumps(header, sort_keys=True).replace('"@@HOSTILE@@"', text)
    write_entry(entry, raw.encode(), payload)
    executable, stats = cx.compile_program(program)
    assert not stats.cache_hit and stats.cache_error is not None
    np.testing.assert_allclose(executable.run([x])[0], np.tanh(x) * 2.0, rtol=1e-5)
    executable, again = cx.compile_program(program)
    assert again.cache_hit  # replaced
    np.testing.assert_allclose(executable.run([x])[0], np.tanh(x) * 2.0, rtol=1e-5)
