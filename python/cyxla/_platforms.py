"""Platform names: cyxla's, their aliases, XLA's, and the order installed plugins are tried."""

from __future__ import annotations

from typing import Any

__all__ = ["PLATFORM_ORDER", "XLA_PLATFORMS", "normalize_platform", "platform_of_device"]

#: The order in which installed plugins are preferred when nothing else decides.
PLATFORM_ORDER = ("cpu", "cuda", "rocm", "tpu")
#: XLA's platform names, as the FFI registry knows them, by cyxla's platform.
XLA_PLATFORMS = {"cpu": "Host", "cuda": "CUDA", "rocm": "ROCM"}

_ALIASES = {"host": "cpu", "gpu": "cuda"}


def normalize_platform(name: str) -> str:
    """The platform name cyxla and `jax.export` use: "cpu", "cuda", "rocm" or "tpu"."""
    lowered = name.strip().lower()
    return _ALIASES.get(lowered, lowered)


def platform_of_device(device: Any) -> str:
    """The cyxla platform of a JAX device ("gpu" devices are cuda or rocm)."""
    platform = device.platform
    if platform == "gpu":  # pragma: no cover  (a JAX GPU device: no GPU on the test machines)
        version = str(getattr(device.client, "platform_version", "")).lower()
        return "rocm" if "rocm" in version else "cuda"
    return normalize_platform(platform)
