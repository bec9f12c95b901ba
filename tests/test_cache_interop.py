"""Python and the native loader (cyxla_load_program) share one disk cache: the same
directory, keys and entry files, so a program compiled in either language is a hit in the
other. (The store itself, which both reach, is tested in test_cache.py.)"""

from __future__ import annotations

import ctypes
import hashlib
import importlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx
from cyxla import _backend, _core, _plugins
from cyxla._cache import keys, store
from cyxla._compile_options import compile_options
from cyxla._program import donated_outputs

from support import (
    OK,
    OPTION_BOOL,
    Api,
    ClientOption,
    Error,
    Input,
    ProgramSpec,
    RuntimeOptions,
    entry_path,
    plugin_library,
    run_python,
    split_entry,
    table,
)

# ------------------------------------------------------------------ helpers

TESTS = Path(__file__).parent


def mlp(x: jax.Array, w: jax.Array) -> jax.Array:
    return jnp.tanh(x @ w) + 1.0


def inputs(rows: int = 4) -> list[np.ndarray]:
    x = np.linspace(-1, 1, rows * 8, dtype=np.float32).reshape(rows, 8)
    return [x, np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8)]


def mlp_program(rows: int = 4) -> cx.Program:
    f32 = jnp.float32
    return cx.lower(mlp, [jax.ShapeDtypeStruct((rows, 8), f32), jax.ShapeDtypeStruct((8, 8), f32)])


def open_native_runtime(api: Api, *options: ClientOption) -> None:
    """Opens the runtime as a C program does (in a process without Python's runtime),
    naming `options`; cyxla's defaults for the platform give the others."""
    given = RuntimeOptions(
        ctypes.sizeof(RuntimeOptions),
        plugin_library().encode(),
        (ClientOption * len(options))(*options),
        len(options),
    )
    error = Error()
    assert api.open_runtime(ctypes.byref(given), ctypes.byref(error)) == OK, error.message


def load_and_run(api: Api, path: Path, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """cyxla_load_program, then one run through get_spec and execute; the outputs."""
    handle, error = ctypes.c_uint64(0), Error()
    status = api.load_program(str(path).encode(), ctypes.byref(handle), ctypes.byref(error))
    assert status == OK, error.message
    spec = ProgramSpec()
    spec.struct_size = ctypes.sizeof(ProgramSpec)
    try:
        assert api.get_spec(handle, ctypes.byref(spec), ctypes.byref(error)) == OK, error.message
        outputs = [
            np.empty(spec.output_bytes[j], np.uint8).view(np.float32)
            for j in range(spec.num_outputs)
        ]
        given = (Input * len(arrays))(
            *(Input(a.ctypes.data, spec.input_types[i], a.nbytes) for i, a in enumerate(arrays))
        )
        pointers = (ctypes.c_void_p * len(outputs))(*(o.ctypes.data for o in outputs))
        status = api.execute(
            ctypes.byref(spec), given, len(arrays), pointers, len(outputs), ctypes.byref(error)
        )
        assert status == OK, error.message
        return outputs
    finally:
        api.release_spec(ctypes.byref(spec))
        api.release_program(handle.value)


#: A fresh process that never compiles in Python: it opens the runtime through libcyxla's
#: own export, as a C program does, loads the program file and prints its outputs and the
#: native loader's key.
_NATIVE_CHILD = """
import ctypes, json, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
import cyxla as cx
from cyxla import _core
from support import Api, ClientOption
from test_cache_interop import inputs, load_and_run, open_native_runtime
library = ctypes.CDLL(cx.get_library())
library.cyxla_get_api.restype = ctypes.POINTER(Api)
api = library.cyxla_get_api().contents
open_native_runtime(api, *(ClientOption(n, t, None, i, 0.0) for n, t, i in {options!r}))
path = Path({path!r})
(out,) = load_and_run(api, path, inputs())
print(json.dumps({{"out": out.tolist(), "key": _core._executable_cache_key(str(path))}}))
"""


def native_child(path: Path, cache: Path, *options: ClientOption) -> dict[str, Any]:
    """What `_NATIVE_CHILD` prints; `options` (int and bool ones) are the client options
    it names."""
    named = [(o.name, o.type, o.int64_value) for o in options]
    result = run_python(
        _NATIVE_CHILD.format(tests=str(TESTS), path=str(path), options=named),
        env={"CYXLA_CACHE_DIR": str(cache)},
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def expected() -> np.ndarray:
    return np.asarray(jax.jit(mlp)(*inputs()))


def python_key(program: cx.Program) -> tuple[str, str]:
    """Python's key document (as json.dumps writes it) and key of `program` compiled by
    this process's runtime with the default compile options."""
    loaded = _backend.loaded()
    assert loaded is not None
    source = keys.executable_source(
        program,
        compile_options(),
        keys.library_identity(loaded),
        loaded.options,
        store.cyxla_version(),
    )
    return json.dumps(source, sort_keys=True, separators=(",", ":")), keys.key_of(source)


def entry_file(cache: Path, key: str) -> Path:
    return entry_path(cache, "executables", key)


def cache_files(cache: Path, kind: str = "executables") -> set[Path]:
    """The files of `kind` in the cache (Python's start-up may store entries of others)."""
    directory = cache / kind
    return set(directory.iterdir()) if directory.is_dir() else set()


@pytest.fixture(scope="module")
def program() -> cx.Program:
    cx.initialize(platform="cpu")
    return mlp_program()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    directory = tmp_path / "cache"
    monkeypatch.setenv(store.CACHE_ENVIRONMENT_VARIABLE, str(directory))
    monkeypatch.delenv(store.MAX_BYTES_ENVIRONMENT_VARIABLE, raising=False)
    yield directory
    for path in [directory, *directory.rglob("*")]:  # let tmp_path's cleanup remove all
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o700)


def native_load(path: Path) -> None:
    """Loads the program file with the native loader in this process (on Python's
    runtime) and checks its outputs against jax.jit."""
    (out,) = load_and_run(table(), path, inputs())
    np.testing.assert_allclose(out.reshape(4, 8), expected(), rtol=1e-6)


# ------------------------------------------------------------------ the key


def test_the_native_key_is_pythons_on_pythons_runtime(
    program: cx.Program, tmp_path: Path, cache: Path
) -> None:
    path = tmp_path / "mlp.cyxla"
    program.save(path)
    loaded = _backend.loaded()
    assert loaded is not None
    text, key = _core._executable_cache_key(str(path), loaded.runtime)
    assert (text, key) == python_key(program)
    assert key == hashlib.sha256(text.encode()).hexdigest()
    # The process's runtime, which the loader uses, is Python's.
    assert _core._executable_cache_key(str(path)) == (text, key)


def test_the_native_key_is_pythons_on_a_runtime_that_c_opened(
    program: cx.Program, tmp_path: Path, cache: Path
) -> None:
    path = tmp_path / "mlp.cyxla"
    program.save(path)
    child = native_child(path, cache)
    assert child["key"] == list(python_key(program))


@pytest.mark.parametrize("entry", ["cpu", "cuda12", "cuda13", "rocm7", "tpu"])
def test_a_runtime_c_opens_has_the_client_options_of_pythons_plugin_entry(entry: str) -> None:
    module = importlib.import_module(f"cyxla.plugins.{entry}")
    platform = _plugins.normalize_platform(module.PLATFORM)
    assert _core._with_default_options(platform, {}) == module.CREATE_OPTIONS
    # Older plugins report "host" or "gpu".
    alias = {"cpu": "host", "cuda": "gpu"}.get(platform, platform)
    assert _core._with_default_options(alias, {}) == module.CREATE_OPTIONS
    # An option the caller names replaces its default; the others stay.
    named = {name: "given" for name in module.CREATE_OPTIONS} | {"other": 3}
    assert _core._with_default_options(platform, named) == named


def test_an_option_c_names_replaces_the_default_and_gives_another_key(
    program: cx.Program, tmp_path: Path, cache: Path
) -> None:
    path = tmp_path / "mlp.cyxla"
    program.save(path)
    asynchronous = ClientOption(b"asynchronous", OPTION_BOOL, None, 1, 0.0)
    child = native_child(path, cache, asynchronous)
    np.testing.assert_allclose(child["out"], expected().ravel(), rtol=1e-6)
    source = json.loads(child["key"][0])
    assert source["client_options"] == {
        "asynchronous": ["bool", True],
        "cpu_device_count": ["int", "1"],
    }
    assert child["key"] != list(python_key(program))


def test_client_options_of_every_type_give_pythons_key(
    scripted: tuple[_core.Plugin, ctypes.CDLL],
    control: ctypes.CDLL,
    program: cx.Program,
    tmp_path: Path,
    cache: Path,
) -> None:
    # 0.1 and 1e-7 are no float32: the key holds the double given, as Python's does.
    options = {"s": "text é 😀", "i": -4, "l": [5, 6], "f": 0.1, "g": 1e-7, "b": True}
    plugin = scripted[0]
    client = _core.Runtime.create(plugin, options)
    loaded = _backend.LoadedPlugin("fake", plugin.path, options, plugin, client)
    source = keys.executable_source(
        program, compile_options(), keys.library_identity(loaded), options, cx.__version__
    )
    path = tmp_path / "mlp.cyxla"
    program.save(path)
    text, key = _core._executable_cache_key(str(path), client)
    assert text == json.dumps(source, sort_keys=True, separators=(",", ":"))
    assert key == keys.key_of(source)


def test_the_cache_off_gives_no_key(
    program: cx.Program, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mlp.cyxla"
    program.save(path)
    for off in ("", "0", " 0 "):
        monkeypatch.setenv(store.CACHE_ENVIRONMENT_VARIABLE, off)
        assert _core._executable_cache_key(str(path)) is None


# ------------------------------------------------------------------ across languages


def test_a_program_compiled_in_python_is_a_hit_for_the_native_loader(
    program: cx.Program, tmp_path: Path, cache: Path
) -> None:
    _, stats = cx.compile_program(program)
    assert not stats.cache_hit, stats
    path = tmp_path / "mlp.cyxla"
    program.save(path)
    entry = entry_file(cache, python_key(program)[1])
    before = cache_files(cache)
    assert before == {entry}, before
    long_ago = time.time() - 100_000
    os.utime(entry, (long_ago, long_ago))
    inode = entry.stat().st_ino

    child = native_child(path, cache)

    np.testing.assert_allclose(np.reshape(child["out"], (4, 8)), expected(), rtol=1e-6)
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
    np.testing.assert_allclose(np.reshape(child["out"], (4, 8)), expected(), rtol=1e-6)
    entry = entry_file(cache, python_key(program)[1])
    assert cache_files(cache) == {entry}
    header, payload = split_entry(entry.read_bytes())
    assert header["inputs"] == [[int(s.element_type), list(s.shape)] for s in program.inputs]
    assert header["donated"] == list(donated_outputs(program))
    assert header["cyxla_version"] == cx.__version__ and header["platform"] == "cpu"
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
    np.testing.assert_allclose(np.reshape(outcome["out"], (4, 8)), expected(), rtol=1e-6)
    assert cache_files(cache) == {entry}


def test_outputs_written_in_place_are_recorded_and_used_by_both(
    tmp_path: Path, cache: Path
) -> None:
    # 256x256 float32 is 256 KiB: lower adds a donated parameter for it.
    def double_sin(x: jax.Array) -> jax.Array:
        return jnp.sin(x) * 2

    cx.initialize(platform="cpu")
    program = cx.lower(double_sin, [jax.ShapeDtypeStruct((256, 256), jnp.float32)])
    assert donated_outputs(program) == (0,)
    path = tmp_path / "in_place.cyxla"
    program.save(path)
    x = np.random.default_rng(1).standard_normal((256, 256), np.float32)
    wanted = np.asarray(jax.jit(double_sin)(x))
    entry = entry_file(cache, python_key(program)[1])

    _, stats = cx.compile_program(program)  # Python stores
    assert not stats.cache_hit and split_entry(entry.read_bytes())[0]["donated"] == [0]
    inode = entry.stat().st_ino
    (out,) = load_and_run(table(), path, [x])  # the native loader hits
    np.testing.assert_allclose(out.reshape(256, 256), wanted, rtol=1e-6)
    assert entry.stat().st_ino == inode

    entry.unlink()
    (out,) = load_and_run(table(), path, [x])  # the native loader stores
    np.testing.assert_allclose(out.reshape(256, 256), wanted, rtol=1e-6)
    assert split_entry(entry.read_bytes())[0]["donated"] == [0]
    executable, stats = cx.compile_program(program)  # Python hits
    assert stats.cache_hit, stats
    (out,) = executable.run([x])
    np.testing.assert_allclose(out, wanted, rtol=1e-6)
