// Reading a cyxla program file (format 1, docs/program-file.md): every field is checked
// before anything reaches the plugin.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/tensor_spec.hpp"

namespace cyxla::program {

/// The newest format this reader reads.
inline constexpr uint32_t kFormatVersion = 1;

/// What a program file holds, checked.
struct ProgramFile {
  std::string name;
  std::string platform;  // cyxla's name: "cpu", "cuda", "rocm" or "tpu"
  std::string stablehlo_version;
  std::string cyxla_version;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<std::string> custom_calls;  // the custom-call targets the program calls
  /// Per StableHLO parameter after the inputs, the output the program writes into it
  /// (outputs written in place: the caller's output memory is passed there).
  std::vector<size_t> donated_outputs;
  std::string stablehlo;                  // portable StableHLO (VHLO bytecode)
  std::string compile_options;            // a serialized xla.CompileOptionsProto
};

/// Parses the bytes of a program file; throws cyxla::Error (ProgramFile) naming `source`
/// and saying what is wrong: not a program file, a newer format, truncated or trailing
/// bytes, altered (CRC), or malformed metadata.
ProgramFile parse(std::string_view bytes, std::string_view source);

/// Reads and parses the file at `path`; a file that cannot be read is InvalidArgument.
ProgramFile read(const std::string& path);

}  // namespace cyxla::program
