// The buffer assignment reader: logical buffers, their aliases and allocations; heap
// traces are skipped unread.
#include "compiled/buffer_assignment.hpp"

#include <algorithm>
#include <string>

namespace cyxla::compiled {
namespace {

// Field numbers of xla/service/hlo.proto.
enum : uint32_t {  // BufferAssignmentProto
  kAssignmentLogicalBuffers = 1,
  kAssignmentAliases = 2,
  kAssignmentAllocations = 3,
};
enum : uint32_t { kAliasBuffer = 1, kAliasLocation = 2 };  // BufferAssignmentProto.BufferAlias
enum : uint32_t { kLogicalId = 1, kLogicalSize = 2, kLogicalDefinedAt = 3 };  // LogicalBufferProto
enum : uint32_t { kLocationShapeIndex = 3, kLocationInstructionId = 4 };  // its Location
enum : uint32_t { kAssignedBuffer = 1, kAssignedOffset = 2, kAssignedSize = 3 };
enum : uint32_t {  // BufferAllocationProto
  kIndex = 1,
  kSize = 2,
  kIsThreadLocal = 3,
  kIsEntryParameter = 5,
  kParameterNumber = 6,
  kMaybeLiveOut = 7,
  kColor = 8,
  kAssigned = 9,
  kParameterShapeIndex = 10,
  kIsTuple = 11,
  kIsConstant = 12,
  kIsParameterAliasedWithOutput = 13,
};

/// A LogicalBufferProto.Location into `instruction` and `shape_index`.
void read_location(WireReader at, uint64_t& instruction, std::vector<uint64_t>& shape_index) {
  for (WireField g; at.next(g);) {
    if (g.number == kLocationInstructionId) instruction = at.varint_of(g);
    if (g.number == kLocationShapeIndex) at.append_varints(g, shape_index);
  }
}

LogicalBuffer read_logical_buffer(WireReader reader) {
  LogicalBuffer b;
  for (WireField f; reader.next(f);) {
    if (f.number == kLogicalId) b.id = reader.varint_of(f);
    if (f.number == kLogicalSize) b.size = reader.varint_of(f);
    if (f.number == kLogicalDefinedAt) {
      read_location(reader.nested(f, "LogicalBufferProto.Location"), b.instruction,
                    b.shape_index);
    }
  }
  return b;
}

BufferAlias read_alias(WireReader reader) {
  BufferAlias alias;
  for (WireField f; reader.next(f);) {
    if (f.number == kAliasBuffer) alias.logical_buffer = reader.varint_of(f);
    if (f.number == kAliasLocation) {
      read_location(reader.nested(f, "LogicalBufferProto.Location"), alias.instruction,
                    alias.shape_index);
    }
  }
  return alias;
}

Assigned read_assigned(WireReader reader) {
  Assigned a;
  for (WireField f; reader.next(f);) {
    if (f.number == kAssignedBuffer) a.logical_buffer = reader.varint_of(f);
    if (f.number == kAssignedOffset) a.offset = reader.varint_of(f);
    if (f.number == kAssignedSize) a.size = reader.varint_of(f);
  }
  return a;
}

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
      case kAssigned:
        a.assigned.push_back(read_assigned(reader.nested(f, "BufferAllocationProto.Assigned")));
        break;
      case kIsTuple: a.is_tuple = reader.varint_of(f) != 0; break;
      case kIsConstant: a.is_constant = reader.varint_of(f) != 0; break;
      case kIsParameterAliasedWithOutput:
        a.is_parameter_aliased_with_output = reader.varint_of(f) != 0;
        break;
      default: break;  // fields added later
    }
  }
  return a;
}

}  // namespace

BufferAssignment read_buffer_assignment(const WireReader& parent, const WireField& field) {
  WireReader reader = parent.nested(field, "BufferAssignmentProto");
  BufferAssignment assignment;
  for (WireField f; reader.next(f);) {
    if (f.number == kAssignmentLogicalBuffers) {
      assignment.logical_buffers.push_back(
          read_logical_buffer(reader.nested(f, "LogicalBufferProto")));
    }
    if (f.number == kAssignmentAliases) {
      assignment.aliases.push_back(read_alias(reader.nested(f, "BufferAlias")));
    }
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
