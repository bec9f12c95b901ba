"""`verify_program_file`: whether a program file from elsewhere loads and compiles, found out
in a child process, so that a file that would crash, hang or exhaust the process that
loads it takes down only the child.

cyxla's own readers refuse any malformed file with an error, but the StableHLO goes on to
the plugin's parser and compiler, and a cached executable to the plugin's deserializer:
native code that a crafted or corrupted file can abort, or keep busy for minutes and
gigabytes (docs/security.md). The child (`cyxla._verify.child`) does what a caller
would, `load_program` then `compile_program`, and reports on its last line of output.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from cyxla._cache.store import CACHE_ENVIRONMENT_VARIABLE, cache_directory

__all__ = ["ProgramFileVerdict", "verify_program_file"]

#: How often the child's memory is read.
_POLL_SECONDS = 0.02
#: How much of the child's error output a verdict quotes.
_STDERR_LINES = 5
_STDERR_TAIL = 2000


@dataclass(frozen=True)
class ProgramFileVerdict:
    """What `verify_program_file` found: whether the file is `accepted`, and otherwise
    the `reason` (cyxla's refusal, the signal that ended the child and the last lines it
    printed, or the limit it ran past). `program` describes an accepted file (name and
    specs), and `from_cache` says whether its executable came from the disk cache;
    `seconds` and `peak_memory_bytes` are what the child used (the peak is None where
    the system does not tell)."""

    path: str
    accepted: bool
    reason: str
    program: str
    seconds: float
    peak_memory_bytes: int | None
    from_cache: bool = False

    def __str__(self) -> str:
        if self.accepted:
            how = "from the disk cache" if self.from_cache else "compiled"
            return f"{self.path}: accepted ({self.program}; {how}, {self.seconds:.2f} s)"
        return f"{self.path}: refused: {self.reason}"


def _resident_bytes(pid: int) -> int | None:
    """The resident memory of process `pid` (Linux's /proc), or None."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


#: Lines of a crash's output that say nothing of its cause: absl's preamble and the
#: addresses of an uninstrumented stack trace.
_NOISE = re.compile(r"^\s*@\s+0x|^\*\*\* Check failure stack trace|before absl::InitializeLog")


def _tail(text: str) -> str:
    """The last lines of a crash's output that may say why."""
    lines = [line for line in text.strip().splitlines() if not _NOISE.search(line)]
    text = "\n".join(lines[-_STDERR_LINES:])
    return text if len(text) <= _STDERR_TAIL else "..." + text[-_STDERR_TAIL:]


def _check_limits(timeout: float, memory_limit: int | None) -> None:
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ValueError(f"verify_program_file: timeout must be seconds > 0, given {timeout!r}")
    if memory_limit is not None and (
        isinstance(memory_limit, bool) or not isinstance(memory_limit, int) or memory_limit <= 0
    ):
        raise ValueError(
            "verify_program_file: memory_limit must be a number of bytes > 0 or None, "
            f"given {memory_limit!r}"
        )


def verify_program_file(
    path: str | os.PathLike[str],
    *,
    timeout: float = 120.0,
    memory_limit: int | None = 4 << 30,
) -> ProgramFileVerdict:
    """Loads and compiles the program file at `path` in a child process, as
    `load_program` and `compile_program` would here, and says whether that worked.

    For a service that loads files it did not write: a file that makes the plugin
    crash, run longer than `timeout` seconds or hold more than `memory_limit` bytes of
    resident memory (None: no limit; read from /proc, so enforced on Linux only) is
    refused with the reason, and only the child is lost. The child uses the disk cache
    as this process would: an accepted file's executable is stored there, so that the
    next `compile_program` of it here loads it instead of compiling. When the child
    crashes, it is tried again without the cache: if the file then passes, the verdict
    blames the cache's entry for it (a corrupted executable that the plugin's
    deserializer cannot survive), which `python -m cyxla cache clear` removes. So a
    verdict takes at most `timeout` seconds, or twice that after a crash. Running the
    program is not tried. ValueError for limits that are not positive numbers.
    """
    _check_limits(timeout, memory_limit)
    file = os.fspath(path)
    verdict, crashed = _in_child(file, timeout, memory_limit, {})
    if not crashed or cache_directory() is None:
        return verdict
    uncached, _ = _in_child(file, timeout, memory_limit, {CACHE_ENVIRONMENT_VARIABLE: "0"})
    if not uncached.accepted:
        return verdict
    reason = (
        f"its executable in the disk cache cannot be loaded safely ({verdict.reason}); "
        "without the cache the file compiles: remove the entry (python -m cyxla cache clear)"
    )
    return dataclasses.replace(verdict, reason=reason)


def _in_child(
    file: str, timeout: float, memory_limit: int | None, environment: dict[str, str]
) -> tuple[ProgramFileVerdict, bool]:
    """The verdict of one child, and whether it crashed."""
    started = time.monotonic()
    # Files, not pipes: a plugin that prints more than a pipe holds must not stall.
    with tempfile.TemporaryFile() as output, tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(
            [sys.executable, "-m", "cyxla._verify.child", file],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=errors,
            env={**os.environ, **environment},
            start_new_session=True,  # its own process group: stopped whole
        )
        stopped_for, peak = _watch(child, started, timeout, memory_limit)
        seconds = time.monotonic() - started
        output.seek(0)
        errors.seek(0)
        return _verdict(
            file, child.returncode, output.read(), errors.read(), stopped_for, seconds, peak
        )


def _watch(
    child: subprocess.Popen[bytes], started: float, timeout: float, memory_limit: int | None
) -> tuple[str, int | None]:
    """Waits for `child`, killed if it runs past a limit: (why it was stopped, or "";
    its peak resident memory)."""
    peak: int | None = None
    while child.poll() is None:
        resident = _resident_bytes(child.pid)
        if resident is not None:
            peak = max(peak or 0, resident)
        stopped_for = ""
        if time.monotonic() - started > timeout:
            stopped_for = f"took more than {timeout:g} s to load and compile; stopped"
        elif memory_limit is not None and resident is not None and resident > memory_limit:
            stopped_for = (
                f"held more than {memory_limit / (1 << 20):.0f} MiB of memory while "
                "loading and compiling; stopped"
            )
        if stopped_for:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            return stopped_for, peak
        time.sleep(_POLL_SECONDS)
    return "", peak


def _verdict(
    file: str,
    returncode: int,
    output: bytes,
    errors: bytes,
    stopped_for: str,
    seconds: float,
    peak: int | None,
) -> tuple[ProgramFileVerdict, bool]:
    """The verdict on what the child did, and whether it crashed."""
    stderr = errors.decode("utf-8", "replace")
    if stopped_for:
        return ProgramFileVerdict(file, False, stopped_for, "", seconds, peak), False
    if returncode < 0:
        reason = f"loading and compiling crashed the process ({_signal_name(-returncode)})"
        if stderr.strip():
            reason += f"; its last output: {_tail(stderr)}"
        return ProgramFileVerdict(file, False, reason, "", seconds, peak), True
    try:
        report = json.loads(output.decode("utf-8", "replace").strip().splitlines()[-1])
    except (IndexError, ValueError):
        report = None
    if not isinstance(report, dict) or "accepted" not in report:
        reason = f"the check ended with exit status {returncode} and no verdict"
        if stderr.strip():
            reason += f"; its last output: {_tail(stderr)}"
        return ProgramFileVerdict(file, False, reason, "", seconds, peak), True
    if report["accepted"]:
        program, from_cache = str(report["program"]), bool(report["from_cache"])
        return ProgramFileVerdict(file, True, "", program, seconds, peak, from_cache), False
    return ProgramFileVerdict(file, False, str(report["reason"]), "", seconds, peak), False
