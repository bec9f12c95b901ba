"""JAX's CUDA 13 plugin, from `jax-cuda13-pjrt` (the `cuda13` extra)."""

from __future__ import annotations

from cyxla.plugins import _jax_plugin

PLATFORM = "cuda"
EXTRA = "cuda13"


def library_path() -> str:
    path = _jax_plugin.library_in("xla_cuda13", "xla_cuda_plugin.so")
    _jax_plugin.load_nvidia_libraries("xla_cuda13")
    return path
