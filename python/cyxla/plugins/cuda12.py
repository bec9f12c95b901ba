"""JAX's CUDA 12 plugin, from `jax-cuda12-pjrt` (the `cuda12` extra)."""

from __future__ import annotations

from cyxla.plugins import _jax_plugin

PLATFORM = "cuda"
EXTRA = "cuda12"


def library_path() -> str:
    path = _jax_plugin.library_in("xla_cuda12", "xla_cuda_plugin.so")
    _jax_plugin.load_nvidia_libraries("xla_cuda12")
    return path
