"""`export_aot`: a program compiled ahead of time into C that calls its kernels directly:
a header, an object file and a shared library that need libc and libm alone."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cyxla._aot import c_source, kernel_plan, tfcompile
from cyxla._errors import AotToolchainError, InvalidArgumentError, UnsupportedProgramError
from cyxla._program.program import Program, load_program
from cyxla._version import __version__

__all__ = ["AotLibrary", "export_aot"]

#: C's keywords, which no entry point may be named.
_C_KEYWORDS = frozenset(
    [
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
    ]
)


@dataclass(frozen=True)
class AotLibrary:
    """What `export_aot` wrote: the entry point's header, and the program as an object
    file and as a shared library (each holds the entry point, the kernels and their
    constants)."""

    name: str
    header: Path
    object_file: Path
    shared_library: Path
    #: LLVM's name of the CPU the kernels were compiled for ("generic": any CPU of the
    #: architecture).
    target_cpu: str
    #: The bytes of 64-byte aligned scratch memory a call needs (the header's
    #: NAME_SCRATCH_BYTES).
    scratch_bytes: int


def _entry_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name in _C_KEYWORDS:
        raise InvalidArgumentError(
            f"export_aot: name must be a C identifier (letters, digits, _; not a keyword), "
            f"given {name!r}"
        )
    return name


def _default_name(program: Program) -> str:
    name = re.sub(r"\W", "_", program.name, flags=re.ASCII) or "program"
    if name[0].isdigit() or name in _C_KEYWORDS:
        name = "program_" + name
    return name


def _compiler() -> str:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise AotToolchainError(
            "export_aot needs a C compiler (cc, or the one $CC names) to build the library"
        )
    return compiler


def _run(command: list[str], what: str) -> str:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise AotToolchainError(
            f"export_aot: {what} failed ({' '.join(command)}):\n{result.stderr.strip()}"
        )
    return result.stdout + result.stderr


def _host_cpu(compiler: str) -> str:
    """LLVM's name of this machine's CPU, as the C compiler resolves -march=native: GCC
    says it with -Q --help=target, clang in the command lines -### prints."""
    if "clang" in Path(compiler).name:
        said = _run([compiler, "-march=native", "-###", "-x", "c", "-c", "/dev/null"], "clang")
        found = re.search(r'"-target-cpu" "([^"]+)"', said)
    else:
        said = _run([compiler, "-march=native", "-Q", "--help=target"], "asking for the CPU")
        found = re.search(r"-march=\s+(\S+)", said)
    if found is None:
        raise AotToolchainError(
            f'export_aot: {compiler} did not say which CPU this is; name it: target="znver3"'
        )
    return found.group(1)


def _target_cpu(target: str, compiler: str) -> str:
    if target == "generic":
        return ""
    if target == "host":
        return _host_cpu(compiler)
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", target):
        raise InvalidArgumentError(
            f'export_aot: target is "generic", "host" or an LLVM CPU name such as '
            f'"skylake-avx512" or "znver3", given {target!r}'
        )
    return target


def _check_kernel_abi() -> None:
    """Refuses a TensorFlow whose kernel ABI is not the one the generated C declares."""
    tf = tfcompile.tensorflow()
    path = Path(tf.__file__).parent / "include/xla/backends/cpu/runtime/kernel_c_api.h"
    try:
        text = path.read_text()
    except OSError as error:
        raise AotToolchainError(
            f"export_aot: TensorFlow's kernel ABI header is missing ({error})"
        ) from None
    code = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    code = re.sub(r"\s+", " ", code)
    missing = [part for part in c_source.XLA_KERNEL_ABI if part not in code]
    if missing:
        raise AotToolchainError(
            f"export_aot: TensorFlow {tf.__version__}'s kernel ABI ({path}) is not the one "
            f"this cyxla knows; it lacks: {missing[0]}"
        )


def export_aot(
    program: Program | str | os.PathLike[str],
    directory: str | os.PathLike[str],
    *,
    name: str | None = None,
    target: str = "generic",
) -> AotLibrary:
    """Compiles `program` ahead of time into C that calls its kernels directly.

    Writes `NAME.h`, `NAME.o` and `libNAME.so` into `directory` (made if missing). The
    header declares one entry point, `int NAME(const void* const* inputs, void* const*
    outputs, void* scratch)`, with the statuses and the specs as constants; the object
    and the library need libc and libm alone at run time: no PJRT, Python or TensorFlow.
    Needs tensorflow-cpu at export time (`pip install "cyxla[aot]"`) and a C compiler.

    Args:
        program: a `Program` from `lower`, or the path of a program file.
        directory: where the files go.
        name: the entry point's name, a C identifier; by default the program's name.
        target: "generic" (any CPU of the architecture, the default), "host" (this
            machine's CPU: faster, but may not run on older CPUs) or an LLVM CPU name.

    Returns:
        The files written, the target CPU and the scratch memory a call needs.

    Raises:
        UnsupportedProgramError: the program needs more than kernel calls (a sort, a
            loop or conditional XLA runs as a step of its own, a large dot, a custom
            call), takes or returns complex numbers, was lowered for another platform
            than the CPU, or tfcompile refused it.
        InvalidArgumentError: `name` or `target` is not one.
        AotToolchainError: tensorflow-cpu is missing or untested, what its tfcompile wrote
            is not in the form cyxla reads, or the C compiler failed.
    """
    if not isinstance(program, Program):
        program = load_program(program)
    name = _entry_name(name) if name is not None else _default_name(program)
    if program.platform != "cpu":
        raise UnsupportedProgramError(
            f"export_aot: {program.name} was lowered for {program.platform}; AOT objects run "
            "on the CPU: lower it in a process whose plugin is the CPU's "
            "(cyxla.initialize(platform='cpu') before lower)"
        )
    complex_specs = [str(s) for s in program.inputs + program.outputs if s.dtype.kind == "c"]
    if complex_specs:
        raise UnsupportedProgramError(
            f"export_aot: {program.name} takes or returns complex numbers "
            f"({', '.join(complex_specs)}), which tfcompile has no C type for: pass real and "
            "imaginary parts as separate float arrays"
        )
    if program.custom_calls:
        raise UnsupportedProgramError(
            f"export_aot: {program.name} calls {', '.join(program.custom_calls)}, which "
            "need XLA's runtime (custom calls): run it through a plugin instead"
        )
    compiler = _compiler()
    target_cpu = _target_cpu(target, compiler)
    _check_kernel_abi()
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cyxla-aot-") as temporary:
        work = Path(temporary)
        compiled = tfcompile.compile_program(program, name, target_cpu, work)
        plan = kernel_plan.read_plan(compiled.header, program.name)
        layout = c_source.layout_of(plan, len(program.inputs), program.donated_outputs)
        header = c_source.header_text(
            name,
            program=program.name,
            inputs=program.inputs,
            outputs=program.outputs,
            scratch_bytes=layout.scratch_bytes,
            target=target_cpu or "generic",
            generator=f"cyxla {__version__} (export_aot)",
        )
        header_path = out / f"{name}.h"
        header_path.write_text(header)
        source = work / f"{name}.c"
        source.write_text(
            c_source.source_text(name, plan, layout, inputs=program.inputs, outputs=program.outputs)
        )
        entry = work / "entry.o"
        flags = ["-std=c99", "-O2", "-fPIC", "-Wall", "-Wextra", "-Werror"]
        _run([compiler, *flags, f"-I{out}", "-c", str(source), "-o", str(entry)], "compiling")
        parts = [str(entry), str(compiled.kernels), str(compiled.constants)]
        object_file, library = out / f"{name}.o", out / f"lib{name}.so"
        _run([compiler, "-r", "-nostdlib", *parts, "-o", str(object_file)], "linking the object")
        _run([compiler, "-shared", *parts, "-lm", "-o", str(library)], "linking the library")
    return AotLibrary(
        name, header_path, object_file, library, target_cpu or "generic", layout.scratch_bytes
    )
