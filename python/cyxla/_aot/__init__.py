"""Programs compiled ahead of time into plain C (`export_aot`, the optional `aot` extra)."""

from cyxla._aot.export import AotLibrary, export_aot
from cyxla._aot.tfcompile import AotToolchainError

__all__ = ["AotLibrary", "AotToolchainError", "export_aot"]
