// The CPU plugin's serialized executable (what PJRT_Executable_Serialize returns and the
// disk cache stores): an xla.ExecutableAndOptionsProto whose executable is the CPU
// compiler's xla.cpu.CompilationResultProto, read into what a runner needs: the target
// machine, the compiled symbols, the ELF objects, the buffer assignment and the thunks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiled/buffer_assignment.hpp"
#include "compiled/hlo_module.hpp"
#include "compiled/thunk_sequence.hpp"

namespace cyxla::compiled {

/// What the objects were compiled for (TargetMachineOptionsProto).
struct TargetMachine {
  std::string triple;    // "x86_64-unknown-linux-gnu"
  std::string cpu;       // "znver5"
  std::string features;  // "+avx512f,..."
};

/// A function the objects define (SymbolProto): a kernel, or a sort's comparator.
struct CompiledSymbol {
  enum Kind : uint64_t { kUnknown = 0, kKernel = 1, kComparator = 2 };
  uint64_t kind = kUnknown;
  std::string name;
};

/// One ELF relocatable object (ObjFileProto), its bytes copied out of the executable.
struct ObjectFile {
  std::string name;
  std::string contents;
};

struct CpuExecutable {
  TargetMachine target;
  std::vector<CompiledSymbol> symbols;
  std::vector<ObjectFile> objects;
  BufferAssignment buffers;
  ThunkSequence thunks;
  /// Whether the executable holds a thunk sequence at all (an older, JIT-only form
  /// would not).
  bool has_thunk_sequence = false;
  /// The size of its optimized HLO module, which holds the constants' values.
  size_t hlo_module_size = 0;
  /// What the runner needs from that module: where the outputs come from, the constants.
  HloModuleFacts module;
  /// Where each output lies: the slice of the logical buffer its instruction defines, or
  /// that its aliases name; for the one output (at most) whose value only passes through
  /// (a loop's result read by get-tuple-element, which XLA finds by analysis), the whole
  /// of the one allocation that may be live out and holds no other output. Empty when
  /// that leaves any doubt, or the module does not name the outputs.
  std::vector<Slice> results;
};

/// `serialized`, the plugin's serialized executable, read. Every slice a thunk names is
/// checked to lie inside its allocation. Throws cyxla::Error (Pjrt) naming the message,
/// field and byte offset of what it could not read.
CpuExecutable read_cpu_executable(std::string_view serialized);

/// The value of the constant instruction that defines logical buffer `logical_buffer` of
/// `e`, or null when no constant instruction of its module does.
const ConstantBytes* constant_of(const CpuExecutable& e, uint64_t logical_buffer) noexcept;

}  // namespace cyxla::compiled
