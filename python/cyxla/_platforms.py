"""Platform names: cyxla's, their aliases, XLA's, the order installed plugins are tried, and
each platform's client and compile defaults, as the core's one table of platforms gives them
(src/runtime/platforms.hpp)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from cyxla import _core

__all__ = [
    "CLIENT_DEFAULTS",
    "COMPILE_DEFAULTS",
    "PLATFORM_ORDER",
    "XLA_PLATFORMS",
    "CompileDefault",
    "normalize_platform",
    "platform_of_device",
]

#: The order in which installed plugins are preferred when nothing else decides.
PLATFORM_ORDER: tuple[str, ...] = tuple(_core.PLATFORMS)
#: XLA's platform names, as the FFI registry knows them, by cyxla's platform.
XLA_PLATFORMS: Mapping[str, str] = dict(_core.XLA_PLATFORMS)
#: The client options each platform's plugin is created with unless the caller names them.
CLIENT_DEFAULTS: Mapping[str, Mapping[str, Any]] = dict(_core.CLIENT_DEFAULTS)


class CompileDefault(NamedTuple):
    """An XLA option a platform's programs are compiled with unless the caller's compile
    options override it (every door: compile_program, the C loader, the disk cache's key)."""

    option: str
    value: str
    #: The StableHLO operation whose programs get it; "" for every program.
    operation: str

    def __str__(self) -> str:
        scope = f" (programs with {self.operation})" if self.operation else ""
        return f"{self.option}={self.value}{scope}"


#: Each platform's compile defaults.
COMPILE_DEFAULTS: Mapping[str, tuple[CompileDefault, ...]] = {
    platform: tuple(CompileDefault(*row) for row in rows)
    for platform, rows in _core.COMPILE_DEFAULTS.items()
}

_ALIASES: Mapping[str, str] = dict(_core.PLATFORM_ALIASES)


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
