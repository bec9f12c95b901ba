"""`python -m cyxla export MODULE:FUNCTION --arg f32[16,64] ... -o model.cyxla`: lower a
function of an importable module at the given argument specs and save it as a program
file (`Program.save`), for `load_program` or the C and C++ loaders. With `--aot`, compile
it (or a program file) ahead of time into a C header, object and library instead
(`export_aot`)."""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from cyxla._errors import (
    AotToolchainError,
    InvalidArgumentError,
    ProgramFileError,
    UnsupportedProgramError,
)
from cyxla._lower.lowering import lower
from cyxla._program.dtypes import SUPPORTED_DTYPES, ElementType, dtype_of
from cyxla._program.program import Program, load_program

__all__ = ["add_arguments", "main", "parse_source", "parse_spec", "parse_target"]

#: Every dtype spelling `--arg` takes: the element type's name in lower case ("f32",
#: "bf16", "pred"), "i8" to "i64" for the signed ones, and NumPy's names ("float32").
_DTYPES: dict[str, np.dtype] = {
    **{t.name.lower(): dtype_of(t) for t in ElementType},
    **{f"i{bits}": np.dtype(f"int{bits}") for bits in (8, 16, 32, 64)},
    **{d.name: d for d in SUPPORTED_DTYPES},
}
_SPEC = re.compile(r"(\w+)\[([^\]]*)\]")


def parse_spec(text: str) -> jax.ShapeDtypeStruct:
    """`f32[16,64]` (or `f32[]` for a scalar) as a spec; ArgumentTypeError saying why not."""
    match = _SPEC.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not DTYPE[DIMS], e.g. f32[16,64], or f32[] for a scalar"
        )
    name, dims_text = match.groups()
    dtype = _DTYPES.get(name.lower())
    if dtype is None:
        raise argparse.ArgumentTypeError(
            f"unknown dtype {name!r} in {text!r}; known: {', '.join(_DTYPES)}"
        )
    parts = [d.strip() for d in dims_text.split(",")] if dims_text.strip() else []
    if not all(p.isdigit() for p in parts):
        raise argparse.ArgumentTypeError(
            f"the dimensions of {text!r} must be integers >= 0, separated by commas"
        )
    return jax.ShapeDtypeStruct(tuple(int(p) for p in parts), dtype)


def parse_target(text: str) -> tuple[str, str]:
    """`package.module:function` (the function may be `object.attribute`) as its parts."""
    module, colon, function = text.partition(":")
    if not colon or not module or not function or ":" in function:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not MODULE:FUNCTION, e.g. my_package.models:predict"
        )
    return module, function


def parse_source(text: str) -> tuple[str, str] | Path:
    """A program file that exists, or `package.module:function`."""
    if ":" not in text and Path(text).is_file():
        return Path(text)
    return parse_target(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        type=parse_source,
        metavar="MODULE:FUNCTION",
        help="the function to export, imported from an importable module (with --aot, a "
        "program file too)",
    )
    parser.add_argument(
        "--arg",
        dest="args",
        type=parse_spec,
        action="append",
        default=[],
        metavar="DTYPE[DIMS]",
        help="one per positional argument, in order: e.g. f32[16,64], s32[], bf16[8]",
    )
    parser.add_argument(
        "--custom-call",
        dest="custom_calls",
        action="append",
        default=[],
        metavar="TARGET",
        help="a custom-call target the function calls beyond those cyxla trusts",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        help="the program file to write, e.g. model.cyxla; with --aot, the directory",
    )
    parser.add_argument(
        "--aot",
        action="store_true",
        help="compile ahead of time into NAME.h, NAME.o and libNAME.so, which need libc "
        'and libm alone (needs the aot extra: pip install "cyxla[aot]")',
    )
    parser.add_argument(
        "--name", help="with --aot: the entry point's name (default: the function's name)"
    )
    parser.add_argument(
        "--target",
        dest="target_cpu",
        default="generic",
        metavar="CPU",
        help="with --aot: generic (any CPU of the architecture, the default), host (this "
        "machine's: faster, may not run on older CPUs) or an LLVM CPU name, e.g. znver3",
    )


def _function(module_name: str, path: str) -> Callable[..., Any]:
    """The callable at `path` in the module; LookupError or ImportError saying why not."""
    # `python -m` puts the working directory first on sys.path; the `cyxla` script does not.
    if "" not in sys.path:
        sys.path.insert(0, "")
    module = importlib.import_module(module_name)
    found: Any = module
    for part in path.split("."):
        if not hasattr(found, part):
            raise LookupError(f"the module {module_name} has no attribute {path!r}")
        found = getattr(found, part)
    if not callable(found):
        raise LookupError(f"{module_name}:{path} is not callable: {found!r:.80}")
    return found


def _export_aot(program: Program, args: argparse.Namespace) -> int:
    from cyxla._aot import export_aot

    try:
        library = export_aot(program, args.output, name=args.name, target=args.target_cpu)
    except (AotToolchainError, UnsupportedProgramError, InvalidArgumentError) as error:
        print(f"cyxla export: {error}", file=sys.stderr)
        return 1
    taken = ", ".join(map(str, program.inputs))
    print(
        f"wrote {library.header}, {library.object_file.name} and "
        f"{library.shared_library.name}: {library.name}({taken}) for the {library.target_cpu} CPU"
    )
    print(
        f"  outputs: {', '.join(map(str, program.outputs))}; scratch: {library.scratch_bytes} bytes"
    )
    return 0


def main(args: argparse.Namespace) -> int:
    if isinstance(args.target, Path):
        if not args.aot:
            print(
                f"cyxla export: {args.target} is a program file already; --aot compiles one "
                "ahead of time",
                file=sys.stderr,
            )
            return 2
        try:
            program = load_program(args.target)
        except (OSError, ProgramFileError) as error:
            print(f"cyxla export: {error}", file=sys.stderr)
            return 1
        return _export_aot(program, args)
    module_name, path = args.target
    where = f"{module_name}:{path}"
    try:
        function = _function(module_name, path)
    except LookupError as error:
        print(f"cyxla export: {error}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as error:
        print(
            f"cyxla export: cannot import {module_name}: {error} (run from the directory "
            "that holds it, set PYTHONPATH, or install its package)",
            file=sys.stderr,
        )
        return 2
    except Exception as error:  # whatever importing the user's module raised
        traceback.print_exc()
        print(f"cyxla export: cannot import {module_name}: {error!r}", file=sys.stderr)
        return 2
    try:
        program = lower(function, args.args, custom_calls=args.custom_calls)
        if args.aot:
            return _export_aot(program, args)
        program.save(args.output)
    except Exception as error:  # tracing, lowering or writing: the user's to fix
        print(f"cyxla export: {where} at {_specs(args.args)}: {error}", file=sys.stderr)
        return 1
    # The program's specs, not the ones asked for: without 64-bit mode a float64 argument
    # lowers to float32, which is what the file takes.
    taken = ", ".join(map(str, program.inputs))
    print(f"wrote {args.output}: {program.name}({taken}) on {program.platform}")
    outputs = ", ".join(map(str, program.outputs))
    print(
        f"  outputs: {outputs or 'none'}; custom calls: {', '.join(program.custom_calls) or 'none'}"
    )
    return 0


def _specs(specs: list[jax.ShapeDtypeStruct]) -> str:
    return ", ".join(f"{np.dtype(s.dtype).name}[{','.join(map(str, s.shape))}]" for s in specs)
