"""JAX's ROCm 7 plugin, from `jax-rocm7-pjrt` (the `rocm7` extra); ROCm comes from the system."""

from __future__ import annotations

from cyxla.plugins import _jax_plugin

PLATFORM = "rocm"
EXTRA = "rocm7"


def library_path() -> str:
    return _jax_plugin.library_in("xla_rocm7", "xla_rocm_plugin.so")
