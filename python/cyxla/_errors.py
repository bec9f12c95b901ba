"""The exceptions cyxla raises, from Python and from its C++ core."""

from __future__ import annotations

__all__ = [
    "AbiVersionError",
    "AotToolchainError",
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
    "ProgramFileError",
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


class ProgramFileError(ValueError):
    """A file is not a program file this cyxla can read; the message names the file and
    says what is wrong with it, in the words of the core's one reader (which the native
    loader uses too). `reason` says it in one word:

    - "magic": not a cyxla program file;
    - "version": written by a newer cyxla (or a format that does not exist);
    - "size": truncated, or trailing bytes after what the header describes;
    - "checksum": altered or corrupted (its CRC-32 does not match);
    - "reserved": a reserved header field is not 0;
    - "metadata": malformed metadata (a bad line, a missing or repeated key, an unknown
      element type or platform, a bad dimension or output structure).
    """

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason

    def __reduce__(self) -> tuple[object, ...]:
        # Pickles (across processes, to Dask's client) with its reason.
        return _program_file_error, (str(self), self.reason)


def _program_file_error(message: str, reason: str) -> ProgramFileError:
    return ProgramFileError(message, reason=reason)


class DtypeError(TypeError):
    """An argument's dtype cannot be converted to the one the program takes."""


class BusyError(RuntimeError):
    """A bound call was called while another thread was in a call of it."""


class AotToolchainError(RuntimeError):
    """What `export_aot` needs at export time is missing or not the version cyxla reads:
    tensorflow-cpu (`pip install "cyxla[aot]"`), or a C compiler."""


class AbiVersionError(ImportError):
    """An extension module was built against an incompatible version of cyxla's C API."""


class VersionSkewWarning(UserWarning):
    """jaxlib is newer than the loaded plugin: some programs or custom calls will fail.

    Turn it into an error with
    `warnings.filterwarnings("error", category=cyxla.VersionSkewWarning)`.
    """
