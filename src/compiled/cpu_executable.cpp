// The CPU executable reader: the envelope (ExecutableAndOptionsProto), then the
// CompilationResultProto's fields, then the slices checked against the allocations.
#include "compiled/cpu_executable.hpp"

#include <optional>

#include "common/checked.hpp"
#include "common/error.hpp"

namespace cyxla::compiled {
namespace {

// xla/pjrt/proto/compile_options.proto
constexpr uint32_t kEnvelopeExecutable = 1;  // ExecutableAndOptionsProto.serialized_executable
// xla/service/cpu/executable.proto
enum : uint32_t {  // CompilationResultProto
  kHloModule = 1,
  kBufferAssignment = 2,
  kObjFiles = 4,  // an older revision's `repeated bytes obj_files`, now reserved
  kThunkSequence = 6,
  kCompiledSymbols = 7,
  kObjectFiles = 8,
  kTargetMachine = 9,
};
enum : uint32_t { kSymbolKind = 1, kSymbolName = 2 };             // SymbolProto
enum : uint32_t { kObjectContents = 1, kObjectName = 2 };         // ObjFileProto
enum : uint32_t { kTargetTriple = 1, kTargetCpu = 2, kTargetFeatures = 3 };

void read_result(WireReader reader, CpuExecutable& out) {
  for (WireField f; reader.next(f);) {
    switch (f.number) {
      case kHloModule:
        out.hlo_module_size = reader.bytes_of(f).size();
        out.module = read_hlo_module(reader, f);
        break;
      case kBufferAssignment: out.buffers = read_buffer_assignment(reader, f); break;
      case kObjFiles:
        reader.fail(f.offset, "it keeps its objects in field 4, an older layout cyxla does "
                              "not read");
      case kThunkSequence:
        out.thunks = read_thunk_sequence(reader, f);
        out.has_thunk_sequence = true;
        break;
      case kCompiledSymbols: {
        WireReader symbol = reader.nested(f, "SymbolProto");
        CompiledSymbol& s = out.symbols.emplace_back();
        for (WireField g; symbol.next(g);) {
          if (g.number == kSymbolKind) s.kind = symbol.varint_of(g);
          if (g.number == kSymbolName) s.name = std::string(symbol.bytes_of(g));
        }
        break;
      }
      case kObjectFiles: {
        WireReader object = reader.nested(f, "ObjFileProto");
        ObjectFile& o = out.objects.emplace_back();
        for (WireField g; object.next(g);) {
          if (g.number == kObjectContents) o.contents = std::string(object.bytes_of(g));
          if (g.number == kObjectName) o.name = std::string(object.bytes_of(g));
        }
        break;
      }
      case kTargetMachine: {
        WireReader target = reader.nested(f, "TargetMachineOptionsProto");
        for (WireField g; target.next(g);) {
          if (g.number == kTargetTriple) out.target.triple = std::string(target.bytes_of(g));
          if (g.number == kTargetCpu) out.target.cpu = std::string(target.bytes_of(g));
          if (g.number == kTargetFeatures) out.target.features = std::string(target.bytes_of(g));
        }
        break;
      }
      default: break;  // the entry function's name, the objects' kind, the data layout
    }
  }
}

void check_slice(const BufferAssignment& buffers, const Slice& slice, const Thunk& thunk,
                 const std::string& role) {
  const std::string where =
      "thunk '" + thunk.kind + "' (" + thunk.op_name + ")'s " + role;
  if (slice.allocation >= buffers.allocations.size()) {
    throw Error(ErrorKind::Pjrt, "CompilationResultProto is inconsistent: " + where +
                                     " names allocation " + std::to_string(slice.allocation) +
                                     " of " + std::to_string(buffers.allocations.size()));
  }
  const uint64_t size = buffers.allocations[slice.allocation].size;
  const auto end = checked_sum(slice.offset, slice.size);
  if (!end || *end > size) {
    throw Error(ErrorKind::Pjrt, "CompilationResultProto is inconsistent: " + where + " (" +
                                     std::to_string(slice.size) + " bytes at " +
                                     std::to_string(slice.offset) + ") runs past allocation " +
                                     std::to_string(slice.allocation) + "'s " +
                                     std::to_string(size) + " bytes");
  }
}

void check_slices(const CpuExecutable& e) {
  for_each_thunk(e.thunks, [&](const Thunk& thunk) {
    if (const auto* kernel = std::get_if<KernelThunk>(&thunk.body)) {
      for (size_t i = 0; i < kernel->arguments.size(); ++i) {
        check_slice(e.buffers, kernel->arguments[i], thunk, "argument " + std::to_string(i));
      }
      for (size_t i = 0; i < kernel->results.size(); ++i) {
        check_slice(e.buffers, kernel->results[i], thunk, "result " + std::to_string(i));
      }
    } else if (const auto* copy = std::get_if<CopyThunk>(&thunk.body)) {
      check_slice(e.buffers, copy->source, thunk, "source");
      check_slice(e.buffers, copy->destination, thunk, "destination");
    } else if (const auto* loop = std::get_if<WhileThunk>(&thunk.body)) {
      check_slice(e.buffers, loop->condition_buffer, thunk, "condition buffer");
    } else if (const auto* choice = std::get_if<ConditionalThunk>(&thunk.body)) {
      check_slice(e.buffers, choice->branch_index_buffer, thunk, "branch index");
    }
  });
}

/// Where the logical buffer `id` lies, if one allocation holds it inside its bounds.
std::optional<Slice> slice_of(const BufferAssignment& buffers, uint64_t id) {
  std::optional<Slice> slice;
  for (const Allocation& a : buffers.allocations) {
    for (const Assigned& assigned : a.assigned) {
      if (assigned.logical_buffer != id) continue;
      if (slice) return std::nullopt;  // in two places: no one answer
      slice = Slice{a.index, assigned.offset, assigned.size};
    }
  }
  const auto end = slice ? checked_sum(slice->offset, slice->size) : std::nullopt;
  if (!end || *end > buffers.allocations[slice->allocation].size) return std::nullopt;
  return slice;
}

/// CpuExecutable::results: where the value of each result instruction (at the top of its
/// shape) lies: the logical buffer it defines, or the buffers its aliases name, which
/// must agree; then the one left, if any, by elimination.
std::vector<Slice> find_results(const CpuExecutable& e) {
  std::vector<Slice> found;
  std::vector<bool> claimed(e.buffers.allocations.size());
  std::optional<size_t> unknown;
  for (uint64_t instruction : e.module.result_instructions) {
    std::optional<Slice> slice;
    bool agree = true;
    const auto take = [&](uint64_t buffer) {
      const std::optional<Slice> s = slice_of(e.buffers, buffer);
      agree = agree && s && (!slice || (s->allocation == slice->allocation &&
                                        s->offset == slice->offset && s->size == slice->size));
      slice = s;
    };
    for (const LogicalBuffer& b : e.buffers.logical_buffers) {
      if (b.instruction == instruction && b.shape_index.empty()) take(b.id);
    }
    for (const BufferAlias& alias : e.buffers.aliases) {
      if (alias.instruction == instruction && alias.shape_index.empty()) take(alias.logical_buffer);
    }
    if (slice && agree) {
      found.push_back(*slice);
      claimed[slice->allocation] = true;
      continue;
    }
    if (unknown) return {};  // two outputs whose place is not written down
    unknown = found.size();
    found.emplace_back();
  }
  if (!unknown) return found;
  const Allocation* live = nullptr;
  for (const Allocation& a : e.buffers.allocations) {
    if (!a.maybe_live_out || a.is_tuple || claimed[a.index]) continue;
    if (live != nullptr) return {};  // two candidates
    live = &a;
  }
  if (live == nullptr) return {};
  found[*unknown] = Slice{live->index, 0, live->size};
  return found;
}

}  // namespace

CpuExecutable read_cpu_executable(std::string_view serialized) {
  WireReader envelope(serialized, "ExecutableAndOptionsProto");
  std::optional<WireField> executable;
  for (WireField f; envelope.next(f);) {
    if (f.number == kEnvelopeExecutable) executable = f;
  }
  if (!executable) {
    envelope.fail(0, "it holds no executable (field 1)");
  }
  CpuExecutable out;
  read_result(envelope.nested(*executable, "CompilationResultProto"), out);
  check_slices(out);
  out.results = find_results(out);
  return out;
}

const ConstantBytes* constant_of(const CpuExecutable& e, uint64_t logical_buffer) noexcept {
  for (const LogicalBuffer& b : e.buffers.logical_buffers) {
    if (b.id != logical_buffer) continue;
    const auto found = e.module.constants.find(b.instruction);
    return found == e.module.constants.end() ? nullptr : &found->second;
  }
  return nullptr;
}

}  // namespace cyxla::compiled
