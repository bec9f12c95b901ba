// What a compiled executable takes, as its plugin reports it: the parameters and the
// output-to-parameter aliases of the optimized HLO module (PJRT_Executable_OptimizedProgram).
// PJRT's C API has no call for parameter shapes, and the specs a program file or a caller
// claims are checked against these before anything runs.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "pjrt/plugin.hpp"
#include "runtime/tensor_spec.hpp"

namespace cyxla {

struct HloSignature {
  /// The entry computation's parameters, in order. A parameter of an element type cyxla
  /// does not carry has type PJRT_Buffer_Type_INVALID.
  std::vector<TensorSpec> parameters;
  /// (output, parameter) per output that aliases a whole parameter (a donated buffer).
  std::vector<std::pair<size_t, size_t>> aliases;
};

/// The signature in a plugin's optimized program of `format` ("hlo": a serialized
/// xla.HloModuleProto, or "hlo_with_config": one inside an HloModuleProtoWithConfig), or
/// nothing for another format. Throws cyxla::Error (Pjrt) for bytes that are not such a
/// message: they came from the plugin, but are read with checked bounds all the same.
std::optional<HloSignature> read_hlo_signature(std::string_view format, std::string_view bytes);

/// The signature of `loaded` as its plugin reports it, or nothing when the plugin cannot
/// tell (it lacks PJRT_Executable_OptimizedProgram, or answers in another format).
std::optional<HloSignature> signature_of(const pjrt::Plugin& plugin,
                                         PJRT_LoadedExecutable* loaded);

/// How many parameters `loaded` takes, or nothing when the plugin cannot tell. Cheap,
/// unlike signature_of: a cache hit checks the signature its entry records with it.
std::optional<size_t> parameter_count(const pjrt::Plugin& plugin, PJRT_LoadedExecutable* loaded);

}  // namespace cyxla
