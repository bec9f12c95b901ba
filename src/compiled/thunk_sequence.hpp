// The thunk sequence of a compiled CPU program (xla.cpu.ThunkSequenceProto): what XLA's
// CPU runtime runs, in order, over the buffer assignment's allocations. Kernels, copies,
// loops and conditionals are read in full; every other kind is kept by name.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiled/protobuf_wire.hpp"

namespace cyxla::compiled {

/// A slice of one allocation (BufferAllocationSliceProto): `size` bytes at `offset`.
struct Slice {
  uint64_t allocation = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

/// A call of one compiled kernel over its workgroups (KernelThunkProto). The kernel gets
/// one XLA_CPU_KernelArg per slice, arguments first, then results.
struct KernelThunk {
  std::string name;
  std::array<uint64_t, 3> workgroups{1, 1, 1};  // x, y, z
  std::vector<Slice> arguments;
  std::vector<Slice> results;
  /// Indices into `arguments` that the kernel only reads.
  std::vector<uint64_t> invariant_arguments;
  /// The alignment every argument's address must have, when the kernel asks for one.
  std::optional<uint64_t> min_alignment;
};

/// A copy of `source` into `destination` (CopyThunkProto). XLA's copy may also change
/// the layout (a transpose); it is a plain byte copy when both shapes are the same.
struct CopyThunk {
  Slice source;
  Slice destination;
  bool same_shape = false;  // the two ShapeProtos' bytes are equal
};

struct Thunk;

struct ThunkSequence {
  std::vector<Thunk> thunks;
};

/// A loop (WhileThunkProto): `condition` writes a bool into `condition_buffer`; `body`
/// runs while it holds true, or `trip_count` times when XLA knew the count.
struct WhileThunk {
  ThunkSequence condition;
  ThunkSequence body;
  std::optional<uint64_t> trip_count;
  Slice condition_buffer;
};

/// A choice (ConditionalThunkProto): the branch that `branch_index_buffer` names runs.
struct ConditionalThunk {
  std::vector<ThunkSequence> branches;
  Slice branch_index_buffer;
};

/// One thunk: its kind as XLA names it ("kernel", "copy", "ynn-fusion", ...), the HLO
/// instruction it came from, and its body where cyxla reads it.
struct Thunk {
  std::string kind;
  std::string op_name;
  /// The ThunkProto field that holds the body (11 kernel, 12 copy, 10 while, 4
  /// conditional, ...); 0 when it has none.
  uint32_t body_field = 0;
  std::variant<std::monostate, KernelThunk, CopyThunk, WhileThunk, ConditionalThunk> body;
};

/// The ThunkSequenceProto in the length-delimited `field` read by `parent`.
ThunkSequence read_thunk_sequence(const WireReader& parent, const WireField& field);

/// The name of ThunkProto's body field `number`, as the proto spells it ("kernel_thunk").
std::string_view thunk_body_name(uint32_t number) noexcept;

/// Calls `visit(thunk)` on every thunk of `sequence`, nested sequences included.
template <class Visit>
void for_each_thunk(const ThunkSequence& sequence, Visit&& visit) {
  for (const Thunk& thunk : sequence.thunks) {
    visit(thunk);
    if (const auto* loop = std::get_if<WhileThunk>(&thunk.body)) {
      for_each_thunk(loop->condition, visit);
      for_each_thunk(loop->body, visit);
    } else if (const auto* choice = std::get_if<ConditionalThunk>(&thunk.body)) {
      for (const ThunkSequence& branch : choice->branches) for_each_thunk(branch, visit);
    }
  }
}

}  // namespace cyxla::compiled
