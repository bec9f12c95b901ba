"""StableHLO: the version a plugin accepts, serializing at it, and the custom calls a
module's text names."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["custom_calls_of", "serialize", "stablehlo_target_of", "without_locations"]

_CUSTOM_CALL_OP = re.compile(r'stablehlo\.custom_call\s+@(?:"([^"]+)"|([\w.$-]+))')


def _version_text(version: Sequence[int]) -> str:
    return ".".join(str(int(v)) for v in version)


def _parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def stablehlo_target_of(plugin: Any) -> str:
    """The StableHLO version to serialize at for `plugin` (a `_core.Plugin`): the older of
    the plugin's and jaxlib's."""
    from cyxla._jaxlib import hlo  # jaxlib's MLIR, imported where used: custom_calls_of is text

    ours = str(hlo.get_current_version())
    theirs = plugin.attributes.get("stablehlo_current_version")
    if theirs is None:
        return ours
    return min(ours, _version_text(theirs), key=_parse_version)


def serialize(text: str, target: str) -> bytes:
    """The portable artifact (VHLO bytecode) of StableHLO `text` at version `target`."""
    from cyxla._jaxlib import _jax

    return _jax.mlir.serialize_portable_artifact(text, target)


def without_locations(text: str) -> str:
    """The module without source locations, so that the same function lowers to the same
    bytes wherever it is defined (the disk cache keys on them)."""
    from cyxla._jaxlib import ir, mlir

    with mlir.make_ir_context():
        return ir.Module.parse(text).operation.get_asm(enable_debug_info=False)


def custom_calls_of(text: str) -> list[tuple[str, bool]]:
    """(target, whether it is a typed FFI call) of each custom call in StableHLO text.

    A typed FFI call has api_version 4, or a dictionary as `mhlo.backend_config` (the
    form jax.export writes); untyped calls have a string backend_config."""
    calls = []
    for line in text.splitlines():
        if match := _CUSTOM_CALL_OP.search(line):
            typed = "api_version = 4 " in line or "mhlo.backend_config = {" in line
            calls.append((match.group(1) or match.group(2), typed))
    return calls
