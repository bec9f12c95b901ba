"""The exceptions cyxla raises, from Python and from its C++ core."""

from __future__ import annotations

__all__ = [
    "AbiVersionError",
    "BusyError",
    "CompileError",
    "DtypeError",
    "InvalidArgumentError",
    "PjrtError",
    "PlatformMismatchError",
    "PluginError",
    "PluginLoadError",
    "PluginNotFoundError",
    "PluginVersionError",
    "UnsupportedProgramError",
    "VersionSkewWarning",
]


class PluginError(RuntimeError):
    """A PJRT plugin could not be found, loaded or used."""


class PluginNotFoundError(PluginError):
    """No installed plugin provides the requested platform."""


class PluginLoadError(PluginError):
    """A library could not be loaded as a PJRT plugin: it does not load, exports no
    GetPjrtApi, has a truncated PJRT_Api table or one without the error functions
    (PJRT_Error_Message, PJRT_Error_Destroy), or its initialization failed."""


class PluginVersionError(PluginError):
    """A plugin implements a PJRT API version that cyxla cannot use."""


class PlatformMismatchError(PluginError):
    """A program was lowered for another platform than the loaded plugin's."""


class PjrtError(RuntimeError):
    """The plugin reported an error; the message is the plugin's."""


class CompileError(PjrtError):
    """The plugin refused to compile a program."""


class UnsupportedProgramError(TypeError):
    """`lower` met something cyxla cannot carry: a dtype, an effect or a custom call."""


class InvalidArgumentError(ValueError):
    """An argument had the wrong count, shape or size."""


class DtypeError(TypeError):
    """An argument's dtype cannot be converted to the one the program takes."""


class BusyError(RuntimeError):
    """A bound call was called while another thread was in a call of it."""


class AbiVersionError(ImportError):
    """An extension module was built against an incompatible version of cyxla's C API."""


class VersionSkewWarning(UserWarning):
    """jaxlib is newer than the loaded plugin: some programs or custom calls will fail.

    Turn it into an error with
    `warnings.filterwarnings("error", category=cyxla.VersionSkewWarning)`.
    """
