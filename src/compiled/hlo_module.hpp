// What the kernel runner needs from a compiled program's optimized HLO module
// (xla.HloModuleProto): which instructions define the entry computation's outputs, and
// the bytes of every constant, which XLA's CPU runtime copies into the constants'
// allocations from the module (the objects do not hold them).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiled/protobuf_wire.hpp"

namespace cyxla::compiled {

/// A constant instruction's value as its allocation holds it: the literal's elements in
/// their order in memory, or why cyxla could not read them.
struct ConstantBytes {
  std::string bytes;
  std::string unreadable;  // empty when `bytes` holds the value
};

struct HloModuleFacts {
  /// The unique id of the instruction defining each output, in order (a tuple root's
  /// operands, or the root itself); empty when the module does not say.
  std::vector<uint64_t> result_instructions;
  /// Every constant instruction of every computation, by unique id.
  std::map<uint64_t, ConstantBytes> constants;
};

/// The facts of the HloProto in the length-delimited `field` read by `parent`.
HloModuleFacts read_hlo_module(const WireReader& parent, const WireField& field);

}  // namespace cyxla::compiled
