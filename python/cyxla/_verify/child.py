"""The child process of `verify_program_file`: loads and compiles one program file as a
caller would, and prints its verdict as one JSON line; a crash or a limit is seen by the
parent (cyxla/_verify/verdict.py)."""

from __future__ import annotations

import json
import sys

from cyxla._errors import (
    CompileError,
    InvalidArgumentError,
    PluginError,
    ProgramFileError,
    UnsupportedProgramError,
)
from cyxla._program.program import load_program
from cyxla._run.executable import compile_program

#: What a file can make cyxla or the plugin refuse, each a verdict rather than a failure.
_REFUSALS = (
    CompileError,
    InvalidArgumentError,
    PluginError,
    ProgramFileError,
    UnsupportedProgramError,
    OSError,
)


def main(path: str) -> int:
    try:
        program = load_program(path)
        _, statistics = compile_program(program)
    except _REFUSALS as error:
        print(json.dumps({"accepted": False, "reason": f"{type(error).__name__}: {error}"}))
        return 0
    specs = ", ".join(map(str, program.inputs)) + " -> " + ", ".join(map(str, program.outputs))
    description = f"{program.name} on {program.platform}: {specs}"
    print(
        json.dumps({"accepted": True, "program": description, "from_cache": statistics.cache_hit})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
