"""StableHLO through jaxlib's MLIR: the version a plugin accepts, serializing at it, and a
module's text without source locations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cyxla._jax.jaxlib import _jax, hlo, ir, mlir

__all__ = ["serialize", "stablehlo_target_of", "without_locations", "written_version"]


def _version_text(version: Sequence[int]) -> str:
    return ".".join(str(int(v)) for v in version)


def _parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def written_version() -> str:
    """The StableHLO version this jaxlib writes."""
    return str(hlo.get_current_version())


def stablehlo_target_of(plugin: Any) -> str:
    """The StableHLO version to serialize at for `plugin` (a `_core.Plugin`): the older of
    the plugin's and jaxlib's."""
    ours = written_version()
    theirs = plugin.attributes.get("stablehlo_current_version")
    if theirs is None:
        return ours
    return min(ours, _version_text(theirs), key=_parse_version)


def serialize(text: str, target: str) -> bytes:
    """The portable artifact (VHLO bytecode) of StableHLO `text` at version `target`."""
    return _jax.mlir.serialize_portable_artifact(text, target)


def without_locations(text: str) -> str:
    """The module without source locations, so that the same function lowers to the same
    bytes wherever it is defined (the disk cache keys on them)."""
    with mlir.make_ir_context():
        return ir.Module.parse(text).operation.get_asm(enable_debug_info=False)
