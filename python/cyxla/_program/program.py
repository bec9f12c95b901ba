"""What `lower` produces: a program's StableHLO and everything needed to run it."""

from __future__ import annotations

import operator
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cyxla import _core
from cyxla._errors import DtypeError, InvalidArgumentError, UnsupportedProgramError
from cyxla._ffi.callbacks import PYTHON_CALLBACK_TARGET, refusal_hint
from cyxla._program.dtypes import SUPPORTED_NAMES, ElementType, as_dtype, dtype_of, element_type_of
from cyxla._program.output_tree import decode_tree, encode_tree, flat_tuple
from cyxla._version import __version__

__all__ = [
    "Program",
    "SpecRecords",
    "TensorSpec",
    "decode_specs",
    "encode_specs",
    "load_program",
    "program_file_bytes",
    "program_from_file_bytes",
]


def _supported_dtype(dtype: Any) -> np.dtype:
    """`dtype` as NumPy's; DtypeError unless cyxla carries it."""
    try:
        normalized = as_dtype(dtype)
    except TypeError as error:
        raise DtypeError(
            f"TensorSpec: dtype must be a NumPy dtype, given {dtype!r}; supported: "
            f"{SUPPORTED_NAMES}"
        ) from error
    if element_type_of(normalized) is None:
        raise DtypeError(
            f"TensorSpec: dtype {normalized} is not one cyxla carries; supported: {SUPPORTED_NAMES}"
        )
    return normalized


def _dimensions(shape: Any) -> tuple[int, ...]:
    """`shape` as a tuple of ints; TypeError or InvalidArgumentError unless it is one of
    sizes >= 0."""
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError as error:
        raise TypeError(f"TensorSpec: shape must be a sequence of ints, given {shape!r}") from error
    if any(d < 0 for d in dims):
        raise InvalidArgumentError(f"TensorSpec: dimensions must be >= 0, given {shape!r}")
    return dims


@dataclass(frozen=True)
class TensorSpec:
    """The shape and dtype of one input or output of a program.

    `dtype` is anything `np.dtype` takes, of a dtype cyxla carries (`SUPPORTED_DTYPES`);
    another raises DtypeError (a TypeError). A shape that is not a sequence of ints
    raises TypeError, and a negative dimension InvalidArgumentError (a ValueError).
    """

    shape: tuple[int, ...]
    dtype: np.dtype

    def __post_init__(self) -> None:
        # Frozen: the normalized values are set as the dataclass itself sets fields.
        object.__setattr__(self, "dtype", _supported_dtype(self.dtype))
        object.__setattr__(self, "shape", _dimensions(self.shape))

    @property
    def element_type(self) -> ElementType:
        """The PJRT element type, as native code names it (PJRT_Buffer_Type)."""
        element_type = element_type_of(self.dtype)
        assert element_type is not None, "__post_init__ admits supported dtypes only"
        return element_type

    @property
    def nbytes(self) -> int:
        """The size of an array of this shape and dtype, in bytes."""
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def __str__(self) -> str:
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"


class _OutputTree:
    """`Program.output_tree`: what was given, except that a structure read from a program
    file (`_StoredTree`) is decoded to a `jax.tree` structure, which imports JAX, only when
    first read: a process that only loads and runs programs never imports JAX."""

    def __get__(self, program: Any, owner: type | None = None) -> Any:
        if program is None:
            return self
        value = program.__dict__[_TREE_SLOT]
        if isinstance(value, _StoredTree):
            value = program.__dict__[_TREE_SLOT] = decode_tree(value.text)
        return value

    def __set__(self, program: Any, value: Any) -> None:
        program.__dict__[_TREE_SLOT] = value


#: Where a Program keeps its output structure, decoded or not.
_TREE_SLOT = "_output_tree"


@dataclass(frozen=True)
class _StoredTree:
    """An output structure as the output_tree line of a program file holds it (JSON)."""

    text: str


@dataclass(frozen=True)
class Program:
    """A lowered JAX function, ready for `compile_program`.

    Inputs are the flattened leaves of the arguments given to `lower`, and outputs the
    flattened leaves of the function's result in `jax.tree` order; `output_tree`
    rebuilds the result's structure from them (`jax.tree.unflatten`).
    """

    #: A portable StableHLO artifact (VHLO bytecode) at `stablehlo_version`.
    stablehlo: bytes = field(repr=False)
    stablehlo_version: str
    platform: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    #: The custom-call targets the program calls.
    custom_calls: tuple[str, ...]
    name: str
    output_tree: Any = field(repr=False, compare=False)
    #: The serialized xla.CompileOptionsProto of the program file it was loaded from,
    #: which `compile_program` uses when given no `options`; None for a program that
    #: `lower` made (cyxla's default options).
    compile_options: bytes | None = field(default=None, repr=False, compare=False)
    #: The outputs the program writes into parameters of its own, in order: the
    #: parameters after `inputs`, which `lower` adds on the CPU for large outputs, each
    #: aliasing one output, so that the result is written into the caller's memory.
    #: `compile_program` checks them against the compiled executable.
    donated_outputs: tuple[int, ...] = ()
    #: The Python functions the program calls back (host callbacks that `lower` kept, run
    #: by this process only), as messages name them.
    callbacks: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the program to a program file for `load_program`, here or in another
        process, or for cyxla's C and C++ loaders (docs/program-file.md).

        The file holds the StableHLO, the specs, the platform, the custom-call targets,
        the compile options `compile_program` uses with no overrides, the versions that
        lowered it and the output structure. It is written whole or not at all (a
        temporary file renamed into place), and created as the process creates any file
        (readable by others unless the umask says otherwise).

        Args:
            path: The file to write.

        Raises:
            UnsupportedProgramError: the program calls back into Python (`callbacks`:
                functions of this process only), or the output holds containers other than tuples,
                lists, dicts and None (a custom pytree node, which would have to import
                code to rebuild); save `dataclasses.replace(program, output_tree=None)`
                to keep its outputs as a flat tuple instead.
            ValueError: the program's name holds a line break.
            OSError: the file cannot be written (a missing directory, no permission).
        """
        _write_atomically(
            _file_path(path, "Program.save"), program_file_bytes(self, "Program.save")
        )

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        # A program pickles as its file's bytes: checked again when unpickled.
        return program_from_file_bytes, (program_file_bytes(self, "pickle"),)


# Set once the dataclass is made, which would take a descriptor in the class body for the
# field's default; its __init__ sets the field through it.
Program.output_tree = _OutputTree()


#: The one encoding of specs: (PJRT element type, dimensions) per tensor, as the C++ core
#: takes and reports them and as cache entries store them (JSON makes the pairs lists).
SpecRecords = list[tuple[int, list[int]]]


def encode_specs(specs: Iterable[TensorSpec]) -> SpecRecords:
    """`specs` in the one encoding."""
    return [(int(s.element_type), list(s.shape)) for s in specs]


def decode_specs(encoded: Iterable[Any]) -> tuple[TensorSpec, ...]:
    """The specs of an encoding; an element type may also be written by name ("F32"), as
    entries of cyxla's program cache were before. KeyError or ValueError if malformed."""
    return tuple(
        TensorSpec(
            tuple(int(d) for d in dims),
            dtype_of(ElementType[t] if isinstance(t, str) else ElementType(int(t))),
        )
        for t, dims in encoded
    )


def _file_path(path: Any, caller: str) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(
            f"{caller}: path must be a str or os.PathLike, given {type(path).__name__} {path!r}"
        )
    return Path(path)


def program_file_bytes(program: Program, writer: str) -> bytes:
    """The program file of `program`, written by the core (src/program/program_file.cpp);
    UnsupportedProgramError naming `writer` if its output structure cannot be kept,
    InvalidArgumentError (a ValueError) if a text field holds a line break."""
    if PYTHON_CALLBACK_TARGET in program.custom_calls:
        names = list(program.callbacks) or ["a Python function"]
        raise UnsupportedProgramError(
            f"{writer}: {program.name} calls back into Python ({', '.join(names)}), and its "
            "callbacks run only in the process that lowered it; lower the function without "
            f"them to keep the program{refusal_hint(names)}"
        )
    # A structure read from a file and not decoded since is written as the file held it,
    # and JAX's versions are its installed distributions': saving or pickling a loaded
    # program imports no JAX.
    stored = program.__dict__[_TREE_SLOT]
    tree = stored.text if isinstance(stored, _StoredTree) else None
    if tree is None and program.output_tree is not None:
        tree = encode_tree(program.output_tree, program.name, writer)
    from importlib import metadata  # where a program is written, not on a lean start

    options = program.compile_options
    if options is None:  # cyxla's defaults, which jaxlib makes (`lower` made the program)
        from cyxla._jax.compile_options import compile_options

        options = compile_options()
    return _core._pack_program_file(
        name=program.name,
        platform=program.platform,
        stablehlo_version=program.stablehlo_version,
        inputs=encode_specs(program.inputs),
        outputs=encode_specs(program.outputs),
        custom_calls=list(program.custom_calls),
        donated_outputs=list(program.donated_outputs),
        stablehlo=bytes(program.stablehlo),
        compile_options=options,
        cyxla_version=__version__,
        jax_version=metadata.version("jax"),
        jaxlib_version=metadata.version("jaxlib"),
        output_tree=tree,
    )


def _write_atomically(path: Path, data: bytes) -> None:
    """`data` as the file `path`, which other processes see whole or not at all."""
    # Not tempfile.mkstemp, whose files are private (0600): this one gets the mode any
    # new file of the process gets, 0666 less the umask.
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(temporary, flags, 0o666)
    except OSError as error:  # name the file asked for, not the temporary one
        raise type(error)(error.errno, error.strerror, str(path)) from None
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def program_from_file_bytes(data: bytes, source: str = "a pickled cyxla.Program") -> Program:
    """The program of a program file's bytes, read by the core; ProgramFileError, whose
    message starts with `source`, if they are not a program file this cyxla reads."""
    contents = _core._read_program_file(data, os.fsencode(source))
    outputs = decode_specs(contents["outputs"])
    tree = contents["output_tree"]
    return Program(
        stablehlo=contents["stablehlo"],
        stablehlo_version=contents["stablehlo_version"],
        platform=contents["platform"],
        inputs=decode_specs(contents["inputs"]),
        outputs=outputs,
        custom_calls=tuple(contents["custom_calls"]),
        name=contents["name"],
        output_tree=_StoredTree(flat_tuple(len(outputs)) if tree is None else tree),
        compile_options=contents["compile_options"],
        donated_outputs=tuple(contents["donated_outputs"]),
    )


def load_program(path: str | os.PathLike[str]) -> Program:
    """The program that `Program.save` wrote to `path`, ready for `compile_program`.

    Everything in the file is checked before it is used. A file without an output
    structure gives a program whose outputs are a flat tuple.

    Args:
        path: The program file.

    Returns:
        The program, as `lower` made it.

    Raises:
        ProgramFileError: the file is not a program file, was written by a newer cyxla,
            is truncated or has trailing bytes, was altered or corrupted, or holds
            malformed metadata; it names the file, and `reason` says which.
        OSError: the file cannot be read.
    """
    file = _file_path(path, "load_program")
    return program_from_file_bytes(file.read_bytes(), str(file))
