// The HLO module reader: computations, their instructions' ids, opcodes and operands, and
// constants' literals (xla.LiteralProto), each element type from the one field that
// carries it; a literal in any other form is kept unread, with the reason.
#include "compiled/hlo_module.hpp"

#include <optional>

namespace cyxla::compiled {
namespace {

// Field numbers of xla/service/hlo.proto and xla/xla_data.proto.
constexpr uint32_t kHloProtoModule = 1;                              // HloProto.hlo_module
enum : uint32_t { kModuleComputations = 3, kModuleEntryId = 6 };     // HloModuleProto
enum : uint32_t { kComputationInstructions = 2, kComputationId = 5, kComputationRoot = 6 };
enum : uint32_t {  // HloInstructionProto
  kInstructionOpcode = 2,
  kInstructionShape = 3,
  kInstructionLiteral = 8,
  kInstructionId = 35,
  kInstructionOperands = 36,
};
enum : uint32_t { kLiteralShape = 1 };      // LiteralProto
constexpr uint32_t kShapeElementType = 2;   // ShapeProto

/// How a LiteralProto carries the elements of one primitive type: the field, the bytes
/// an element takes in memory, and the field's encoding.
enum class Encoding { Bool, Varint, Fixed32, Fixed64, Bytes };
struct Carrier {
  uint32_t field;
  size_t width;
  Encoding encoding;
};

/// By xla.PrimitiveType; nothing for a type cyxla does not read (sub-byte and 8-bit
/// floating-point types, tokens, tuples).
std::optional<Carrier> carrier_of(uint64_t type) {
  switch (type) {
    case 1: return Carrier{2, 1, Encoding::Bool};       // PRED: preds
    case 2: return Carrier{15, 1, Encoding::Bytes};     // S8: s8s
    case 3: return Carrier{17, 2, Encoding::Bytes};     // S16: s16s, little-endian
    case 4: return Carrier{4, 4, Encoding::Varint};     // S32: s32s
    case 5: return Carrier{5, 8, Encoding::Varint};     // S64: s64s
    case 6: return Carrier{3, 1, Encoding::Bytes};      // U8: u8s
    case 7: return Carrier{16, 2, Encoding::Bytes};     // U16: u16s, little-endian
    case 8: return Carrier{6, 4, Encoding::Varint};     // U32: u32s
    case 9: return Carrier{7, 8, Encoding::Varint};     // U64: u64s
    case 10: return Carrier{11, 2, Encoding::Bytes};    // F16: f16s, little-endian
    case 11: return Carrier{8, 4, Encoding::Fixed32};   // F32: f32s
    case 12: return Carrier{9, 8, Encoding::Fixed64};   // F64: f64s
    case 15: return Carrier{12, 4, Encoding::Fixed32};  // C64: c64s, real and imaginary
    case 16: return Carrier{13, 2, Encoding::Bytes};    // BF16: bf16s, little-endian
    case 18: return Carrier{18, 8, Encoding::Fixed64};  // C128: c128s
    default: return std::nullopt;
  }
}

/// The elements of `field` appended to `out` as `carrier` lays them out in memory
/// (little-endian, as x86-64 holds them).
void append_elements(const WireReader& literal, const WireField& field, const Carrier& carrier,
                     std::string& out) {
  const auto append = [&](uint64_t value) {
    for (size_t i = 0; i < carrier.width; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
  };
  switch (carrier.encoding) {
    case Encoding::Bytes: out += literal.bytes_of(field); return;
    case Encoding::Bool:
    case Encoding::Varint: {
      std::vector<uint64_t> values;
      literal.append_varints(field, values);
      for (uint64_t v : values) append(carrier.encoding == Encoding::Bool ? (v != 0) : v);
      return;
    }
    case Encoding::Fixed32:
    case Encoding::Fixed64: {
      const WireType single =
          carrier.encoding == Encoding::Fixed32 ? WireType::Fixed32 : WireType::Fixed64;
      if (field.wire == single) {
        append(field.value);
        return;
      }
      const std::string_view packed = literal.bytes_of(field);
      if (packed.size() % carrier.width != 0) {
        literal.fail(field.bytes_offset, "packed field " + std::to_string(field.number) +
                                             " holds " + std::to_string(packed.size()) +
                                             " bytes, not whole elements");
      }
      out += packed;  // packed fixed-width fields are little-endian, as memory is
      return;
    }
  }
}

/// The constant value of a LiteralProto whose instruction has the shape `shape`.
ConstantBytes read_literal(WireReader literal, std::string_view shape) {
  ConstantBytes constant;
  std::string_view own_shape;
  std::vector<WireField> fields;
  for (WireField f; literal.next(f);) {
    if (f.number == kLiteralShape) {
      own_shape = literal.bytes_of(f);
    } else {
      fields.push_back(f);
    }
  }
  if (own_shape != shape) {
    constant.unreadable = "its literal's shape is not its instruction's";
    return constant;
  }
  uint64_t type = 0;
  WireReader shape_reader(shape, "ShapeProto");
  for (WireField f; shape_reader.next(f);) {
    if (f.number == kShapeElementType) type = shape_reader.varint_of(f);
  }
  const std::optional<Carrier> carrier = carrier_of(type);
  if (!carrier) {
    constant.unreadable = "its literal is of element type " + std::to_string(type) +
                          ", which cyxla does not read";
    return constant;
  }
  for (const WireField& f : fields) {
    if (f.number == carrier->field) append_elements(literal, f, *carrier, constant.bytes);
  }
  return constant;
}

}  // namespace

HloModuleFacts read_hlo_module(const WireReader& parent, const WireField& field) {
  HloModuleFacts facts;
  WireReader hlo = parent.nested(field, "HloProto");
  for (WireField f; hlo.next(f);) {
    if (f.number != kHloProtoModule) continue;
    WireReader module = hlo.nested(f, "HloModuleProto");
    uint64_t entry = 0;
    std::vector<WireField> computations;
    for (WireField g; module.next(g);) {
      if (g.number == kModuleEntryId) entry = module.varint_of(g);
      if (g.number == kModuleComputations) computations.push_back(g);
    }
    for (const WireField& c : computations) {
      WireReader computation = module.nested(c, "HloComputationProto");
      uint64_t id = 0, root = 0;
      std::vector<WireField> instructions;
      for (WireField g; computation.next(g);) {
        if (g.number == kComputationId) id = computation.varint_of(g);
        if (g.number == kComputationRoot) root = computation.varint_of(g);
        if (g.number == kComputationInstructions) instructions.push_back(g);
      }
      for (const WireField& i : instructions) {
        WireReader instruction = computation.nested(i, "HloInstructionProto");
        uint64_t instruction_id = 0;
        std::string_view opcode, shape;
        std::optional<WireField> literal;
        std::vector<uint64_t> operands;
        for (WireField g; instruction.next(g);) {
          if (g.number == kInstructionId) instruction_id = instruction.varint_of(g);
          if (g.number == kInstructionOpcode) opcode = instruction.bytes_of(g);
          if (g.number == kInstructionShape) shape = instruction.bytes_of(g);
          if (g.number == kInstructionLiteral) literal = g;
          if (g.number == kInstructionOperands) instruction.append_varints(g, operands);
        }
        if (opcode == "constant") {
          facts.constants[instruction_id] =
              literal ? read_literal(instruction.nested(*literal, "LiteralProto"), shape)
                      : ConstantBytes{"", "its constant has no literal"};
        }
        if (id == entry && instruction_id == root) {
          facts.result_instructions = opcode == "tuple" ? operands : std::vector{root};
        }
      }
    }
  }
  return facts;
}

}  // namespace cyxla::compiled
