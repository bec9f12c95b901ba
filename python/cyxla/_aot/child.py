"""`python -m cyxla._aot.child PROGRAM NAME CPU DIRECTORY`: tfcompile for a named CPU, in
a process of its own (tfcompile.compile_program says why). Exits 0 with the files in
DIRECTORY, or with CHILD_REFUSED or CHILD_TOOLCHAIN and the reason as its last line."""

from __future__ import annotations

import sys
from pathlib import Path

from cyxla._aot import tfcompile
from cyxla._errors import AotToolchainError, UnsupportedProgramError
from cyxla._program.program import load_program


def main(argv: list[str]) -> int:
    path, name, target_cpu, directory = argv
    try:
        tfcompile.compile_here(load_program(path), name, target_cpu, Path(directory))
    except UnsupportedProgramError as refusal:
        print(str(refusal).replace("\n", " "), file=sys.stderr)
        return tfcompile.CHILD_REFUSED
    except AotToolchainError as error:
        print(str(error).replace("\n", " "), file=sys.stderr)
        return tfcompile.CHILD_TOOLCHAIN
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
