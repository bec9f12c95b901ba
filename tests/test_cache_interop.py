"""Python and the native loader (cyxla_load_program) share one disk cache: the same
directory, keys and entry files, so a program compiled in either language is a hit in the
other. (The store itself, which both reach, is tested in test_cache_store.py.)"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx
from cyxla._cache import store

from support import (
    OK,
    OPTION_BOOL,
    Api,
    ClientOption,
    encode_entry,
    entry_path,
    last_json,
    load_from_c,
    mlp,
    mlp_inputs,
    mlp_program,
    run_from_c,
    run_python,
    split_entry,
    table,
)

# ------------------------------------------------------------------ helpers

TESTS = Path(__file__).parent


def load_and_run(api: Api, path: Path, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """cyxla_load_program, then one run through get_spec and execute; the outputs."""
    status, handle, error = load_from_c(path, api)
    assert status == OK, error.message
    try:
        return run_from_c(handle, arrays, api)
    finally:
        api.release_program(handle)


#: A fresh process that never compiles in Python: it opens the runtime through libcyxla's
#: own export, as a C program does, loads the program file and prints its outputs.
_NATIVE_CHILD = """
import ctypes, json, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
import cyxla as cx
from support import Api, ClientOption, load_from_c, mlp_inputs, open_runtime_from_c, run_from_c
library = ctypes.CDLL(cx.get_library())
library.cyxla_get_api.restype = ctypes.POINTER(Api)
api = library.cyxla_get_api().contents
open_runtime_from_c(api, *(ClientOption(n, t, None, i, 0.0) for n, t, i in {options!r}))
status, handle, error = load_from_c(Path({path!r}), api)
assert status == 0, error.message
(out,) = run_from_c(handle, mlp_inputs(), api)
print(json.dumps({{"out": out.tolist()}}))
"""


def native_child(path: Path, cache: Path, *options: ClientOption) -> dict[str, Any]:
    """What `_NATIVE_CHILD` prints; `options` (int and bool ones) are the client options
    it names."""
    named = [(o.name, o.type, o.int64_value) for o in options]
    result = run_python(
        _NATIVE_CHILD.format(tests=str(TESTS), path=str(path), options=named),
        env={"CYXLA_CACHE_DIR": str(cache)},
    )
    return last_json(result)


#: jax.jit's XLA is jaxlib's; where that is newer than the plugin's (jax 0.12), values
#: near zero may differ in their last bit (1.2e-7 seen).
JIT_ATOL = 1e-6


def expected() -> np.ndarray:
    return np.asarray(jax.jit(mlp)(*mlp_inputs()))


def entry_file(cache: Path, key: str) -> Path:
    return entry_path(cache, "executables", key)


def loaded_entry(cache: Path, path: Path, arrays: list[np.ndarray] | None = None) -> Path:
    """Loads the program file at `path` with the native loader in this process and runs it
    on `arrays` (the MLP's inputs by default); the entry that the load stored."""
    before = cache_files(cache)
    load_and_run(table(), path, arrays or mlp_inputs())
    (entry,) = cache_files(cache) - before
    return entry


def cache_files(cache: Path, kind: str = "executables") -> set[Path]:
    """The files of `kind` in the cache (Python's start-up may store entries of others)."""
    directory = cache / kind
    return set(directory.iterdir()) if directory.is_dir() else set()


@pytest.fixture(scope="module")
def program() -> cx.Program:
    cx.initialize(platform="cpu")
    return mlp_program()


def native_load(path: Path) -> None:
    """Loads the program file with the native loader in this process (on Python's
    runtime) and checks its outputs against jax.jit."""
    (out,) = load_and_run(table(), path, mlp_inputs())
    np.testing.assert_allclose(out.reshape(4, 8), expected(), rtol=1e-6, atol=JIT_ATOL)


# ------------------------------------------------------------------ client options


def test_an_option_c_names_replaces_the_default_and_gives_another_key(
    program: cx.Program, tmp_path: Path, cache: Path
) -> None:
    path = tmp_path / "mlp.cyxla"
    program.save(path)
    cx.compile_program(program)  # Python's client: the defaults
    assert len(cache_files(cache)) == 1
    asynchronous = ClientOption(b"asynchronous", OPTION_BOOL, None, 1, 0.0)
    child = native_child(path, cache, asynchronous)
    np.testing.assert_allclose(child["out"], expected().ravel(), rtol=1e-6, atol=JIT_ATOL)
    assert len(cache_files(cache)) == 2  # another client, another key


# ------------------------------------------------------------------ across languages


def test_a_program_compiled_in_python_is_a_hit_for_the_native_loader(
    program: cx.Program, tmp_path: Path, cache: Path
) -> None:
    _, stats = cx.compile_program(program)
    assert not stats.cache_hit, stats
    path = tmp_path / "mlp.cyxla"
    program.save(path)
    before = cache_files(cache)
    (entry,) = before
    long_ago = time.time() - 100_000
    os.utime(entry, (long_ago, long_ago))
    inode = entry.stat().st_ino

    child = native_child(path, cache)

    np.testing.assert_allclose(
        np.reshape(child["out"], (4, 8)), expected(), rtol=1e-6, atol=JIT_ATOL
    )
    # A hit: the entry was read (its time moved, as a read marks the last use) and not
    # replaced (a store renames a new file into place), and nothing else was written.
    assert entry.stat().st_ino == inode
    assert entry.stat().st_mtime > long_ago + 50_000
    assert cache_files(cache) == before


def test_a_program_the_native_loader_compiled_is_a_hit_for_python(
    program: cx.Program, tmp_path: Path, cache: Path
) -> None:
    path = tmp_path / "mlp.cyxla"
    program.save(path)
    child = native_child(path, cache)
    np.testing.assert_allclose(
        np.reshape(child["out"], (4, 8)), expected(), rtol=1e-6, atol=JIT_ATOL
    )
    (entry,) = cache_files(cache)
    header, payload = split_entry(entry.read_bytes())
    assert (header["name"], header["platform"]) == ("mlp", "cpu")
    assert header["cyxla_version"] == cx.__version__
    assert header["payload_length"] == len(payload)

    code = f"""
import json
import numpy as np
import cyxla as cx
program = cx.load_program({str(path)!r})
executable, stats = cx.compile_program(program)
x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
w = np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8)
(out,) = executable.run([x, w])
print(json.dumps({{"hit": stats.cache_hit, "error": stats.cache_error, "out": out.tolist()}}))
"""
    result = run_python(code, env={"CYXLA_CACHE_DIR": str(cache)})
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["hit"] and outcome["error"] is None, outcome
    np.testing.assert_allclose(
        np.reshape(outcome["out"], (4, 8)), expected(), rtol=1e-6, atol=JIT_ATOL
    )
    assert cache_files(cache) == {entry}


def test_outputs_written_in_place_are_used_by_both(tmp_path: Path, cache: Path) -> None:
    # 256x256 float32 is 256 KiB: lower adds a donated parameter for it.
    def double_sin(x: jax.Array) -> jax.Array:
        return jnp.sin(x) * 2

    cx.initialize(platform="cpu")
    program = cx.lower(double_sin, [jax.ShapeDtypeStruct((256, 256), jnp.float32)])
    assert program.donated_outputs == (0,)
    path = tmp_path / "in_place.cyxla"
    program.save(path)
    x = np.random.default_rng(1).standard_normal((256, 256), np.float32)
    wanted = np.asarray(jax.jit(double_sin)(x))

    executable, stats = cx.compile_program(program)  # Python stores
    assert not stats.cache_hit and executable._native.donated_outputs == [0]
    (entry,) = cache_files(cache)
    inode = entry.stat().st_ino
    (out,) = load_and_run(table(), path, [x])  # the native loader hits
    np.testing.assert_allclose(out.reshape(256, 256), wanted, rtol=1e-6)
    assert entry.stat().st_ino == inode

    entry.unlink()
    (out,) = load_and_run(table(), path, [x])  # the native loader stores
    np.testing.assert_allclose(out.reshape(256, 256), wanted, rtol=1e-6)
    assert cache_files(cache) == {entry}
    executable, stats = cx.compile_program(program)  # Python hits
    assert stats.cache_hit and executable._native.donated_outputs == [0], stats
    (out,) = executable.run([x])
    np.testing.assert_allclose(out, wanted, rtol=1e-6)


# ------------------------------------------------------------------ damaged entries
# The store's refusals are tested once, through Python, in test_cache_store.py: here, that the
# native loader takes the same path (the store's check, load_or_compile's own check, an
# entry the store must not trust or block on), each a miss that it replaces.


def _flip_a_bit(entry: Path, **_: Any) -> None:
    data = bytearray(entry.read_bytes())
    data[-10] ^= 0x01
    entry.write_bytes(bytes(data))


def _another_programs_digest(entry: Path, **_: Any) -> None:
    header, payload = split_entry(entry.read_bytes())
    header["program"] = "0" * 64  # the digest of another program's StableHLO and options
    entry.write_bytes(encode_entry(header, payload))


def _another_users_entry(entry: Path, **_: Any) -> None:
    """Makes another user own the entry (only root can: CI runs as root)."""
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    os.chown(entry, os.geteuid() + 4242, -1)


def _fifo(entry: Path, **_: Any) -> None:
    entry.unlink()
    os.mkfifo(entry)


DAMAGES: dict[str, Callable[..., None]] = {
    "bit flip": _flip_a_bit,
    "another program's digest": _another_programs_digest,
    "another user's entry": _another_users_entry,
    "fifo": _fifo,
}


def _load_without_blocking(path: Path) -> None:
    failures: list[BaseException] = []

    def load() -> None:
        try:
            native_load(path)
        except BaseException as failure:  # reported by the test's thread
            failures.append(failure)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "the native loader blocked on the entry"
    if failures:
        raise failures[0]


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_entry_is_a_miss_and_is_replaced(
    damage: str, program: cx.Program, tmp_path: Path, cache: Path
) -> None:
    path = tmp_path / "mlp.cyxla"
    program.save(path)
    entry = loaded_entry(cache, path)
    key = split_entry(entry.read_bytes())[0]["key"]
    DAMAGES[damage](entry)
    damaged = entry.lstat()
    _load_without_blocking(path)

    # Replaced: a new regular file, private, that Python's store reads.
    replaced = entry.lstat()
    assert stat.S_ISREG(replaced.st_mode) and replaced.st_ino != damaged.st_ino
    assert stat.S_IMODE(replaced.st_mode) == 0o600
    read = store.read("executables", key)
    assert read is not None and read.header["cyxla_version"] == cx.__version__
    assert [p.name for p in (cache / "executables").iterdir()] == [entry.name]
