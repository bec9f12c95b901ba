// XLA's buffer assignment of a compiled CPU program (xla.BufferAssignmentProto): the
// allocations that the thunks' slices index, with the roles a runner lays them out by.
#pragma once

#include <cstdint>
#include <vector>

#include "compiled/protobuf_wire.hpp"

namespace cyxla::compiled {

/// A logical buffer placed in an allocation (BufferAllocationProto.Assigned).
struct Assigned {
  uint64_t logical_buffer = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

/// A value of the program (LogicalBufferProto): the HLO instruction that defines it, at
/// `shape_index` inside that instruction's (tuple) shape.
struct LogicalBuffer {
  uint64_t id = 0;
  uint64_t size = 0;
  uint64_t instruction = 0;  // the defining instruction's unique id (HloInstructionProto.id)
  std::vector<uint64_t> shape_index;
};

/// A place where a logical buffer is seen though another instruction defined it
/// (BufferAssignmentProto.BufferAlias): a get-tuple-element, a loop's result.
struct BufferAlias {
  uint64_t logical_buffer = 0;
  uint64_t instruction = 0;
  std::vector<uint64_t> shape_index;
};

/// One BufferAllocationProto. Its memory is a parameter's (the caller's input), a
/// constant's (filled from the executable), or a temporary; an output may live in any.
struct Allocation {
  uint64_t index = 0;
  uint64_t size = 0;
  bool is_thread_local = false;
  bool is_entry_computation_parameter = false;
  uint64_t parameter_number = 0;
  /// The index into the parameter's tuple shape, empty for a whole array parameter.
  std::vector<uint64_t> parameter_shape_index;
  bool maybe_live_out = false;
  bool is_tuple = false;
  bool is_constant = false;
  bool is_parameter_aliased_with_output = false;
  uint64_t color = 0;
  std::vector<Assigned> assigned;
};

/// The allocations in index order: allocations[i].index == i (the reader checks it).
struct BufferAssignment {
  std::vector<LogicalBuffer> logical_buffers;
  std::vector<BufferAlias> aliases;
  std::vector<Allocation> allocations;
};

/// The BufferAssignmentProto read by `reader`'s caller from `field` (length-delimited).
BufferAssignment read_buffer_assignment(const WireReader& parent, const WireField& field);

}  // namespace cyxla::compiled
