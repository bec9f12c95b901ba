// A protobuf wire-format reader for the few fields of XLA's HLO module that hold its
// signature; everything else in the message is skipped unread.
#include "runtime/hlo_signature.hpp"

#include <cstdint>
#include <string>

#include "common/error.hpp"

namespace cyxla {
namespace {

// Field numbers in XLA's protos (xla/service/hlo.proto, xla/xla_data.proto).
constexpr uint32_t kWithConfigModule = 1;        // HloModuleProtoWithConfig.hlo_module
constexpr uint32_t kModuleProgramShape = 4;      // HloModuleProto.host_program_shape
constexpr uint32_t kModuleAliases = 8;           // HloModuleProto.input_output_alias
constexpr uint32_t kProgramShapeParameters = 1;  // ProgramShapeProto.parameters
constexpr uint32_t kShapeElementType = 2;        // ShapeProto.element_type
constexpr uint32_t kShapeDimensions = 3;         // ShapeProto.dimensions
constexpr uint32_t kAliasesEntries = 1;          // HloInputOutputAliasProto.entries
constexpr uint32_t kEntryOutputIndex = 1;        // AliasEntryProto.output_shape_index
constexpr uint32_t kEntryParameter = 2;          // AliasEntryProto.parameter_number
constexpr uint32_t kEntryParameterIndex = 3;     // AliasEntryProto.parameter_shape_index

constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

[[noreturn]] void malformed(const std::string& what) {
  throw Error(ErrorKind::Pjrt,
              "the plugin's optimized program is not a readable HLO module: " + what);
}

/// One field of a message: a varint's value, or a length-delimited field's bytes.
struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t value = 0;
  std::string_view bytes;
};

/// The fields of one message in wire format, in order, with every length checked.
class Fields {
 public:
  explicit Fields(std::string_view bytes) : rest_(bytes) {}

  bool next(Field& field) {
    if (rest_.empty()) return false;
    const uint64_t tag = varint();
    field.number = static_cast<uint32_t>(tag >> 3);
    field.wire = static_cast<uint32_t>(tag & 7);
    field.bytes = {};
    switch (field.wire) {
      case kVarint:
        field.value = varint();
        break;
      case kFixed64:
        take(8);
        break;
      case kFixed32:
        take(4);
        break;
      case kLengthDelimited:
        field.bytes = take(varint());
        break;
      default:  // groups, long deprecated, or garbage
        malformed("wire type " + std::to_string(field.wire));
    }
    return true;
  }

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (rest_.empty()) malformed("a truncated varint");
      const auto byte = static_cast<unsigned char>(rest_.front());
      rest_.remove_prefix(1);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    malformed("a varint longer than 10 bytes");
  }

  bool empty() const noexcept { return rest_.empty(); }

 private:
  std::string_view take(uint64_t size) {
    if (size > rest_.size()) malformed("a field longer than its message");
    const std::string_view bytes = rest_.substr(0, size);
    rest_.remove_prefix(size);
    return bytes;
  }

  std::string_view rest_;
};

/// The integers of a repeated int64 field, packed (one length-delimited field) or not.
void append_integers(const Field& field, std::vector<int64_t>& out) {
  if (field.wire == kVarint) {
    out.push_back(static_cast<int64_t>(field.value));
  } else if (field.wire == kLengthDelimited) {
    Fields packed(field.bytes);
    while (!packed.empty()) out.push_back(static_cast<int64_t>(packed.varint()));
  } else {
    malformed("an integer list of wire type " + std::to_string(field.wire));
  }
}

/// PJRT's element type of XLA's PrimitiveType `type`, for the types cyxla carries; the
/// two enums agree up to F64 and then diverge.
PJRT_Buffer_Type element_type(uint64_t type) {
  if (type >= 1 && type <= 12) return static_cast<PJRT_Buffer_Type>(type);  // PRED..F64
  switch (type) {
    case 15: return PJRT_Buffer_Type_C64;
    case 16: return PJRT_Buffer_Type_BF16;
    case 18: return PJRT_Buffer_Type_C128;
    default: return PJRT_Buffer_Type_INVALID;
  }
}

TensorSpec shape(std::string_view bytes) {
  TensorSpec spec{PJRT_Buffer_Type_INVALID, {}};
  Fields fields(bytes);
  for (Field f; fields.next(f);) {
    if (f.number == kShapeElementType && f.wire == kVarint) spec.type = element_type(f.value);
    if (f.number == kShapeDimensions) append_integers(f, spec.dims);
  }
  return spec;
}

void read_aliases(std::string_view bytes, HloSignature& signature) {
  Fields entries(bytes);
  for (Field entry; entries.next(entry);) {
    if (entry.number != kAliasesEntries || entry.wire != kLengthDelimited) continue;
    std::vector<int64_t> output_index, parameter_index;
    uint64_t parameter = 0;  // proto3 leaves a field out when it holds 0
    Fields fields(entry.bytes);
    for (Field f; fields.next(f);) {
      if (f.number == kEntryOutputIndex) append_integers(f, output_index);
      if (f.number == kEntryParameter && f.wire == kVarint) parameter = f.value;
      if (f.number == kEntryParameterIndex) append_integers(f, parameter_index);
    }
    // A whole parameter aliasing output k of the result tuple ([k]), or the one result.
    if (!parameter_index.empty() || output_index.size() > 1) continue;
    const int64_t output = output_index.empty() ? 0 : output_index.front();
    if (output < 0) continue;
    signature.aliases.emplace_back(static_cast<size_t>(output), static_cast<size_t>(parameter));
  }
}

HloSignature read_module(std::string_view bytes) {
  HloSignature signature;
  bool has_shape = false;
  Fields fields(bytes);
  for (Field f; fields.next(f);) {
    if (f.wire != kLengthDelimited) continue;
    if (f.number == kModuleProgramShape) {
      has_shape = true;
      Fields shape_fields(f.bytes);
      for (Field p; shape_fields.next(p);) {
        if (p.number == kProgramShapeParameters && p.wire == kLengthDelimited) {
          signature.parameters.push_back(shape(p.bytes));
        }
      }
    } else if (f.number == kModuleAliases) {
      read_aliases(f.bytes, signature);
    }
  }
  if (!has_shape) malformed("it has no program shape");
  return signature;
}

}  // namespace

std::optional<HloSignature> read_hlo_signature(std::string_view format, std::string_view bytes) {
  if (format == "hlo") return read_module(bytes);
  if (format != "hlo_with_config") return std::nullopt;
  Fields fields(bytes);
  for (Field f; fields.next(f);) {
    if (f.number == kWithConfigModule && f.wire == kLengthDelimited) return read_module(f.bytes);
  }
  malformed("it holds no module");
}

std::optional<HloSignature> signature_of(const pjrt::Plugin& plugin,
                                         PJRT_LoadedExecutable* loaded) {
  if (!plugin.has<&PJRT_Api::PJRT_Executable_OptimizedProgram>()) return std::nullopt;
  const pjrt::Executable executable = pjrt::executable_of(plugin, loaded);
  auto program = pjrt::make_args<PJRT_Program>();
  auto args = pjrt::make_args<PJRT_Executable_OptimizedProgram_Args>();
  args.executable = executable.get();
  args.program = &program;
  CYXLA_PJRT_CALL(plugin, PJRT_Executable_OptimizedProgram, args);  // the size
  std::string code(program.code_size, '\0');
  program.code = code.data();
  CYXLA_PJRT_CALL(plugin, PJRT_Executable_OptimizedProgram, args);  // the bytes
  if (program.code_size != code.size()) {
    throw Error(ErrorKind::Pjrt, "PJRT_Executable_OptimizedProgram: the program's size changed");
  }
  const std::string_view format =
      program.format != nullptr ? std::string_view(program.format, program.format_size) : "";
  return read_hlo_signature(format, code);
}

std::optional<size_t> parameter_count(const pjrt::Plugin& plugin, PJRT_LoadedExecutable* loaded) {
  if (!plugin.has<&PJRT_Api::PJRT_Executable_ParameterMemoryKinds>()) return std::nullopt;
  const pjrt::Executable executable = pjrt::executable_of(plugin, loaded);
  auto args = pjrt::make_args<PJRT_Executable_ParameterMemoryKinds_Args>();
  args.executable = executable.get();
  CYXLA_PJRT_CALL(plugin, PJRT_Executable_ParameterMemoryKinds, args);
  return args.num_parameters;
}

}  // namespace cyxla
