"""A process without Python starts on a warm disk cache without loading the PJRT plugin:
cyxla_open_runtime finds the plugin's facts recorded in the cache (src/cache/
plugin_record.hpp), and a program whose entry qualifies for the kernel runner runs from
the entry alone. The plugin opens, once, when something first needs PJRT. Checked with
tests/native/first_result.c, which reports whether the plugin is mapped into it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx

from support import (
    NATIVE_SOURCES,
    cache_entries,
    entry_binding,
    entry_path,
    plugin_library,
    read_entry,
    write_entry,
)

F32_3 = [jax.ShapeDtypeStruct((3,), jnp.float32)]
X = np.array([0.5, 1.0, 1.5], np.float32)


def _bits(values: np.ndarray) -> list[str]:
    return [f"{int(v):08x}" for v in np.asarray(values, np.float32).view(np.uint32)]


@pytest.fixture(scope="module")
def first_result(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/native/first_result.c, linked with the installed libcyxla."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    assert compiler, "the tests need a C compiler (cc)"
    output = tmp_path_factory.mktemp("first_result") / "first_result"
    library = Path(cx.get_library())
    command = [compiler, "-std=c11", "-O2", "-Wall", "-Werror", f"-I{cx.get_include()[0]}"]
    command += [str(NATIVE_SOURCES / "first_result.c"), str(library)]
    command += [f"-Wl,-rpath,{library.parent}", "-lpthread", "-o", str(output)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return output


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[str]]]:
    """Program files and jax.jit's bits on X: sin3 (the kernel runner's), sort3 (PJRT's:
    a sort thunk)."""
    directory = tmp_path_factory.mktemp("programs")
    functions = {"sin3": lambda x: jnp.sin(x) * 2, "sort3": lambda x: jnp.sort(x) * 2}
    out = {}
    for name, function in functions.items():
        path = directory / f"{name}.cyxla"
        cx.lower(function, F32_3).save(path)
        out[name] = (path, _bits(jax.jit(function)(X)))
    return out


def _env(cache: Path, **values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.pop("CYXLA_DEFER_PLUGIN", None)
    env.pop("CYXLA_RUNNER", None)
    return {**env, "CYXLA_PJRT_PLUGIN": plugin_library(), "CYXLA_CACHE_DIR": str(cache), **values}


def _start(
    binary: Path, cache: Path, *arguments: object, check: bool = True, **env: str
) -> dict[str, str]:
    """Runs first_result; its report, one field per line (the bits as "bits N")."""
    result = subprocess.run(
        [str(binary), *map(str, arguments)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(cache, **env),
    )
    if check:
        assert result.returncode == 0, result.stderr
    report = {"returncode": str(result.returncode), "stderr": result.stderr}
    for line in result.stdout.splitlines():
        name, _, value = line.partition(" ")
        if name == "bits":
            index, _, value = value.partition(" ")
            name = f"bits {index}"
        report[name] = value
    return report


def _record(cache: Path) -> Path:
    (record,) = cache_entries(cache, "plugins")
    return record


def test_a_warm_start_runs_sin3_without_opening_the_plugin(
    first_result: Path, programs: dict[str, tuple[Path, list[str]]], tmp_path: Path
) -> None:
    sin3, want = programs["sin3"]
    cold = _start(first_result, tmp_path, sin3)
    assert cold["plugin_mapped"] == "yes"  # it compiled, and recorded the plugin's facts
    assert cold["bits 0"].split() == want
    header, payload = read_entry(_record(tmp_path))
    assert payload == b""
    assert header["library"] == str(Path(plugin_library()).resolve())
    assert header["platform"] == "cpu"

    warm = _start(first_result, tmp_path, sin3)
    assert warm["plugin_mapped"] == "no"
    assert warm["bits 0"].split() == want  # jax.jit's bits, from the plugin's own kernel
    # The instrument sees the plugin when it is there: the old path, on request.
    forced = _start(first_result, tmp_path, sin3, CYXLA_DEFER_PLUGIN="0")
    assert forced["plugin_mapped"] == "yes"
    assert forced["bits 0"].split() == want


def test_a_program_that_needs_pjrt_opens_the_deferred_plugin(
    first_result: Path, programs: dict[str, tuple[Path, list[str]]], tmp_path: Path
) -> None:
    (sin3, want_sin), (sort3, want_sort) = programs["sin3"], programs["sort3"]
    _start(first_result, tmp_path, sin3, sort3)  # warms both
    warm = _start(first_result, tmp_path, sin3, sort3)
    assert warm["plugin_mapped_at_first_result"] == "no"
    assert warm["plugin_mapped"] == "yes"  # sort3 runs on PJRT
    assert (warm["bits 0"].split(), warm["bits 1"].split()) == (want_sin, want_sort)
    # CYXLA_RUNNER=pjrt: sin3 too takes PJRT, from a runtime that opens the plugin then.
    forced = _start(first_result, tmp_path, sin3, CYXLA_RUNNER="pjrt")
    assert (forced["plugin_mapped_at_first_result"], forced["bits 0"].split()) == ("yes", want_sin)


def test_many_threads_load_at_once_from_a_deferred_runtime(
    first_result: Path, programs: dict[str, tuple[Path, list[str]]], tmp_path: Path
) -> None:
    (sin3, want_sin), (sort3, want_sort) = programs["sin3"], programs["sort3"]
    _start(first_result, tmp_path, sin3, sort3)
    kernels_only = _start(first_result, tmp_path, "--threads", 8, sin3)
    assert (kernels_only["threads_differ"], kernels_only["plugin_mapped"]) == ("0", "no")
    # After sin3's first result, nine threads load sin3 and sort3 at once: they race to
    # open the plugin, which sort3 needs, while others run sin3's kernels.
    both = _start(first_result, tmp_path, "--threads", 8, sin3, sort3)
    assert (both["plugin_mapped_at_first_result"], both["plugin_mapped"]) == ("no", "yes")
    assert both["threads_differ"] == "0"
    assert (both["bits 0"].split(), both["bits 1"].split()) == (want_sin, want_sort)


def _corrupt(record: Path) -> None:
    data = bytearray(record.read_bytes())
    data[-5] ^= 0xFF
    record.write_bytes(bytes(data))


def _another_build(record: Path) -> None:
    header, payload = read_entry(record)
    write_entry(record, {**header, "mtime_ns": header["mtime_ns"] + 1}, payload)


def _truncated(record: Path) -> None:
    record.write_bytes(record.read_bytes()[:40])


@pytest.mark.parametrize("damage", [_corrupt, _another_build, _truncated])
def test_a_damaged_or_stale_record_opens_the_plugin_and_is_replaced(
    first_result: Path, programs: dict[str, tuple[Path, list[str]]], tmp_path: Path, damage
) -> None:
    sin3, want = programs["sin3"]
    _start(first_result, tmp_path, sin3)
    record = _record(tmp_path)
    damage(record)
    opened = _start(first_result, tmp_path, sin3)
    assert (opened["plugin_mapped"], opened["bits 0"].split()) == ("yes", want)
    again = _start(first_result, tmp_path, sin3)  # the record was written afresh
    assert (again["plugin_mapped"], again["bits 0"].split()) == ("no", want)


def _forge_record(cache: Path, library: Path, **fields: object) -> None:
    """A record, as cyxla writes it, of `library` (with `fields` changed): the real
    plugin's facts, another library's identity."""
    header, _ = read_entry(_record(cache))
    info = library.stat()
    path = str(library.resolve())
    key = hashlib.sha256(f"{path}\0{info.st_size}\0{info.st_mtime_ns}".encode()).hexdigest()
    header.update(library=path, size=info.st_size, mtime_ns=info.st_mtime_ns, key=key)
    header.update(fields, binding=entry_binding("plugins", key, b""))
    write_entry(entry_path(cache, "plugins", key), header, b"")


def test_a_deferred_open_that_fails_reaches_the_caller_where_the_plugin_is_needed(
    first_result: Path, programs: dict[str, tuple[Path, list[str]]], tmp_path: Path
) -> None:
    """A library recorded as a plugin that is none: the runtime opens (nothing to open
    yet), and the load that needs the plugin fails with dlopen's or the check's message."""
    sin3, _ = programs["sin3"]
    _start(first_result, tmp_path, sin3)
    impostor = tmp_path / "impostor.so"
    shutil.copy(Path(cx.get_library()), impostor)  # a shared library without GetPjrtApi
    _forge_record(tmp_path, impostor)
    failed = _start(first_result, tmp_path, sin3, check=False, CYXLA_PJRT_PLUGIN=str(impostor))
    assert failed["returncode"] == "1"
    assert f"{sin3}: " in failed["stderr"]  # from cyxla_load_program, not the open
    assert "is not a PJRT plugin: it does not export GetPjrtApi" in failed["stderr"]


def test_a_record_that_lies_is_caught_when_the_plugin_opens_and_replaced(
    first_result: Path, programs: dict[str, tuple[Path, list[str]]], tmp_path: Path
) -> None:
    sin3, _ = programs["sin3"]
    _start(first_result, tmp_path, sin3)
    _forge_record(tmp_path, Path(plugin_library()), platform_version="not the plugin's")
    # The facts are not the key's fields but the plugin's: the load needs no plugin ...
    assert _start(first_result, tmp_path, sin3)["plugin_mapped"] == "no"
    sort3, _ = programs["sort3"]
    # ... until one that compiles opens it, finds it is not what the record says, and
    # replaces the record.
    failed = _start(first_result, tmp_path, sort3, check=False)
    assert "is not what its record in the disk cache says" in failed["stderr"]
    header, _ = read_entry(_record(tmp_path))
    assert header["platform_version"] != "not the plugin's"
    assert _start(first_result, tmp_path, sort3)["plugin_mapped"] == "yes"


def test_a_missing_plugin_fails_at_open(first_result: Path, programs, tmp_path: Path) -> None:
    sin3, _ = programs["sin3"]
    missing = tmp_path / "no-such-plugin.so"
    failed = _start(first_result, tmp_path, sin3, check=False, CYXLA_PJRT_PLUGIN=str(missing))
    assert failed["returncode"] == "1"
    assert f"cannot load the PJRT plugin {missing}" in failed["stderr"]
    assert str(sin3) not in failed["stderr"]


def test_python_runs_a_cache_hit_on_the_kernel_runner_without_deserializing(
    tmp_path: Path,
) -> None:
    """The same path in a Python process: the executable is made from the entry, and PJRT
    loads it only when asked (serialize() then hands back the entry's form as it is)."""
    code = """
import json, jax, jax.numpy as jnp, numpy as np, cyxla as cx
program = cx.lower(lambda x: jnp.sin(x) * 2, [jax.ShapeDtypeStruct((3,), jnp.float32)])
first, _ = cx.compile_program(program)
second, stats = cx.compile_program(program)
x = np.array([0.5, 1.0, 1.5], np.float32)
print(json.dumps({"hit": stats.cache_hit, "runner": second.runner.name,
                  "same": bool((second.run([x])[0] == first.run([x])[0]).all()),
                  "form": second._native.serialize() == first._native.serialize(),
                  "fingerprint": second._native.fingerprint() == first._native.fingerprint()}))
"""
    env = {**os.environ, "CYXLA_CACHE_DIR": str(tmp_path)}
    env.pop("CYXLA_RUNNER", None)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.splitlines()[-1])
    assert outcome == {
        "hit": True,
        "runner": "kernels",
        "same": True,
        "form": True,  # the entry's form, objects and all, as the compile serialized it
        "fingerprint": True,  # asked of PJRT, which loads the executable then
    }


_OPEN_WITH_OPTIONS = """
import ctypes, json, os, sys
sys.path.insert(0, {tests!r})
from support import Api, ClientOption, Error, RuntimeOptions
library = ctypes.CDLL({library!r})
library.cyxla_get_api.restype = ctypes.POINTER(Api)
api = library.cyxla_get_api().contents
error = Error()
options = (ClientOption * 1)(ClientOption({name!r}, 1, None, {value}, 0.0))
runtime = RuntimeOptions(ctypes.sizeof(RuntimeOptions), None, options, 1)
status = api.open_runtime(ctypes.byref(runtime), error)
plugin = os.path.basename(os.environ["CYXLA_PJRT_PLUGIN"])
mapped = plugin in open("/proc/self/maps").read()
print(json.dumps([status, error.message.decode(), mapped]))
"""


@pytest.mark.parametrize(
    ("name", "value", "opened"),
    [
        (b"cpu_device_count", 1, False),  # cyxla's default, which the record holds
        (b"cpu_device_count", 2, True),
        (b"not_an_option", 1, True),
    ],
)
def test_client_options_the_record_does_not_hold_open_the_plugin_to_check_them(
    first_result: Path,
    programs: dict[str, tuple[Path, list[str]]],
    tmp_path: Path,
    name: bytes,
    value: int,
    opened: bool,
) -> None:
    """The record holds the options a client was created with (cyxla's defaults here);
    with others the open loads the plugin, which alone can check them."""
    sin3, _ = programs["sin3"]
    _start(first_result, tmp_path, sin3)
    code = _OPEN_WITH_OPTIONS.format(
        tests=str(Path(__file__).parent), library=cx.get_library(), name=name, value=value
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    status, message, mapped = json.loads(result.stdout.splitlines()[-1])
    assert mapped == opened
    if name == b"not_an_option":
        assert status != 0 and "not_an_option" in message
    else:
        assert (status, message) == (0, "")
