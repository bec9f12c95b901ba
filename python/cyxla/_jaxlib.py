"""Every import of JAX's and jaxlib's internals in cyxla, each with what it is used for.

The rest of the package imports this module, so that a rename in jaxlib is one edit here
(the way `jax/_src/lib/__init__.py` does it for jaxlib). Importing it imports JAX: the
modules that a process which only loads and runs programs uses import it where it is used.
"""

from __future__ import annotations

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

__all__ = ["_jax", "hlo", "ir", "mlir", "xla_client"]
