"""The compile options a program is compiled with: `compile_program`'s, and the ones a
program file stores for native loaders (the same bytes when nothing is overridden)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cyxla._jax.jaxlib import xla_client

__all__ = ["compile_options"]


def compile_options(overrides: Mapping[str, Any] | None = None) -> bytes:
    """A serialized xla.CompileOptionsProto; `overrides` set XLA debug options by name."""
    options = xla_client.CompileOptions()
    if overrides:
        # str() of a bool is "True"/"False", the spelling XLA's option parser accepts.
        options.env_option_overrides = [(name, str(value)) for name, value in overrides.items()]
    return options.SerializeAsString()
