"""verify_program_file and `python -m cyxla verify`: files that crash, hang or exhaust the
process that compiles them are refused in bounded time and memory, and this process
carries on; good files are accepted and their executable is cached for the caller.

tests/untrusted/ holds program files that fuzz/stablehlo_edits.py found: one changed byte
of a StableHLO section (CRC recomputed), each of which takes down a process that compiles
it. They are checked against the control (a fresh interpreter compiling them dies).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx

from support import plugin_library, run_cyxla, run_python, spec

UNTRUSTED = Path(__file__).parent / "untrusted"
#: Each file, and the signal that a process compiling it dies of.
CRASHING = {
    "stablehlo-edit-aborts-the-plugin.cyxla": signal.SIGABRT,
    "stablehlo-edit-segfaults-the-plugin.cyxla": signal.SIGSEGV,
    "plain-edit-aborts-the-plugin.cyxla": signal.SIGABRT,  # calls no custom-call target
}


@pytest.fixture
def solve_file(tmp_path: Path) -> Path:
    """A program with a linear-algebra custom call, saved."""
    program = cx.lower(jnp.linalg.solve, [spec((4, 4), np.float32), spec((4,), np.float32)])
    path = tmp_path / "solve.cyxla"
    program.save(path)
    return path


def test_a_good_file_is_accepted_and_left_in_the_cache(solve_file: Path, cache: Path) -> None:
    verdict = cx.verify_program_file(solve_file)
    assert verdict.accepted and not verdict.from_cache, verdict
    assert verdict.program == "solve on cpu: float32[4,4], float32[4] -> float32[4]"
    assert verdict.reason == "" and verdict.seconds > 0
    assert verdict.peak_memory_bytes is not None and verdict.peak_memory_bytes > 10 << 20
    assert str(verdict).startswith(f"{solve_file}: accepted (solve on cpu")
    # What the child compiled, this process now loads; and it runs as jax.jit does.
    executable, statistics = cx.compile_program(cx.load_program(solve_file))
    assert statistics.cache_hit
    a = np.array([[4, 1, 0, 0], [1, 3, 1, 0], [0, 1, 2, 0], [0, 0, 0, 1]], np.float32)
    b = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(executable.run([a, b])[0], jnp.linalg.solve(a, b), rtol=1e-5)
    assert cx.verify_program_file(solve_file).from_cache


@pytest.mark.parametrize("name", CRASHING)
def test_a_file_that_crashes_the_plugin_is_refused(name: str, cache: Path) -> None:
    path = UNTRUSTED / name
    # The control: compiling it takes a process down.
    control = run_python(f"import cyxla as cx; cx.compile_program(cx.load_program({str(path)!r}))")
    assert control.returncode == -CRASHING[name], control.stderr[-2000:]
    verdict = cx.verify_program_file(path, timeout=60)
    assert not verdict.accepted
    assert verdict.reason.startswith(
        f"loading and compiling crashed the process ({CRASHING[name].name})"
    ), verdict.reason
    assert verdict.seconds < 60
    assert "@ 0x" not in verdict.reason  # the stack's addresses say nothing
    assert not list(cache.glob("executables/*.entry"))  # nothing was stored


def test_a_file_that_hangs_the_compiler_is_stopped_in_time(cache: Path) -> None:
    path = UNTRUSTED / "stablehlo-edit-hangs-the-compiler.cyxla"
    # The control: compiling it takes more than 10 s, twice the limit below (it ran past
    # 120 s where it was found).
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(
            [
                sys.executable,
                "-c",
                f"import cyxla as cx; cx.compile_program(cx.load_program({str(path)!r}))",
            ],
            capture_output=True,
            timeout=10,
        )
    verdict = cx.verify_program_file(path, timeout=5)
    assert not verdict.accepted
    assert verdict.reason == "took more than 5 s to load and compile; stopped"
    assert verdict.seconds < 10  # no second try without the cache: it did not crash


def test_a_file_past_the_limits_is_stopped(solve_file: Path, cache: Path) -> None:
    slow = cx.verify_program_file(solve_file, timeout=0.05)
    assert not slow.accepted
    assert slow.reason == "took more than 0.05 s to load and compile; stopped"
    assert slow.seconds < 5
    large = cx.verify_program_file(solve_file, memory_limit=20 << 20)
    assert not large.accepted
    assert large.reason == "held more than 20 MiB of memory while loading and compiling; stopped"
    assert large.peak_memory_bytes is not None and large.peak_memory_bytes > 20 << 20


def test_files_that_cyxla_refuses_give_its_reason(tmp_path: Path, cache: Path) -> None:
    junk = tmp_path / "junk.cyxla"
    junk.write_bytes(b"not a program")
    verdict = cx.verify_program_file(junk)
    assert not verdict.accepted
    assert verdict.reason == (
        f"ProgramFileError: {junk}: not a cyxla program file (it does not start with CYXLAPRG)"
    )
    missing = cx.verify_program_file(tmp_path / "missing.cyxla")
    assert missing.reason.startswith("FileNotFoundError: [Errno 2] No such file or directory")


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"timeout": 0}, "timeout must be seconds > 0, given 0"),
        ({"timeout": True}, "timeout must be seconds > 0, given True"),
        ({"memory_limit": -1}, "memory_limit must be a number of bytes > 0 or None, given -1"),
        ({"memory_limit": 1.5}, "memory_limit must be a number of bytes > 0 or None, given 1.5"),
    ],
)
def test_limits_are_checked(solve_file: Path, limits: dict, message: str) -> None:
    with pytest.raises(ValueError, match=f"verify_program_file: {message}"):
        cx.verify_program_file(solve_file, **limits)


# Flips one bit of the cached executable at a time (the entry's binding recomputed, as
# someone with write access to the cache could), until one makes the plugin's deserializer
# take its process down: about one flip in thirty does. Each try compiles in a forked child
# of an interpreter that has no plugin client yet.
_FIND_CRASHING_ENTRY = """
import os, random, sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from support import encode_entry, entry_binding, split_entry
import cyxla as cx
program = cx.load_program({file!r})
(entry,) = Path({cache!r}, "executables").glob("*.entry")
header, payload = split_entry(entry.read_bytes())
rng = random.Random(0)
for _ in range(400):
    edited = bytearray(payload)
    edited[rng.randrange(len(edited))] ^= 1 << rng.randrange(8)
    edited = bytes(edited)
    binding = entry_binding("executables", header["key"], edited)
    entry.write_bytes(encode_entry({{**header, "binding": binding}}, edited))
    pid = os.fork()
    if pid == 0:
        try:
            cx.compile_program(program)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        print("found")
        break
"""


def test_a_cached_executable_that_crashes_the_plugin_is_blamed(
    solve_file: Path, cache: Path
) -> None:
    assert cx.verify_program_file(solve_file).accepted  # its executable is now cached
    search = run_python(
        _FIND_CRASHING_ENTRY.format(
            tests=str(Path(__file__).parent), file=str(solve_file), cache=str(cache)
        )
    )
    assert search.stdout.strip() == "found", search.stderr[-2000:]
    verdict = cx.verify_program_file(solve_file, timeout=60)
    assert not verdict.accepted
    assert verdict.reason.startswith(
        "its executable in the disk cache cannot be loaded safely (loading and compiling "
        "crashed the process (SIG"
    ), verdict.reason
    assert verdict.reason.endswith(
        "without the cache the file compiles: remove the entry (python -m cyxla cache clear)"
    )
    assert run_cyxla("cache", "clear").returncode == 0
    assert cx.verify_program_file(solve_file).accepted


def test_the_command_reports_each_file_and_fails_if_any_is_refused(
    solve_file: Path, cache: Path
) -> None:
    good = run_cyxla("verify", str(solve_file))
    assert good.returncode == 0, good.stderr
    assert good.stdout.startswith(f"{solve_file}: accepted (solve on cpu: float32[4,4]")
    bad = UNTRUSTED / "stablehlo-edit-aborts-the-plugin.cyxla"
    both = run_cyxla(
        "verify", "--timeout", "60", "--memory-limit", "4096", str(bad), str(solve_file)
    )
    assert both.returncode == 1
    lines = both.stdout.splitlines()
    assert lines[0].startswith(
        f"{bad}: refused: loading and compiling crashed the process (SIGABRT)"
    )
    assert lines[-1].startswith(f"{solve_file}: accepted (solve on cpu")
    usage = run_cyxla("verify", "--timeout", "0", str(solve_file))
    assert usage.returncode == 2
    assert "argument --timeout: expected a number > 0, given '0'" in usage.stderr


def test_the_native_recipe_refuses_what_crashes_the_plugin(
    solve_file: Path, tmp_path: Path
) -> None:
    """docs/security.md's C program, built as the page says, vets files with fork."""
    page = (Path(__file__).parents[1] / "docs" / "security.md").read_text()
    (source,) = re.findall(r"^```c\n(.*?)^```", page, re.DOTALL | re.MULTILINE)
    (tmp_path / "vet.c").write_text(source)
    env = {**os.environ, "PKG_CONFIG_PATH": cx.get_pkgconfig_dir()}
    flags = subprocess.run(
        ["pkg-config", "--cflags", "--libs", "cyxla"], capture_output=True, text=True, env=env
    ).stdout.split()
    compiler = os.environ.get("CC") or shutil.which("cc") or "gcc"
    built = subprocess.run(
        [
            compiler,
            "-std=c11",
            "-Wall",
            "-Werror",
            str(tmp_path / "vet.c"),
            *flags,
            "-o",
            str(tmp_path / "vet"),
        ],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    native = {**os.environ, "CYXLA_PJRT_PLUGIN": plugin_library()}
    plain = cx.lower(lambda x: jnp.cumsum(jnp.tanh(x)), [spec((8,), np.float32)])
    plain.save(tmp_path / "plain.cyxla")
    good = subprocess.run(
        [str(tmp_path / "vet"), str(tmp_path / "plain.cyxla")],
        capture_output=True,
        text=True,
        env=native,
        timeout=300,
    )
    assert good.returncode == 0, good.stderr
    assert good.stdout == f"{tmp_path / 'plain.cyxla'}: accepted\n"
    bad = UNTRUSTED / "plain-edit-aborts-the-plugin.cyxla"
    crashed = subprocess.run(
        [str(tmp_path / "vet"), str(bad)], capture_output=True, text=True, env=native, timeout=300
    )
    assert crashed.returncode == 1
    assert f"{bad}: refused: Aborted" in crashed.stderr
    # The native loader runs jnp.linalg through cyxla's LAPACK handlers where it finds a
    # LAPACK (SciPy's OpenBLAS, named by CYXLA_LAPACK), and refuses the file before
    # compiling where the library is missing: nothing to crash.
    from cyxla._ffi.sources import scipy_lapack

    lapack = subprocess.run(
        [str(tmp_path / "vet"), str(solve_file)],
        capture_output=True,
        text=True,
        env={**native, "CYXLA_LAPACK": str(scipy_lapack())},
        timeout=300,
    )
    assert lapack.returncode == 0, lapack.stderr
    assert lapack.stdout == f"{solve_file}: accepted\n"
    missing = subprocess.run(
        [str(tmp_path / "vet"), str(solve_file)],
        capture_output=True,
        text=True,
        env={**native, "CYXLA_LAPACK": str(tmp_path / "no-lapack.so")},
        timeout=300,
    )
    assert missing.returncode == 1
    assert "calls the LAPACK target 'lapack_sgetrf_ffi'" in missing.stderr
    assert "no-lapack.so" in missing.stderr
