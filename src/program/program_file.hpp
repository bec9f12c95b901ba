// The program file, format 1 (docs/program-file.md): the one reader and the one writer,
// which Python's Program.save and load_program call too. Every field is checked before
// anything reaches the plugin.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "runtime/tensor_spec.hpp"

namespace cyxla::program {

/// The format this cyxla writes, and the newest it reads.
inline constexpr uint32_t kFormatVersion = 1;
/// The deepest nesting of JSON arrays and objects in an output_tree line (Python's
/// cyxla._program.output_tree.MAX_NESTING reads it from here).
inline constexpr int kMaxTreeNesting = 512;

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
  std::string stablehlo;        // portable StableHLO (VHLO bytecode)
  std::string compile_options;  // a serialized xla.CompileOptionsProto
  std::string jax_version;      // empty when the file does not say
  std::string jaxlib_version;   // empty when the file does not say
  /// The output structure as JSON (Python's cyxla._program.output_tree encoding), checked to be
  /// one of `outputs.size()` leaves; none when the outputs are a flat tuple.
  std::optional<std::string> output_tree;
};

/// Why a file is refused, in one word (Python's ProgramFileError.reason).
enum class Refusal { Magic, Version, Size, Checksum, Reserved, Metadata };

/// "magic", "version", "size", "checksum", "reserved" or "metadata".
std::string_view refusal_word(Refusal refusal) noexcept;

/// A file that is not a program file this cyxla reads (ErrorKind::ProgramFile).
class FileError : public Error {
 public:
  FileError(Refusal refusal, const std::string& message)
      : Error(ErrorKind::ProgramFile, message), refusal_(refusal) {}
  Refusal refusal() const noexcept { return refusal_; }

 private:
  Refusal refusal_;
};

/// Parses the bytes of a program file; throws FileError whose message starts with
/// `source` and says what is wrong, checked in this order: the magic, the header's size,
/// the format version, the section sizes, truncated or trailing bytes, the CRC-32, the
/// reserved field, and then the metadata.
ProgramFile parse(std::string_view bytes, std::string_view source);

/// Reads and parses the file at `path`; a file that cannot be read is InvalidArgument.
ProgramFile read(const std::string& path);

/// The bytes of the program file of `file`, whose metadata comes in the documented
/// order; only what `parse` reads back is written: InvalidArgument (saying what) for a
/// text field with a line break, an unknown platform or element type, a donated output
/// that is not one, or an output_tree that is not one of the outputs.
std::string pack(const ProgramFile& file);

}  // namespace cyxla::program
