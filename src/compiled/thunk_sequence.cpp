// The thunk sequence reader (xla/backends/cpu/runtime/thunk.proto).
#include "compiled/thunk_sequence.hpp"

#include <string>

namespace cyxla::compiled {
namespace {

constexpr uint32_t kFirstBody = 3;  // ThunkProto.call_thunk, the first of the oneof
enum : uint32_t {  // ThunkProto
  kThunkKind = 1,
  kThunkInfo = 2,
  kThunkConditional = 4,
  kThunkWhile = 10,
  kThunkKernel = 11,
  kThunkCopy = 12,
};
constexpr uint32_t kSequenceThunks = 1;  // ThunkSequenceProto.thunks
constexpr uint32_t kInfoOpName = 1;      // InfoProto.op_name
enum : uint32_t {                        // KernelThunkProto
  kKernelName = 1,
  kKernelWorkgroups = 2,
  kKernelInvariantArguments = 3,
  kKernelMinAlignment = 4,
  kKernelArguments = 5,
  kKernelResults = 6,
};
constexpr uint32_t kShapedSliceSlice = 1;        // ShapedSliceProto.slice
enum : uint32_t { kShapeBufferSliceShape = 1, kShapeBufferSliceSlice = 2 };  // ShapeBufferAllocationSliceProto
enum : uint32_t { kCopySource = 1, kCopyDestination = 2 };  // CopyThunkProto
enum : uint32_t {                                           // WhileThunkProto
  kWhileCondition = 1,
  kWhileBody = 2,
  kWhileTripCount = 3,
  kWhileConditionBuffer = 4,
};
enum : uint32_t { kConditionalBranches = 1, kConditionalIndex = 2 };  // ConditionalThunkProto
enum : uint32_t { kSliceOffset = 1, kSliceSize = 2, kSliceAllocation = 3 };

ThunkSequence read_sequence(WireReader reader);

Slice read_slice(WireReader reader) {
  Slice slice;
  for (WireField f; reader.next(f);) {
    if (f.number == kSliceOffset) slice.offset = reader.varint_of(f);
    if (f.number == kSliceSize) slice.size = reader.varint_of(f);
    if (f.number == kSliceAllocation) slice.allocation = reader.varint_of(f);
  }
  return slice;
}

/// The slice inside a wrapper message (ShapedSliceProto or ShapeBufferAllocationSliceProto)
/// whose field `slice_field` holds it.
Slice read_wrapped_slice(const WireReader& parent, const WireField& field,
                         std::string_view wrapper, uint32_t slice_field) {
  WireReader reader = parent.nested(field, wrapper);
  Slice slice;
  for (WireField f; reader.next(f);) {
    if (f.number == slice_field) slice = read_slice(reader.nested(f, "BufferAllocationSliceProto"));
  }
  return slice;
}

KernelThunk read_kernel(WireReader reader) {
  KernelThunk kernel;
  for (WireField f; reader.next(f);) {
    switch (f.number) {
      case kKernelName: kernel.name = std::string(reader.bytes_of(f)); break;
      case kKernelWorkgroups: {
        // NumWorkGroupsProto: x 1, y 2, z 3; a count left out is 1 (proto3 drops 0s,
        // and XLA never writes 0).
        WireReader counts = reader.nested(f, "NumWorkGroupsProto");
        for (WireField c; counts.next(c);) {
          if (c.number >= 1 && c.number <= 3) kernel.workgroups[c.number - 1] = counts.varint_of(c);
        }
        break;
      }
      case kKernelInvariantArguments:
        reader.append_varints(f, kernel.invariant_arguments);
        break;
      case kKernelMinAlignment: {
        // OptionalUInt64Proto: value 1, contains_value 2.
        WireReader optional = reader.nested(f, "OptionalUInt64Proto");
        uint64_t value = 0;
        bool present = false;
        for (WireField o; optional.next(o);) {
          if (o.number == 1) value = optional.varint_of(o);
          if (o.number == 2) present = optional.varint_of(o) != 0;
        }
        if (present) kernel.min_alignment = value;
        break;
      }
      case kKernelArguments:
        kernel.arguments.push_back(
            read_wrapped_slice(reader, f, "ShapedSliceProto", kShapedSliceSlice));
        break;
      case kKernelResults:
        kernel.results.push_back(
            read_wrapped_slice(reader, f, "ShapedSliceProto", kShapedSliceSlice));
        break;
      default: break;
    }
  }
  return kernel;
}

/// The bytes of the ShapeProto in a ShapeBufferAllocationSliceProto (empty without one).
std::string_view shape_bytes(const WireReader& parent, const WireField& field) {
  WireReader reader = parent.nested(field, "ShapeBufferAllocationSliceProto");
  std::string_view shape;
  for (WireField f; reader.next(f);) {
    if (f.number == kShapeBufferSliceShape) shape = reader.bytes_of(f);
  }
  return shape;
}

CopyThunk read_copy(WireReader reader) {
  CopyThunk copy;
  std::string_view shapes[2];
  for (WireField f; reader.next(f);) {
    if (f.number == kCopySource || f.number == kCopyDestination) {
      const Slice slice = read_wrapped_slice(reader, f, "ShapeBufferAllocationSliceProto",
                                             kShapeBufferSliceSlice);
      (f.number == kCopySource ? copy.source : copy.destination) = slice;
      shapes[f.number == kCopySource ? 0 : 1] = shape_bytes(reader, f);
    }
  }
  copy.same_shape = shapes[0] == shapes[1];
  return copy;
}

WhileThunk read_while(WireReader reader) {
  WhileThunk loop;
  for (WireField f; reader.next(f);) {
    switch (f.number) {
      case kWhileCondition:
        loop.condition = read_sequence(reader.nested(f, "ThunkSequenceProto"));
        break;
      case kWhileBody: loop.body = read_sequence(reader.nested(f, "ThunkSequenceProto")); break;
      case kWhileTripCount: {
        // OptionalInt64Proto: value 1, contains_value 2.
        WireReader optional = reader.nested(f, "OptionalInt64Proto");
        uint64_t value = 0;
        bool present = false;
        for (WireField o; optional.next(o);) {
          if (o.number == 1) value = optional.varint_of(o);
          if (o.number == 2) present = optional.varint_of(o) != 0;
        }
        if (present) loop.trip_count = value;
        break;
      }
      case kWhileConditionBuffer:
        loop.condition_buffer = read_slice(reader.nested(f, "BufferAllocationSliceProto"));
        break;
      default: break;
    }
  }
  return loop;
}

ConditionalThunk read_conditional(WireReader reader) {
  ConditionalThunk choice;
  for (WireField f; reader.next(f);) {
    if (f.number == kConditionalBranches) {
      choice.branches.push_back(read_sequence(reader.nested(f, "ThunkSequenceProto")));
    } else if (f.number == kConditionalIndex) {
      choice.branch_index_buffer = read_slice(reader.nested(f, "BufferAllocationSliceProto"));
    }
  }
  return choice;
}

Thunk read_thunk(WireReader reader) {
  Thunk thunk;
  for (WireField f; reader.next(f);) {
    switch (f.number) {
      case kThunkKind: thunk.kind = std::string(reader.bytes_of(f)); break;
      case kThunkInfo: {
        WireReader info = reader.nested(f, "InfoProto");
        for (WireField i; info.next(i);) {
          if (i.number == kInfoOpName) thunk.op_name = std::string(info.bytes_of(i));
        }
        break;
      }
      default:
        // Fields 3 to 22 are one oneof, the thunk's body; later numbers are new bodies.
        if (f.number < kFirstBody) break;
        if (thunk.body_field != 0) {
          reader.fail(f.offset, "a thunk has two bodies, fields " +
                                    std::to_string(thunk.body_field) + " and " +
                                    std::to_string(f.number));
        }
        thunk.body_field = f.number;
        if (f.number == kThunkKernel) {
          thunk.body = read_kernel(reader.nested(f, "KernelThunkProto"));
        } else if (f.number == kThunkCopy) {
          thunk.body = read_copy(reader.nested(f, "CopyThunkProto"));
        } else if (f.number == kThunkWhile) {
          thunk.body = read_while(reader.nested(f, "WhileThunkProto"));
        } else if (f.number == kThunkConditional) {
          thunk.body = read_conditional(reader.nested(f, "ConditionalThunkProto"));
        } else {
          (void)reader.bytes_of(f);  // a message, unread
        }
        break;
    }
  }
  return thunk;
}

ThunkSequence read_sequence(WireReader reader) {
  ThunkSequence sequence;
  for (WireField f; reader.next(f);) {
    if (f.number == kSequenceThunks) {
      sequence.thunks.push_back(read_thunk(reader.nested(f, "ThunkProto")));
    }
  }
  return sequence;
}

}  // namespace

ThunkSequence read_thunk_sequence(const WireReader& parent, const WireField& field) {
  return read_sequence(parent.nested(field, "ThunkSequenceProto"));
}

std::string_view thunk_body_name(uint32_t number) noexcept {
  static constexpr std::string_view kNames[] = {
      "",                                  // 0
      "",                                  // 1 kind
      "",                                  // 2 info
      "call_thunk",                        // 3
      "conditional_thunk",                 // 4
      "sort_thunk",                        // 5
      "xnn_fusion_thunk",                  // 6
      "dot_thunk",                         // 7
      "rng_get_and_update_state_thunk",    // 8
      "top_k_thunk",                       // 9
      "while_thunk",                       // 10
      "kernel_thunk",                      // 11
      "copy_thunk",                        // 12
      "fft_thunk",                         // 13
      "infeed_thunk",                      // 14
      "outfeed_thunk",                     // 15
      "custom_call_thunk",                 // 16
      "convolution_thunk",                 // 17
      "collective_thunk",                  // 18
      "partition_id_thunk",                // 19
      "replica_id_thunk",                  // 20
      "ynn_fusion_thunk",                  // 21
      "rng_seed_thunk",                    // 22
  };
  return number < std::size(kNames) ? kNames[number] : std::string_view("a newer body");
}

}  // namespace cyxla::compiled
