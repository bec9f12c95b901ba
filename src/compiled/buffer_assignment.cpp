// The buffer assignment reader: allocations only; logical buffers, aliases and heap
// traces are skipped unread.
#include "compiled/buffer_assignment.hpp"

#include <algorithm>
#include <string>

namespace cyxla::compiled {
namespace {

// Field numbers of xla/service/hlo.proto.
constexpr uint32_t kAssignmentAllocations = 3;  // BufferAssignmentProto.buffer_allocations
enum : uint32_t {  // BufferAllocationProto
  kIndex = 1,
  kSize = 2,
  kIsThreadLocal = 3,
  kIsEntryParameter = 5,
  kParameterNumber = 6,
  kMaybeLiveOut = 7,
  kColor = 8,
  kParameterShapeIndex = 10,
  kIsTuple = 11,
  kIsConstant = 12,
  kIsParameterAliasedWithOutput = 13,
};

Allocation read_allocation(WireReader reader) {
  Allocation a;
  for (WireField f; reader.next(f);) {
    switch (f.number) {
      case kIndex: a.index = reader.varint_of(f); break;
      case kSize: a.size = reader.varint_of(f); break;
      case kIsThreadLocal: a.is_thread_local = reader.varint_of(f) != 0; break;
      case kIsEntryParameter: a.is_entry_computation_parameter = reader.varint_of(f) != 0; break;
      case kParameterNumber: a.parameter_number = reader.varint_of(f); break;
      case kMaybeLiveOut: a.maybe_live_out = reader.varint_of(f) != 0; break;
      case kColor: a.color = reader.varint_of(f); break;
      case kParameterShapeIndex: reader.append_varints(f, a.parameter_shape_index); break;
      case kIsTuple: a.is_tuple = reader.varint_of(f) != 0; break;
      case kIsConstant: a.is_constant = reader.varint_of(f) != 0; break;
      case kIsParameterAliasedWithOutput:
        a.is_parameter_aliased_with_output = reader.varint_of(f) != 0;
        break;
      default: break;  // assigned logical buffers, and fields added later
    }
  }
  return a;
}

}  // namespace

BufferAssignment read_buffer_assignment(const WireReader& parent, const WireField& field) {
  WireReader reader = parent.nested(field, "BufferAssignmentProto");
  BufferAssignment assignment;
  for (WireField f; reader.next(f);) {
    if (f.number != kAssignmentAllocations) continue;
    assignment.allocations.push_back(
        read_allocation(reader.nested(f, "BufferAllocationProto")));
    const Allocation& added = assignment.allocations.back();
    if (added.index != assignment.allocations.size() - 1) {
      reader.fail(f.offset, "allocation " + std::to_string(assignment.allocations.size() - 1) +
                                " says its index is " + std::to_string(added.index));
    }
  }
  return assignment;
}

}  // namespace cyxla::compiled
