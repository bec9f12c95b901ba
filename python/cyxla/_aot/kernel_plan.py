"""What tfcompile's header says a compiled program does, read as a plan of kernel calls.

tfcompile (XLA's ahead-of-time compiler, shipped in the tensorflow-cpu wheel) writes the
program's kernels into an object file and, into a C++ header, the buffers they use and
the sequence of "thunks" that runs them. A program whose thunks are all kernel calls
needs nothing at run time but the kernels themselves, libc and libm: that is the plan
this module reads. Any other thunk (a sort, a copy, a loop, a conditional, a library
call into Eigen or oneDNN, a custom call) needs XLA's C++ runtime, and is refused.

The header is generated code, not an interface: every part is matched exactly, and a
header of another form is refused as one this cyxla does not know.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cyxla._errors import AotToolchainError, UnsupportedProgramError

__all__ = ["Buffer", "KernelArg", "KernelCall", "KernelPlan", "UnknownHeaderError", "read_plan"]


class UnknownHeaderError(AotToolchainError):
    """tfcompile's header is not in the form this cyxla reads: another TensorFlow."""


#: BufferAllocationInfo::Kind, packed into the low two bits of an encoded buffer's size.
_KINDS = ("constant", "temp", "parameter", "thread_local")


@dataclass(frozen=True)
class Buffer:
    """One buffer of the compiled program."""

    size: int
    kind: str  # one of _KINDS
    parameter: int | None  # the entry parameter it holds
    result: int | None  # the result it holds


@dataclass(frozen=True)
class KernelArg:
    buffer: int
    offset: int
    size: int


@dataclass(frozen=True)
class KernelCall:
    symbol: str
    args: tuple[KernelArg, ...]
    workgroups: tuple[int, int, int]


@dataclass(frozen=True)
class KernelPlan:
    buffers: tuple[Buffer, ...]
    #: The buffer of each entry parameter, in parameter order.
    parameter_buffers: tuple[int, ...]
    #: The buffer of each result, in result order.
    result_buffers: tuple[int, ...]
    calls: tuple[KernelCall, ...]
    #: The symbol of each constant buffer's contents, in buffer order.
    constant_symbols: tuple[str, ...]


def _section(header: str, pattern: str, what: str) -> re.Match[str]:
    match = re.search(pattern, header, re.S)
    if match is None:
        raise UnknownHeaderError(f"tfcompile's header has no {what} of the form cyxla reads")
    return match


def _index_table(header: str, table: str, count: str, what: str) -> tuple[int, ...]:
    """The integers of the header's `table[count] = {...}`: which buffer holds each of
    the program's parameters or results."""
    text = _section(header, rf"{table}\[{count}\] = \{{(.*?)\}};", what).group(1)
    return tuple(int(part) for part in text.split(",") if part.strip())


def _buffers(header: str) -> tuple[Buffer, ...]:
    body = _section(
        header, r"kBufferAllocationInfos\[kNumBuffers\] = \{(.*?)\};", "buffer table"
    ).group(1)
    count = int(_section(header, r"kNumBuffers = (\d+);", "buffer count").group(1))
    entries = re.findall(r"EncodedBufferAllocationInfo\{(\d+)ULL, (~0U|\d+U), (~0U|\d+U)\}", body)
    if len(entries) != count:
        raise UnknownHeaderError(f"tfcompile's header lists {len(entries)} of {count} buffers")

    def number(text: str) -> int | None:
        return None if text == "~0U" else int(text[:-1])  # ~0U: none

    return tuple(
        Buffer(int(packed) >> 2, _KINDS[int(packed) & 3], number(parameter), number(result))
        for packed, parameter, result in entries
    )


_KERNEL_ARG = re.compile(
    r"XLA_CPU_KernelArg\{reinterpret_cast<std::byte\*>\(buffer_table\[(\d+)\]\) \+ (\d+), (\d+)\}"
)
_KERNEL = re.compile(
    r"std::array<XLA_CPU_KernelArg, (\d+)> args = \{(.*?)\};\s*"
    r"XLA_CPU_NumWorkGroups kernel_thread_dims = \{\s*(\d+),\s*(\d+),\s*(\d+),\s*\};\s*"
    r"for \(uint64_t z = 0; z < \5; \+\+z\) \{\s*"
    r"for \(uint64_t y = 0; y < \4; \+\+y\) \{\s*"
    r"for \(uint64_t x = 0; x < \3; \+\+x\) \{\s*"
    r"XLA_CPU_WorkGroupId kernel_thread = \{x, y, z\};\s*"
    r"XLA_CPU_KernelCallFrame call_frame = \{\s*&kernel_thread_dims, &kernel_thread, "
    r"args\.size\(\), args\.data\(\)\};\s*"
    r"XLA_CPU_KernelError\* error = \(\*(\w+)\)\(&call_frame\);\s*"
    r"if \(ABSL_PREDICT_FALSE\(error != nullptr\)\) \{\s*return false;\s*\}"
    r"\s*\}\s*\}\s*\}\s*\}\s*$",
    re.S,
)


def _calls(header: str, program: str) -> tuple[KernelCall, ...]:
    body = _section(
        header,
        r"ThunkRunImplFunction\(\) \{\s*return \[\]\(void\*\* buffer_table, "
        r"xla::ExecutableRunOptions\* run_options,\s*"
        r"std::vector<std::unique_ptr<xla::cpu::RngState>>& rng_states\) \{(.*?)"
        r"\n\s*return true;\s*\};\s*\}",
        "thunk sequence",
    ).group(1)
    kinds = re.findall(r"// ([A-Z][\w ]*?) Thunk\n", body)
    others = sorted({kind for kind in kinds if kind != "Kernel"})
    if others:
        raise UnsupportedProgramError(
            f"export_aot: {program} compiles to XLA runtime steps beyond kernel calls "
            f"({', '.join(k + ' thunk' for k in others)}), which need XLA's C++ runtime: "
            "only programs that compile to kernels alone can become plain C (sorts, "
            "loops and conditionals XLA runs as steps of their own, large dots, random number "
            "generation and custom calls cannot); run this one through a plugin instead"
        )
    blocks = re.split(r"\s*// Kernel Thunk\n\s*\{", body)
    if blocks[0].strip():
        raise UnknownHeaderError("tfcompile's thunk sequence starts with something unknown")
    calls = []
    for block in blocks[1:]:
        match = _KERNEL.match(block.strip())
        if match is None:
            raise UnknownHeaderError("a kernel call in tfcompile's header is of an unknown form")
        count, args_text, x, y, z, symbol = match.groups()
        args = tuple(KernelArg(*map(int, arg)) for arg in _KERNEL_ARG.findall(args_text))
        if len(args) != int(count):
            raise UnknownHeaderError(f"kernel {symbol} lists {len(args)} of {count} arguments")
        calls.append(KernelCall(symbol, args, (int(x), int(y), int(z))))
    return tuple(calls)


def _constant_symbols(header: str) -> tuple[str, ...]:
    body = _section(
        header,
        r"EmbeddedConstantBuffers\(\) \{\s*return\s*\{(.*?)\};\s*;\s*\}",
        "constant buffers",
    ).group(1)
    symbols = tuple(re.findall(r"\}\((\w+)\)", body))
    # Each is the same lambda: an 8-byte size, the data 64 bytes in.
    if body.count("return {buffer_size, buffer + 64};") != len(symbols):
        raise UnknownHeaderError("tfcompile's constant buffers are of an unknown form")
    return symbols


def read_plan(header: str, program: str) -> KernelPlan:
    """The plan of tfcompile's header `header` for the program named `program`.

    Raises UnsupportedProgramError for a program that needs more than kernel calls, and
    UnknownHeaderError for a header this cyxla cannot read.
    """
    rng = _section(header, r"RngStateDeltas\(\) \{\s*return \{(.*?)\};", "random state").group(1)
    if rng.strip():
        raise UnsupportedProgramError(
            f"export_aot: {program} keeps random number generator state between calls, "
            "which needs XLA's C++ runtime"
        )
    buffers = _buffers(header)
    parameters = _index_table(header, "kArgIndexToBufferIndex", "kNumArgs", "parameters")
    results = _index_table(header, "kResultIndexToBufferIndex", "kNumResults", "results")
    constants = _constant_symbols(header)
    if len(constants) != sum(b.kind == "constant" for b in buffers):
        raise UnknownHeaderError("tfcompile's header names constants for other buffers")
    if any(b >= len(buffers) for b in parameters + results):
        raise UnknownHeaderError("tfcompile's header maps arguments to buffers it lacks")
    if any(b.parameter is not None and b.result is not None for b in buffers):
        # XlaCallModule drops the module's aliasing: a result written over a parameter
        # (the caller's input) is not what this cyxla expects tfcompile to make.
        raise UnknownHeaderError("tfcompile's header writes a result over a parameter")
    calls = _calls(header, program)
    for call in calls:
        for arg in call.args:
            if arg.buffer >= len(buffers) or arg.offset + arg.size > buffers[arg.buffer].size:
                raise UnknownHeaderError(f"kernel {call.symbol} reads beyond its buffers")
    return KernelPlan(buffers, parameters, results, calls, constants)
