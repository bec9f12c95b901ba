"""The variant of a program that reads large unaligned inputs where they are.

The core decides which inputs qualify, and says why reading them from the alignment
below is safe (runtime/in_place_variant.hpp); it gives the variant's input specs. This
module writes the variant's StableHLO: a new `main` that takes each such input as a
longer one-dimensional array, slices the input out of it at the offset that the last
input (s32[k]) gives on each call, and calls the program's own `main`, renamed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from cyxla._program import Program, SpecRecords, decode_specs
from cyxla._stablehlo import serialize

__all__ = ["variant_program"]

#: The name the program's own `main` takes in the variant.
_INNER = "cyxla_unpadded_main"


def variant_program(program: Program, inputs: SpecRecords) -> Program:
    """`program` taking `inputs` (the core's `variant_inputs`): a padded input where the
    spec is longer than the program's, and the offsets last."""
    from cyxla._jaxlib import _jax, ir, mlir

    with mlir.make_ir_context():
        module = _jax.mlir.deserialize_portable_artifact(program.stablehlo)
        main = _public_main(module, ir)
        function = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        arg_types = [str(t) for t in function.inputs]
        result_types = [str(t) for t in function.results]
        arg_attrs = _attributes(main, "arg_attrs", len(arg_types))
        result_attrs = _attributes(main, "res_attrs", len(result_types))
        element_types = [str(ir.ShapedType(t).element_type) for t in function.inputs]
        # The program's main becomes a private function that the new main calls.
        main.attributes["sym_name"] = ir.StringAttr.get(_INNER)
        main.attributes["sym_visibility"] = ir.StringAttr.get("private")
        for name in ("arg_attrs", "res_attrs"):
            if name in main.attributes:
                del main.attributes[name]
        text = module.operation.get_asm(enable_debug_info=False)
        wrapper = _wrapper(
            program, inputs, arg_types, element_types, arg_attrs, result_types, result_attrs
        )
        end = text.rstrip().rfind("}")
        text = text[:end] + wrapper + "}\n"
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
    """The attribute dictionaries of `function`'s arguments or results, as text ("" for none)."""
    if name not in function.attributes:
        return [""] * count
    return [" " + str(a) if str(a) != "{}" else "" for a in function.attributes[name]]


def _wrapper(
    program: Program,
    inputs: SpecRecords,
    arg_types: Sequence[str],
    element_types: Sequence[str],
    arg_attrs: Sequence[str],
    result_types: Sequence[str],
    result_attrs: Sequence[str],
) -> str:
    n_in = len(program.inputs)
    padded = [i for i in range(n_in) if list(inputs[i][1]) != list(program.inputs[i].shape)]
    offsets_type = f"tensor<{len(padded)}xi32>"
    # The new main's arguments: the inputs (padded ones without the attributes that
    # described the unpadded shape), the offsets, then the donated outputs' parameters.
    params, arguments = [], []
    for i in range(n_in):
        if i in padded:
            params.append(f"%p{i}: {_padded_type(inputs[i], element_types[i])}")
            arguments.append(f"%x{i}")
        else:
            params.append(f"%p{i}: {arg_types[i]}{arg_attrs[i]}")
            arguments.append(f"%p{i}")
    params.append(f"%offsets: {offsets_type}")
    for k in range(n_in, len(arg_types)):
        params.append(f"%p{k}: {arg_types[k]}{arg_attrs[k]}")
        arguments.append(f"%p{k}")
    body = []
    for slot, i in enumerate(padded):
        padded_type = _padded_type(inputs[i], element_types[i])
        elements = program.inputs[i].nbytes // program.inputs[i].dtype.itemsize
        flat = f"tensor<{elements}x{element_types[i]}>"
        body += [
            f'%o{i} = "stablehlo.slice"(%offsets) {{start_indices = array<i64: {slot}>, '
            f"limit_indices = array<i64: {slot + 1}>, strides = array<i64: 1>}} : "
            f"({offsets_type}) -> tensor<1xi32>",
            f'%s{i} = "stablehlo.reshape"(%o{i}) : (tensor<1xi32>) -> tensor<i32>',
            f'%d{i} = "stablehlo.dynamic_slice"(%p{i}, %s{i}) '
            f"{{slice_sizes = array<i64: {elements}>}} : ({padded_type}, tensor<i32>) -> {flat}",
            f'%x{i} = "stablehlo.reshape"(%d{i}) : ({flat}) -> {arg_types[i]}',
        ]
    results = ", ".join(f"{t}{a}" for t, a in zip(result_types, result_attrs, strict=True))
    call_type = f"({', '.join(arg_types)}) -> ({', '.join(result_types)})"
    call = f'"func.call"({", ".join(arguments)}) {{callee = @{_INNER}}} : {call_type}'
    n_results = len(result_types)
    returned = ", ".join(f"%r#{j}" for j in range(n_results))
    body += [
        f"%r:{n_results} = {call}" if n_results else call,
        f'"func.return"({returned}) : ({", ".join(result_types)}) -> ()',
    ]
    lines = "\n".join(f"    {line}" for line in body)
    return f"  func.func public @main({', '.join(params)}) -> ({results}) {{\n{lines}\n  }}\n"


def _padded_type(spec: tuple[int, Sequence[int]], element_type: str) -> str:
    return f"tensor<{spec[1][0]}x{element_type}>"
