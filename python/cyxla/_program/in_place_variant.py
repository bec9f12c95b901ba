"""The variant of a program that reads large unaligned inputs where they are, written with
jaxlib's MLIR where it is asked for.

The core decides which inputs qualify, and says why reading them from the alignment
below is safe (runtime/in_place_variant.hpp); it gives the variant's input specs. This
module writes the variant's StableHLO: a new `main` that takes each such input as a
longer one-dimensional array, slices the input out of it at the offset that the last
input (s32[k]) gives on each call, and calls the program's own `main`, renamed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from cyxla._program.program import Program, SpecRecords, decode_specs

__all__ = ["variant_program"]

#: The name the program's own `main` takes in the variant.
_INNER = "cyxla_unpadded_main"


@dataclass(frozen=True)
class _Signature:
    """The program's main function as text: per argument and result, its type and its
    attribute dictionary (" {...}", or "" for none)."""

    arg_types: list[str]
    arg_attrs: list[str]
    result_types: list[str]
    result_attrs: list[str]


def variant_program(program: Program, inputs: SpecRecords) -> Program:
    """`program` taking `inputs` (the core's `variant_inputs`): a padded input where the
    spec is longer than the program's, and the offsets last."""
    # jaxlib's MLIR, imported where used: only a process that has imported JAX asks
    # (Executable.run), so that one that only runs programs never does.
    from cyxla._jax.jaxlib import _jax, ir, mlir
    from cyxla._jax.stablehlo import serialize

    with mlir.make_ir_context():
        module = _jax.mlir.deserialize_portable_artifact(program.stablehlo)
        main = _public_main(module, ir)
        function = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        signature = _Signature(
            [str(t) for t in function.inputs],
            _attributes(main, "arg_attrs", len(function.inputs)),
            [str(t) for t in function.results],
            _attributes(main, "res_attrs", len(function.results)),
        )
        element_types = [str(ir.ShapedType(t).element_type) for t in function.inputs]
        # The program's main becomes a private function that the new main calls.
        main.attributes["sym_name"] = ir.StringAttr.get(_INNER)
        main.attributes["sym_visibility"] = ir.StringAttr.get("private")
        for name in ("arg_attrs", "res_attrs"):
            if name in main.attributes:
                del main.attributes[name]
        text = module.operation.get_asm(enable_debug_info=False)
        end = text.rstrip().rfind("}")
        text = text[:end] + _new_main(program, inputs, signature, element_types) + "}\n"
        ir.Module.parse(text).operation.verify()
    return dataclasses.replace(
        program,
        stablehlo=serialize(text, program.stablehlo_version),
        inputs=decode_specs(inputs),
        name=f"{program.name}_read_in_place",
    )


def _public_main(module: Any, ir: Any) -> Any:
    for op in module.body.operations:
        if op.operation.name == "func.func" and (
            ir.StringAttr(op.attributes["sym_name"]).value == "main"
        ):
            return op
    raise ValueError("the program has no main function")


def _attributes(function: Any, name: str, count: int) -> list[str]:
    """The attribute dictionaries of `function`'s arguments or results, as text."""
    if name not in function.attributes:
        return [""] * count
    return [" " + str(a) if str(a) != "{}" else "" for a in function.attributes[name]]


def _new_main(
    program: Program, inputs: SpecRecords, signature: _Signature, element_types: list[str]
) -> str:
    """The variant's main: the inputs (a padded one sliced out at its offset, without the
    attributes that described the unpadded shape), the offsets, then the parameters of
    the donated outputs; it calls the program's own main on them."""
    n_in = len(program.inputs)
    padded = [i for i in range(n_in) if list(inputs[i][1]) != list(program.inputs[i].shape)]
    offsets = f"tensor<{len(padded)}xi32>"
    pairs = zip(signature.arg_types, signature.arg_attrs, strict=True)
    params = [f"%p{k}: {t}{a}" for k, (t, a) in enumerate(pairs)]
    arguments = [f"%p{k}" for k in range(len(signature.arg_types))]
    body = []
    for slot, i in enumerate(padded):
        padded_type = f"tensor<{inputs[i][1][0]}x{element_types[i]}>"
        elements = program.inputs[i].nbytes // program.inputs[i].dtype.itemsize
        flat = f"tensor<{elements}x{element_types[i]}>"
        params[i] = f"%p{i}: {padded_type}"
        arguments[i] = f"%x{i}"
        body += [
            f'%o{i} = "stablehlo.slice"(%offsets) {{start_indices = array<i64: {slot}>, '
            f"limit_indices = array<i64: {slot + 1}>, strides = array<i64: 1>}} : "
            f"({offsets}) -> tensor<1xi32>",
            f'%s{i} = "stablehlo.reshape"(%o{i}) : (tensor<1xi32>) -> tensor<i32>',
            f'%d{i} = "stablehlo.dynamic_slice"(%p{i}, %s{i}) '
            f"{{slice_sizes = array<i64: {elements}>}} : ({padded_type}, tensor<i32>) -> {flat}",
            f'%x{i} = "stablehlo.reshape"(%d{i}) : ({flat}) -> {signature.arg_types[i]}',
        ]
    params.insert(n_in, f"%offsets: {offsets}")
    results = signature.result_types
    call_type = f"({', '.join(signature.arg_types)}) -> ({', '.join(results)})"
    call = f'"func.call"({", ".join(arguments)}) {{callee = @{_INNER}}} : {call_type}'
    returned = ", ".join(f"%r#{j}" for j in range(len(results)))
    body += [
        f"%r:{len(results)} = {call}" if results else call,
        f'"func.return"({returned}) : ({", ".join(results)}) -> ()',
    ]
    declared = ", ".join(f"{t}{a}" for t, a in zip(results, signature.result_attrs, strict=True))
    lines = "\n".join(f"    {line}" for line in body)
    return f"  func.func public @main({', '.join(params)}) -> ({declared}) {{\n{lines}\n  }}\n"
