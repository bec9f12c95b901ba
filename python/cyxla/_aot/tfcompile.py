"""A program's StableHLO compiled ahead of time by tfcompile, XLA's AOT compiler as the
tensorflow-cpu wheel ships it (the optional `aot` extra).

The StableHLO goes into one `XlaCallModule` op, fed by a placeholder per parameter, as
jax2tf's native serialization does: nothing is traced again, so a program read from a
file compiles as one fresh from `lower`. tfcompile writes the kernels into an object
file, their constants into another, and the plan that calls them into a C++ header.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cyxla._errors import AotToolchainError, InvalidArgumentError, UnsupportedProgramError
from cyxla._program.program import Program, TensorSpec

__all__ = [
    "CHILD_REFUSED",
    "CHILD_TOOLCHAIN",
    "TESTED_TENSORFLOW",
    "Compiled",
    "compile_here",
    "compile_program",
    "tensorflow",
]

#: The tensorflow-cpu releases whose tfcompile output and kernel ABI this cyxla reads
#: (the `aot` extra pins the same range).
TESTED_TENSORFLOW = ("2.21",)
#: The XlaCallModule version of the op: a module whose main takes the parameters alone.
_CALL_MODULE_VERSION = 9
#: The exit statuses of cyxla._aot.child for a refused program and a missing toolchain.
CHILD_REFUSED = 3
CHILD_TOOLCHAIN = 4
#: XLA's options for tfcompile where TensorFlow's defaults differ from what JAX compiles
#: with: max and min propagate NaN, as jax.jit's do (TensorFlow's XLA drops it).
_XLA_FLAGS = "--xla_cpu_enable_fast_min_max=false"


def tensorflow() -> Any:
    """TensorFlow, imported once the tested version is known to be installed."""
    from importlib import metadata

    try:
        version = metadata.version("tensorflow-cpu")
    except metadata.PackageNotFoundError:
        try:
            version = metadata.version("tensorflow")
        except metadata.PackageNotFoundError:
            raise AotToolchainError(
                'export_aot needs tensorflow-cpu, for its AOT compiler: pip install "cyxla[aot]"'
            ) from None
    if not version.startswith(tuple(v + "." for v in TESTED_TENSORFLOW)):
        raise AotToolchainError(
            f"export_aot reads the output of tensorflow-cpu {', '.join(TESTED_TENSORFLOW)}.x, "
            f"and {version} is installed: its kernel ABI and generated code may differ. "
            'Install the tested one: pip install "cyxla[aot]"'
        )
    import tensorflow as tf

    return tf


@dataclass(frozen=True)
class Compiled:
    """tfcompile's files for one program."""

    kernels: Path  # the object file of the kernels
    constants: Path  # the object file of the constants' contents
    header: str  # the C++ header, read as the plan of kernel calls


#: What tfcompile writes into the directory it is given.
_KERNELS, _CONSTANTS, _HEADER = "kernels.o", "constants.o", "tfcompile.h"


def _compiled(directory: Path) -> Compiled:
    return Compiled(directory / _KERNELS, directory / _CONSTANTS, (directory / _HEADER).read_text())


def _parameters(program: Program) -> tuple[TensorSpec, ...]:
    """The module's parameters: the inputs, then one per output written in place."""
    return program.inputs + tuple(program.outputs[j] for j in program.donated_outputs)


def target_triple() -> str:
    machine = platform.machine().lower()
    if platform.system() != "Linux" or machine not in ("x86_64", "aarch64"):
        raise AotToolchainError(
            f"export_aot compiles for Linux on x86-64 or AArch64, not {platform.system()} "
            f"on {platform.machine()}"
        )
    return f"{machine}-pc-linux" if machine == "x86_64" else "aarch64-unknown-linux-gnu"


def _write_graph(tf: Any, program: Program, directory: Path) -> tuple[Path, Path]:
    from google.protobuf import text_format
    from tensorflow.compiler.tf2xla import tf2xla_pb2
    from tensorflow.compiler.tf2xla.python import xla as tfxla

    parameters = _parameters(program)
    graph = tf.Graph()
    with graph.as_default():
        feeds = [
            tf.compat.v1.placeholder(tf.as_dtype(s.dtype), s.shape, name=f"parameter_{i}")
            for i, s in enumerate(parameters)
        ]
        results = tfxla.call_module(
            feeds,
            version=_CALL_MODULE_VERSION,
            module=program.stablehlo,
            Tout=[tf.as_dtype(s.dtype) for s in program.outputs],
            Sout=[s.shape for s in program.outputs],
            platforms=["CPU"],
        )
        fetches = [tf.identity(r, name=f"result_{j}") for j, r in enumerate(results)]
    # tfcompile's feeds and fetches: the op's parameters and results, by tensor.
    config = tf2xla_pb2.Config()
    for kind, entries, tensors, specs in (
        (tf2xla_pb2.Feed, config.feed, feeds, parameters),
        (tf2xla_pb2.Fetch, config.fetch, fetches, program.outputs),
    ):
        for tensor, spec in zip(tensors, specs, strict=True):
            entries.append(
                kind(
                    id=tf2xla_pb2.TensorId(node_name=tensor.op.name),
                    name=tensor.op.name,
                    type=tensor.dtype.as_datatype_enum,
                    shape=tf.TensorShape(spec.shape).as_proto(),
                )
            )
    graph_path, config_path = directory / "graph.pb", directory / "config.pbtxt"
    graph_path.write_bytes(graph.as_graph_def().SerializeToString())
    config_path.write_text(text_format.MessageToString(config))
    return graph_path, config_path


@contextmanager
def _tfcompile_flags() -> Iterator[None]:
    """XLA_FLAGS set to cyxla's options for tfcompile, and put back after. TensorFlow's XLA
    reads them once, at its first compile in the process; the caller's own XLA_FLAGS are
    meant for JAX and the plugin, whose XLA may know flags this one does not."""
    before = os.environ.get("XLA_FLAGS")
    os.environ["XLA_FLAGS"] = _XLA_FLAGS
    try:
        yield
    finally:
        if before is None:
            del os.environ["XLA_FLAGS"]
        else:
            os.environ["XLA_FLAGS"] = before


def compile_program(program: Program, name: str, target_cpu: str, directory: Path) -> Compiled:
    """tfcompile's kernels, constants and header for `program`, written under `directory`.

    `target_cpu` is LLVM's CPU name ("" for the generic CPU of the architecture). A named
    CPU is compiled for in a process of its own: LLVM stops the process it runs in on a
    CPU name it does not know, and no check here knows LLVM's names. Raises
    UnsupportedProgramError when tfcompile refuses the program, InvalidArgumentError for
    a CPU LLVM does not know, and AotToolchainError when TensorFlow is missing or of an
    untested version, or tfcompile stopped.
    """
    if not target_cpu:
        return compile_here(program, name, target_cpu, directory)
    path = directory / "program.cyxla"
    program.save(path)
    command = [
        sys.executable,
        "-m",
        "cyxla._aot.child",
        str(path),
        name,
        target_cpu,
        str(directory),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)
    said = done.stderr.strip()
    if done.returncode == 0:
        return _compiled(directory)
    if done.returncode == CHILD_REFUSED:
        raise UnsupportedProgramError(said.splitlines()[-1])
    if done.returncode == CHILD_TOOLCHAIN:
        raise AotToolchainError(said.splitlines()[-1])
    if "is not a recognized processor" in said:
        raise InvalidArgumentError(
            f"export_aot: LLVM does not know the CPU {target_cpu!r} (tfcompile stopped): name "
            'one LLVM knows, such as "skylake-avx512" or "znver3", or use "generic" or "host"'
        )
    raise AotToolchainError(
        f"export_aot: tfcompile stopped (exit status {done.returncode}) compiling "
        f"{program.name} for the CPU {target_cpu!r}:\n{said[-2000:]}"
    )


def compile_here(program: Program, name: str, target_cpu: str, directory: Path) -> Compiled:
    """`compile_program` in this process."""
    tf = tensorflow()
    from tensorflow.python import _pywrap_tfcompile

    graph, config = _write_graph(tf, program, directory)
    # The class and entry names prefix the kernels' symbols: the program's own name keeps
    # two exported programs linkable into one binary.
    try:
        with _tfcompile_flags():
            _pywrap_tfcompile.Compile(
                graph=str(graph),
                config=str(config),
                cpp_class=f"cyxla_aot_{name}",
                target_triple=target_triple(),
                target_cpu=target_cpu,
                target_features="",
                entry_point=f"cyxla_aot_{name}_entry",
                out_function_object=str(directory / _KERNELS),
                out_header=str(directory / _HEADER),
                out_metadata_object=str(directory / "metadata.o"),
                out_constant_buffers_object=str(directory / _CONSTANTS),
                gen_name_to_index=True,
                gen_program_shape=False,
            )
    except Exception as error:  # tfcompile raises its status as a plain exception
        message = re.sub(r"\s+", " ", str(error)).strip()
        raise UnsupportedProgramError(
            f"export_aot: tfcompile could not compile {program.name}: {message}"
        ) from None
    return _compiled(directory)
