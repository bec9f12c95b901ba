// Registering typed XLA FFI handlers (custom-call targets) with a plugin through its PJRT
// FFI extension, and the XLA FFI API versions on both sides of a registration.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "pjrt/plugin.hpp"
#include "pjrt/xla_ffi.hpp"

namespace cyxla::pjrt {

/// An XLA FFI API version (XLA_FFI_API_MAJOR.XLA_FFI_API_MINOR of some build of XLA).
struct FfiVersion {
  int major = 0;
  int minor = 0;
};

/// The versions met by one registration. Either is empty when it could not be read: a
/// plugin whose XLA never asks handlers for their metadata tells neither.
struct FfiRegistration {
  std::optional<FfiVersion> handler;  // the FFI headers the handler was built with
  std::optional<FfiVersion> plugin;   // the FFI API of the plugin's XLA
};

/// The XLA FFI API version of the plugin's XLA, read once per plugin by registering a
/// probe handler (target "cyxla_ffi_version_probe"): XLA's metadata call hands it the
/// plugin's XLA_FFI_Api. Throws cyxla::Error when the plugin has no FFI extension.
std::optional<FfiVersion> ffi_version(const Plugin& plugin);

/// Registers `handler`, an XLA_FFI_Handler* that implements the execute stage, as the
/// custom-call target `name` of `platform` (XLA's name: "Host" for the CPU, "CUDA",
/// "ROCM"), with XLA_FFI_Handler_Traits `traits`.
///
/// Asks the handler for its metadata first, as XLA will, and throws cyxla::Error
/// (InvalidArgument) with the handler's message when it refuses. XLA drops the error of
/// a registration it rejects (an incompatible FFI version, another handler already
/// registered under `name`), so a caller verifies the registration by compiling a
/// program that calls the target; the versions returned explain a rejection.
FfiRegistration register_ffi_handler(const Plugin& plugin, std::string_view name,
                                     const void* handler, std::string_view platform,
                                     uint32_t traits);

/// Custom-call targets that XLA expands itself, whatever their api_version: a program
/// may call them with no handler registered. (Python reads this list through
/// cyxla._core.XLA_BUILTIN_TARGETS.)
inline constexpr std::array<std::string_view, 15> kXlaBuiltinTargets = {
    "AllocateBuffer",
    "ApproxTopK",
    "Eigh",
    "LuDecomposition",
    "ProductOfElementaryHouseholderReflectors",
    "Qr",
    "SPMDFullToShardShape",
    "SPMDShardToFullShape",
    "Sharding",
    "annotate_device_placement",
    "shape_assertion",
    "stablehlo.dynamic_approx_top_k",
    "stablehlo.dynamic_reduce_window",
    "stablehlo.dynamic_rng_bit_generator",
    "stablehlo.dynamic_top_k",
};

/// The custom-call target of Python host callbacks in programs that cyxla lowered: its
/// handler is registered by the Python binding (src/python/host_callback.cpp), so a
/// program that calls it runs only in the process that lowered it. (Python reads it
/// through cyxla._core.PYTHON_CALLBACK_TARGET.)
inline constexpr std::string_view kPythonCallbackTarget = "cyxla_python_callback";

/// Whether `frame` is XLA's metadata call (made at registration, not a custom call).
bool is_metadata_call(const xla_ffi::CallFrame* frame);

/// Answers XLA's metadata call for a handler that reads only the stable prefix of the
/// XLA FFI structs (xla_ffi.hpp): it claims the plugin's own FFI version, which XLA
/// always accepts, and no traits.
void answer_metadata_call(xla_ffi::CallFrame* frame);

/// Whether a handler was registered as target `name` with `plugin` in this process (by
/// Python's registry or from C). XLA may still have dropped it (see above).
bool has_ffi_handler(const Plugin& plugin, std::string_view name);

}  // namespace cyxla::pjrt
