"""JAX's CUDA 12 plugin, from `jax-cuda12-pjrt` (the `cuda12` extra)."""

from __future__ import annotations

from cyxla.plugins import _jax_plugin

PLATFORM = "cuda"
#: Allocate device memory as programs need it, instead of most of it up front.
CREATE_OPTIONS: dict[str, object] = {"preallocate": False}
EXTRA = "cuda12"


def library_path() -> str:
    path = _jax_plugin.library_in("xla_cuda12", "xla_cuda_plugin.so")
    _jax_plugin.load_nvidia_libraries("xla_cuda12")
    return path
