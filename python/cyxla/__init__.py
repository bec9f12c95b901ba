"""cyxla: lower JAX functions to StableHLO, compile them with a PJRT plugin, and run them
from native code without the GIL."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cyxla._abi import (
    ABI_VERSION,
    HOST_ALIGNMENT,
    abi_version,
    check_abi,
    get_cmake_dir,
    get_include,
    get_library,
    get_pkgconfig_dir,
)
from cyxla._cache.store import CACHE_ENVIRONMENT_VARIABLE, cache_directory
from cyxla._errors import (
    AbiVersionError,
    AotToolchainError,
    BusyError,
    CompileError,
    DtypeError,
    InvalidArgumentError,
    PjrtError,
    PlatformMismatchError,
    PluginError,
    PluginLoadError,
    PluginNotFoundError,
    PluginVersionError,
    ProgramFileError,
    UnsupportedProgramError,
    VersionSkewWarning,
)
from cyxla._ffi.mirror import follow_jax, mirror_jax_registrations
from cyxla._ffi.registry import register_ffi_target, register_jax_targets
from cyxla._ffi.sources import MIRROR_ENVIRONMENT_VARIABLE
from cyxla._program.batched import BatchedProgram
from cyxla._program.cached import load_lowered, store_lowered
from cyxla._program.dtypes import ElementType
from cyxla._program.program import Program, TensorSpec, load_program
from cyxla._run.aligned import empty, is_aligned, zeros
from cyxla._run.backend import LoadedPlugin, initialize, library_identity
from cyxla._run.batched import BatchedExecutable, compile_batched
from cyxla._run.bound import BoundCall
from cyxla._run.executable import CompileStatistics, Executable, Runner, compile_program
from cyxla._run.plugins import PluginEntry
from cyxla._version import __version__

if TYPE_CHECKING:
    from cyxla._aot import AotLibrary, export_aot
    from cyxla._lower.batched import lower_batched
    from cyxla._lower.cache_key import cache_key
    from cyxla._lower.lowering import lower
    from cyxla._program.dtypes import SUPPORTED_DTYPES
    from cyxla._run.ffi_headers import ffi_include_dir
    from cyxla._verify.verdict import ProgramFileVerdict, verify_program_file

#: Public names that a process which only loads and runs programs does not need, imported
#: on first use (PEP 562): those that import JAX, ml_dtypes (SUPPORTED_DTYPES) or the
#: child-process machinery of verify_program_file, and export_aot (TensorFlow, when
#: called). Such a process never imports JAX.
_IMPORTED_ON_USE = {
    "AotLibrary": "cyxla._aot",
    "ProgramFileVerdict": "cyxla._verify.verdict",
    "SUPPORTED_DTYPES": "cyxla._program.dtypes",
    "cache_key": "cyxla._lower.cache_key",
    "ffi_include_dir": "cyxla._run.ffi_headers",
    "lower": "cyxla._lower.lowering",
    "lower_batched": "cyxla._lower.batched",
    "export_aot": "cyxla._aot",
    "verify_program_file": "cyxla._verify.verdict",
}


def __getattr__(name: str) -> Any:
    module = _IMPORTED_ON_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'cyxla' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_IMPORTED_ON_USE})


__all__ = [
    "ABI_VERSION",
    "CACHE_ENVIRONMENT_VARIABLE",
    "HOST_ALIGNMENT",
    "MIRROR_ENVIRONMENT_VARIABLE",
    "SUPPORTED_DTYPES",
    "AbiVersionError",
    "AotLibrary",
    "AotToolchainError",
    "BatchedExecutable",
    "BatchedProgram",
    "BoundCall",
    "BusyError",
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
    "ProgramFileError",
    "ProgramFileVerdict",
    "Runner",
    "TensorSpec",
    "UnsupportedProgramError",
    "VersionSkewWarning",
    "__version__",
    "abi_version",
    "cache_directory",
    "cache_key",
    "check_abi",
    "compile_batched",
    "compile_program",
    "empty",
    "export_aot",
    "ffi_include_dir",
    "get_cmake_dir",
    "get_include",
    "get_library",
    "get_pkgconfig_dir",
    "initialize",
    "is_aligned",
    "library_identity",
    "load_lowered",
    "load_program",
    "lower",
    "lower_batched",
    "mirror_jax_registrations",
    "register_ffi_target",
    "register_jax_targets",
    "store_lowered",
    "verify_program_file",
    "zeros",
]

# The one change importing cyxla makes outside it: where JAX is imported, every later
# jax.ffi.register_ffi_target is mirrored to cyxla's table of custom calls (see
# cyxla._ffi.mirror), unless CYXLA_MIRROR_JAX=0 turns it off. cyxla imports no JAX itself.
follow_jax()
del follow_jax
