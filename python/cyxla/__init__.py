"""cyxla: lower JAX functions to StableHLO, compile them with a PJRT plugin, and run them
from native code without the GIL."""

from __future__ import annotations

from cyxla._dtypes import SUPPORTED_DTYPES, ElementType
from cyxla._errors import (
    CompileError,
    DtypeError,
    InvalidArgumentError,
    PjrtError,
    PlatformMismatchError,
    PluginError,
    PluginLoadError,
    PluginNotFoundError,
    PluginVersionError,
    UnsupportedProgramError,
)
from cyxla._executable import CompileStatistics, Executable, compile_program
from cyxla._lowering import lower
from cyxla._plugins import LoadedPlugin, PluginEntry, initialize
from cyxla._program import Program, TensorSpec

__version__ = "0.1.0"

__all__ = [
    "SUPPORTED_DTYPES",
    "CompileError",
    "CompileStatistics",
    "DtypeError",
    "ElementType",
    "Executable",
    "InvalidArgumentError",
    "LoadedPlugin",
    "PjrtError",
    "PlatformMismatchError",
    "PluginEntry",
    "PluginError",
    "PluginLoadError",
    "PluginNotFoundError",
    "PluginVersionError",
    "Program",
    "TensorSpec",
    "UnsupportedProgramError",
    "__version__",
    "compile_program",
    "initialize",
    "lower",
]
