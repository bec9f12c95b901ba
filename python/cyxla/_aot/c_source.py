"""The C header and source of an exported program: one entry point that runs the plan's
kernel calls over the caller's memory, and the program's specs as constants.

The kernels follow XLA's CPU kernel ABI (`xla/backends/cpu/runtime/kernel_c_api.h`): a
kernel takes a call frame (the workgroup count, this workgroup's id, and its buffer
arguments as pointer and size) and returns NULL on success. The source declares those
structs itself, field for field, so it compiles as plain C with no TensorFlow header.
"""

from __future__ import annotations

from dataclasses import dataclass

from cyxla._abi import HOST_ALIGNMENT
from cyxla._aot import kernel_plan
from cyxla._aot.kernel_plan import KernelPlan
from cyxla._program.program import TensorSpec

__all__ = ["ALIGNMENT", "XLA_KERNEL_ABI", "Layout", "header_text", "layout_of", "source_text"]

#: What every input, output and the scratch memory must be aligned to: XLA's alignment of
#: CPU buffers (xla::cpu::Align()), which kernels may use aligned vector loads on; the
#: same the CPU plugin needs to read memory in place, and that cyxla.empty gives.
ALIGNMENT = HOST_ALIGNMENT

#: XLA's CPU kernel ABI as kernel_c_api.h spells it (comments dropped, spaces collapsed),
#: which export_aot finds in the installed TensorFlow's header before it generates C
#: that declares the same structs itself (source_text: aot_dims, aot_arg, aot_frame).
XLA_KERNEL_ABI = (
    "typedef struct XLA_CPU_NumWorkGroups { uint64_t x; uint64_t y; uint64_t z; }",
    "typedef struct XLA_CPU_WorkGroupId { uint64_t x; uint64_t y; uint64_t z; }",
    "typedef struct XLA_CPU_KernelArg { void* data; size_t size; } XLA_CPU_KernelArg;",
    "typedef struct XLA_CPU_KernelCallFrame { const XLA_CPU_NumWorkGroups* num_workgroups; "
    "const XLA_CPU_WorkGroupId* workgroup_id; size_t num_args; const XLA_CPU_KernelArg* args; "
    "} XLA_CPU_KernelCallFrame;",
    "typedef XLA_CPU_KernelError* XLA_CPU_Kernel( const XLA_CPU_KernelCallFrame* call_frame);",
)

#: The statuses of an entry point, in order, and what each means.
STATUSES = (
    ("OK", "the outputs hold the results"),
    ("ERROR_NULL", "a pointer that must not be NULL is (inputs, outputs, an array, scratch)"),
    ("ERROR_UNALIGNED", "an input, output or the scratch memory is not 64-byte aligned"),
    ("ERROR_OVERLAP", "an output overlaps an input or another output"),
    ("ERROR_KERNEL", "a kernel reported an error"),
)


@dataclass(frozen=True)
class Layout:
    """Where each buffer of the plan lives during a call, as C expressions."""

    #: Per buffer: its pointer expression (inputs, outputs, scratch or a constant).
    pointers: tuple[str, ...]
    #: (output, expression, bytes): results copied into outputs after the kernels ran.
    copies: tuple[tuple[int, str, int], ...]
    scratch_bytes: int


def _round_up(size: int) -> int:
    return (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def layout_of(plan: KernelPlan, inputs: int, donated_outputs: tuple[int, ...]) -> Layout:
    """The plan's buffers placed: entry parameters at the inputs (and the parameters a
    program adds for its donated outputs at those outputs), results at the outputs, the
    constants at their contents, and every other buffer a kernel uses in scratch memory."""
    if len(plan.parameter_buffers) != inputs + len(donated_outputs):
        raise kernel_plan.UnknownHeaderError(
            f"tfcompile compiled {len(plan.parameter_buffers)} parameters, not the program's "
            f"{inputs} inputs and {len(donated_outputs)} outputs written in place"
        )
    used = {arg.buffer for call in plan.calls for arg in call.args}
    pointers: list[str | None] = [None] * len(plan.buffers)
    constant = 0
    for b, buffer in enumerate(plan.buffers):
        if buffer.kind == "constant":
            # The contents hold an 8-byte size, then the data from 64 bytes in.
            pointers[b] = f"(void*)(aot_constant_{constant} + 64)"
            constant += 1
    for p, b in enumerate(plan.parameter_buffers):
        if p < inputs:
            pointers[b] = f"(void*)inputs[{p}]"
        else:  # never read: the program's result is written there when aliasing is on
            pointers[b] = f"outputs[{donated_outputs[p - inputs]}]"
    copies = []
    for j, b in enumerate(plan.result_buffers):
        if pointers[b] is None:
            pointers[b] = f"outputs[{j}]"
        else:  # a result that is a parameter, a constant or another result
            copies.append((j, pointers[b], plan.buffers[b].size))
    scratch = 0
    for b, buffer in enumerate(plan.buffers):
        if pointers[b] is None and b in used:
            pointers[b] = f"(void*)((char*)scratch + {scratch})"
            scratch += _round_up(buffer.size)
    return Layout(tuple(p or "0" for p in pointers), tuple(copies), scratch)


def _spec_lines(prefix: str, side: str, specs: tuple[TensorSpec, ...]) -> list[str]:
    lines = []
    for i, spec in enumerate(specs):
        macro = f"{prefix}_{side.upper()}_{i}"
        lines += [
            f"/* {side} {i}: {spec} */",
            f'#define {macro}_DTYPE "{spec.dtype.name}"',
            f"#define {macro}_RANK {len(spec.shape)}",
            f"#define {macro}_BYTES {spec.nbytes}",
        ]
        if spec.shape:
            dims = ", ".join(map(str, spec.shape))
            lines.append(f"static const int64_t {macro}_DIMS[{len(spec.shape)}] = {{{dims}}};")
    return lines


def header_text(
    name: str,
    *,
    program: str,
    inputs: tuple[TensorSpec, ...],
    outputs: tuple[TensorSpec, ...],
    scratch_bytes: int,
    target: str,
    generator: str,
) -> str:
    """The header of the entry point `name`."""
    prefix = name.upper()
    guard = f"CYXLA_AOT_{prefix}_H_"
    statuses = [
        f"#define {prefix}_{status} {code} /* {meaning} */"
        for code, (status, meaning) in enumerate(STATUSES)
    ]
    lines = [
        # A name could close the comment: its "*/" is broken up.
        f"/* {name}: the program {program.replace('*/', '* /')!r} compiled ahead of time by "
        f"{generator}.",
        f" * Target CPU: {target}. Needs libc and libm at run time, nothing else.",
        " *",
        f" *     int status = {name}(inputs, outputs, scratch);",
        " *",
        f" * inputs: {len(inputs)} pointers to the inputs' data, in the program's order; outputs:",
        f" * {len(outputs)} pointers to memory for the outputs, which the call fills. Arrays are",
        " * dense, C order, of the types and shapes below, and every pointer is aligned to",
        f" * {prefix}_ALIGNMENT bytes; an output may not overlap an input or another output.",
        f" * scratch: {prefix}_SCRATCH_BYTES of aligned memory the call may use (NULL when that",
        " * is 0). Calls share nothing: threads may call at once, each with its own scratch.",
        " * Returns one of the statuses below; on an error the outputs are not written,",
        " * except after a kernel error. */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        *statuses,
        "",
        f"#define {prefix}_NUM_INPUTS {len(inputs)}",
        f"#define {prefix}_NUM_OUTPUTS {len(outputs)}",
        f"#define {prefix}_ALIGNMENT {ALIGNMENT}",
        f"#define {prefix}_SCRATCH_BYTES {scratch_bytes}",
        "",
        *_spec_lines(prefix, "input", inputs),
        *_spec_lines(prefix, "output", outputs),
        "",
        f"int {name}(const void* const* inputs, void* const* outputs, void* scratch);",
        "",
        f"/* What a status of {name} means, in words. */",
        f"const char* {name}_status_text(int status);",
        "",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        "",
        f"#endif /* {guard} */",
        "",
    ]
    return "\n".join(lines)


def _check_lines(prefix: str, kind: str, sizes: list[int]) -> list[str]:
    lines = []
    if sizes:
        lines.append(f"  if ({kind} == 0) return {prefix}_ERROR_NULL;")
    for i, size in enumerate(sizes):
        if size:
            lines += [
                f"  if ({kind}[{i}] == 0) return {prefix}_ERROR_NULL;",
                f"  if ((uintptr_t){kind}[{i}] % {ALIGNMENT} != 0) "
                f"return {prefix}_ERROR_UNALIGNED;",
            ]
    return lines


def _overlap_lines(prefix: str, inputs: list[int], outputs: list[int]) -> list[str]:
    lines = []
    for j, size in enumerate(outputs):
        if not size:
            continue
        others = [("inputs", i, s) for i, s in enumerate(inputs) if s]
        others += [("outputs", k, s) for k, s in enumerate(outputs) if s and k < j]
        for kind, i, other in others:
            lines.append(
                f"  if (aot_overlap(outputs[{j}], {size}, {kind}[{i}], {other})) "
                f"return {prefix}_ERROR_OVERLAP;"
            )
    return lines


def source_text(
    name: str,
    plan: KernelPlan,
    layout: Layout,
    *,
    inputs: tuple[TensorSpec, ...],
    outputs: tuple[TensorSpec, ...],
) -> str:
    """The C source of the entry point `name` over the kernels of `plan`."""
    prefix = name.upper()
    symbols = sorted({call.symbol for call in plan.calls})
    lines = [
        f"/* {name}: the kernel calls of a program compiled ahead of time (see {name}.h). */",
        f'#include "{name}.h"',
        "",
        "#include <string.h>",
        "",
        "/* XLA's CPU kernel ABI (kernel_c_api.h), field for field. */",
        "typedef struct { uint64_t x, y, z; } aot_dims;",
        "typedef struct { void* data; size_t size; } aot_arg;",
        "typedef struct {",
        "  const aot_dims* num_workgroups;",
        "  const aot_dims* workgroup_id;",
        "  size_t num_args;",
        "  const aot_arg* args;",
        "} aot_frame;",
        "",
        *(f"extern void* {symbol}(const aot_frame* frame);" for symbol in symbols),
        *(f"extern const char {symbol}[];" for symbol in plan.constant_symbols),
        *(f"#define aot_constant_{k} {symbol}" for k, symbol in enumerate(plan.constant_symbols)),
        "",
    ]
    overlaps = _overlap_lines(prefix, [s.nbytes for s in inputs], [s.nbytes for s in outputs])
    if overlaps:
        lines += [
            "static int aot_overlap(const void* a, size_t a_size, const void* b, size_t b_size) {",
            "  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;",
            "  return x < y + b_size && y < x + a_size;",
            "}",
            "",
        ]
    lines += [
        f"int {name}(const void* const* inputs, void* const* outputs, void* scratch) {{",
        # Kept quiet where a program has no inputs, outputs or scratch to use.
        "  (void)inputs;",
        "  (void)outputs;",
        *_check_lines(prefix, "inputs", [s.nbytes for s in inputs]),
        *_check_lines(prefix, "outputs", [s.nbytes for s in outputs]),
    ]
    if layout.scratch_bytes:
        lines += [
            f"  if (scratch == 0) return {prefix}_ERROR_NULL;",
            f"  if ((uintptr_t)scratch % {ALIGNMENT} != 0) return {prefix}_ERROR_UNALIGNED;",
        ]
    else:
        lines.append("  (void)scratch;")
    lines += overlaps
    lines.append(f"  void* const buffers[{max(len(layout.pointers), 1)}] = {{")
    lines += [f"      {pointer}," for pointer in layout.pointers] or ["      0,"]
    lines.append("  };")
    for call in plan.calls:
        args = ", ".join(
            f"{{(char*)buffers[{a.buffer}] + {a.offset}, {a.size}}}" for a in call.args
        )
        x, y, z = call.workgroups
        lines += [
            "  {",
            f"    const aot_arg args[{max(len(call.args), 1)}] = {{{args or '{0, 0}'}}};",
            f"    const aot_dims count = {{{x}, {y}, {z}}};",
            f"    for (uint64_t k = 0; k < {x * y * z}; ++k) {{",
            f"      const aot_dims id = {{k % {x}, k / {x} % {y}, k / {x * y}}};",
            f"      const aot_frame frame = {{&count, &id, {len(call.args)}, args}};",
            f"      if ({call.symbol}(&frame) != 0) return {prefix}_ERROR_KERNEL;",
            "    }",
            "  }",
        ]
    lines += [
        f"  memcpy(outputs[{j}], {source}, {size});" for j, source, size in layout.copies if size
    ]
    lines += [f"  return {prefix}_OK;", "}", ""]
    lines += [f"const char* {name}_status_text(int status) {{", "  switch (status) {"]
    lines += [f'    case {prefix}_{status}: return "{meaning}";' for status, meaning in STATUSES]
    lines += ['    default: return "not a status";', "  }", "}", ""]
    return "\n".join(lines)
