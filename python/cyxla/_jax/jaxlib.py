"""Every import of JAX's and jaxlib's internals in cyxla, each with what it is used for.

The rest of the package imports this module, so that a rename in jaxlib is one edit here
(the way `jax/_src/lib/__init__.py` does it for jaxlib). Importing it imports JAX: the
modules that a process which only loads and runs programs uses import it where it is used.
"""

from __future__ import annotations

from typing import Any

# The primitives of Python host callbacks, whose lowering cyxla replaces during its own
# `jax.export` (`cyxla._lower.callbacks`), and the functions that run each as JAX's runtime would:
# they place the operands on JAX's CPU device, call the user's function, log its failure.
from jax._src import callback as _callback
from jax._src import checkify as _checkify
from jax._src import debugging as _debugging

# `xla_runtime_errors.value`: whether `checkify.check` may lower to a callback unchecked
# (jax_experimental_unsafe_xla_runtime_errors), as JAX's own lowering of it asks.
from jax._src.config import xla_runtime_errors

# `ordered_effects.contains`: whether a callback's effect is ordered (cyxla refuses those).
from jax._src.effects import ordered_effects

# `mlir.make_ir_context`: an MLIR context with JAX's dialects, in which a lowered module
# is parsed again to print it without its source locations.
from jax._src.interpreters import mlir

# `_jax.mlir.serialize_portable_artifact`: StableHLO text to a portable artifact at a
# chosen StableHLO version (the public `jax.export` serializes at its own version only).
# `xla_client.CompileOptions`: the serialized CompileOptionsProto that PJRT compiles with;
# `xla_client.register_custom_call_target`, `_custom_callback` and `custom_call_targets`:
# the FFI registrations that JAX holds, which cyxla mirrors to its plugin.
from jax._src.lib import _jax, xla_client

# `ir.Module.parse`: that parse.
from jax._src.lib.mlir import ir

# `hlo.get_current_version`: the StableHLO version this jaxlib writes.
from jax._src.lib.mlir.dialects import hlo

__all__ = [
    "CALLBACK_PRIMITIVES",
    "CHECKIFY_CHECK",
    "_jax",
    "hlo",
    "ir",
    "mlir",
    "ordered_effects",
    "xla_client",
    "xla_runtime_errors",
]

#: Each callback primitive, with the function that runs it in Python (JAX's own `impl`
#: for the debug ones; `pure_callback_p.impl` and `io_callback_p.impl` would dispatch a
#: jitted program instead). JAX versions without `debug_print_p` lower
#: `jax.debug.print` as a `debug_callback`.
CALLBACK_PRIMITIVES: tuple[tuple[Any, Any], ...] = (
    (_callback.pure_callback_p, _callback.pure_callback_impl),
    (_callback.io_callback_p, _callback.io_callback_impl),
    (_debugging.debug_callback_p, _debugging.debug_callback_p.impl),
    *(
        ((_debugging.debug_print_p, _debugging.debug_print_p.impl),)
        if hasattr(_debugging, "debug_print_p")
        else ()
    ),
)

#: `checkify.check` outside `checkify.checkify`: its primitive, the function that raises
#: its error in Python (given the error's tree), and the error JAX raises when it may not
#: lower to a callback.
CHECKIFY_CHECK = (_checkify.check_p, _checkify.python_err, _checkify.functionalization_error)
