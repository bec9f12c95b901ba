// The few fields of XLA's HLO module that hold its signature, read with the bounded
// protobuf reader of src/compiled/; everything else in the message is skipped unread.
#include "runtime/hlo_signature.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "compiled/protobuf_wire.hpp"

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

using compiled::WireField;
using compiled::WireReader;
using compiled::WireType;

[[noreturn]] void malformed(const std::string& what) {
  throw Error(ErrorKind::Pjrt,
              "the plugin's optimized program is not a readable HLO module: " + what);
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

TensorSpec shape(WireReader fields) {
  TensorSpec spec{PJRT_Buffer_Type_INVALID, {}};
  std::vector<uint64_t> dims;
  for (WireField f; fields.next(f);) {
    if (f.number == kShapeElementType && f.wire == WireType::Varint) {
      spec.type = element_type(f.value);
    }
    if (f.number == kShapeDimensions) fields.append_varints(f, dims);
  }
  spec.dims.assign(dims.begin(), dims.end());
  return spec;
}

void read_aliases(WireReader entries, HloSignature& signature) {
  for (WireField entry; entries.next(entry);) {
    if (entry.number != kAliasesEntries || entry.wire != WireType::LengthDelimited) continue;
    std::vector<uint64_t> output_index, parameter_index;
    uint64_t parameter = 0;  // proto3 leaves a field out when it holds 0
    WireReader fields = entries.nested(entry, "AliasEntryProto");
    for (WireField f; fields.next(f);) {
      if (f.number == kEntryOutputIndex) fields.append_varints(f, output_index);
      if (f.number == kEntryParameter && f.wire == WireType::Varint) parameter = f.value;
      if (f.number == kEntryParameterIndex) fields.append_varints(f, parameter_index);
    }
    // A whole parameter aliasing output k of the result tuple ([k]), or the one result.
    if (!parameter_index.empty() || output_index.size() > 1) continue;
    const auto output = static_cast<int64_t>(output_index.empty() ? 0 : output_index.front());
    if (output < 0) continue;
    signature.aliases.emplace_back(static_cast<size_t>(output), static_cast<size_t>(parameter));
  }
}

HloSignature read_module(WireReader fields) {
  HloSignature signature;
  bool has_shape = false;
  for (WireField f; fields.next(f);) {
    if (f.wire != WireType::LengthDelimited) continue;
    if (f.number == kModuleProgramShape) {
      has_shape = true;
      WireReader shape_fields = fields.nested(f, "ProgramShapeProto");
      for (WireField p; shape_fields.next(p);) {
        if (p.number == kProgramShapeParameters && p.wire == WireType::LengthDelimited) {
          signature.parameters.push_back(shape(shape_fields.nested(p, "ShapeProto")));
        }
      }
    } else if (f.number == kModuleAliases) {
      read_aliases(fields.nested(f, "HloInputOutputAliasProto"), signature);
    }
  }
  if (!has_shape) throw Error(ErrorKind::Pjrt, "it has no program shape");
  return signature;
}

/// The signature in `bytes` as `format` lays it out, or nothing for another format;
/// read_hlo_signature says whose bytes they were when this throws.
std::optional<HloSignature> read(std::string_view format, std::string_view bytes) {
  if (format == "hlo") return read_module(WireReader(bytes, "HloModuleProto"));
  if (format != "hlo_with_config") return std::nullopt;
  WireReader fields(bytes, "HloModuleProtoWithConfig");
  for (WireField f; fields.next(f);) {
    if (f.number == kWithConfigModule && f.wire == WireType::LengthDelimited) {
      return read_module(fields.nested(f, "HloModuleProto"));
    }
  }
  throw Error(ErrorKind::Pjrt, "it holds no module");
}

}  // namespace

std::optional<HloSignature> read_hlo_signature(std::string_view format, std::string_view bytes) {
  try {
    return read(format, bytes);
  } catch (const Error& error) {  // the wire reader's (which message, which byte) or ours
    malformed(error.what());
  }
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
