"""Programs compiled ahead of time into plain C (`export_aot`, the optional `aot` extra)."""

from cyxla._aot.export import AotLibrary, export_aot

__all__ = ["AotLibrary", "export_aot"]
