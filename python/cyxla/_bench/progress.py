"""Where a bench run is, on stderr (stdout keeps the table or the JSON): the program, the
round, and an estimate of the time left, from the rounds timed so far. On a terminal one
line is rewritten; elsewhere (a log, a pipe) each report is a line of its own."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Reports the rounds of `programs` programs of `rounds` rounds each."""

    def __init__(self, programs: int, rounds: int, stream: TextIO | None = None) -> None:
        self._programs = programs
        self._rounds = rounds
        self._stream = stream if stream is not None else sys.stderr
        self._terminal = self._stream.isatty()
        self._program = 0
        self._name = ""
        self._start = time.monotonic()

    def program(self, name: str) -> None:
        """A program's paths are being made and calibrated; its rounds come next."""
        self._program += 1
        self._name = name
        self._start = time.monotonic()
        self._write(f"{self._where()}: calibrating")

    def round(self, done: int) -> None:
        """`done` rounds of the current program are timed."""
        per_round = (time.monotonic() - self._start) / done
        rounds_left = self._rounds - done + (self._programs - self._program) * self._rounds
        left = f"about {per_round * rounds_left:.0f} s left" if rounds_left else "done"
        self._write(f"{self._where()}: round {done}/{self._rounds}, {left}")
        if self._terminal and not rounds_left:
            self._stream.write("\n")

    def _where(self) -> str:
        return f"bench: {self._name} (program {self._program} of {self._programs})"

    def _write(self, text: str) -> None:
        if self._terminal:
            self._stream.write(f"\r{text}\x1b[K")  # over the previous report, to its end
        else:
            self._stream.write(text + "\n")
        self._stream.flush()
