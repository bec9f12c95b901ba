// Which runner a compiled program would take, and why: the plugin's own kernels called by
// cyxla (the executable is a sequence cyxla can run, over objects it can load), or PJRT.
// The one place that rules which thunks, relocations and symbols qualify.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiled/cpu_executable.hpp"
#include "compiled/elf_object.hpp"

namespace cyxla::compiled {

enum class Runner { Kernels, Pjrt };

/// The alignment the kernel runner gives every allocation's memory: the most a kernel
/// may ask for (KernelThunk::min_alignment) on the kernel runner.
inline constexpr uint64_t kRunnerAlignment = 64;

/// "kernels" or "pjrt".
std::string_view runner_name(Runner runner) noexcept;

struct RunnerVerdict {
  Runner runner = Runner::Pjrt;
  /// Why, in words: what qualifies it, or the first thing that stops the kernel runner.
  /// UTF-8: bytes of the names it quotes that are not are written \xNN.
  std::string reason;
};

/// An executable read in full: the executable, and each of its objects read (in order).
struct CompiledForm {
  CpuExecutable executable;
  std::vector<ElfObject> objects;
};

/// A summary of what the executable holds, for people (`python -m cyxla info`); its
/// names are UTF-8, as RunnerVerdict::reason is.
struct CompiledSummary {
  std::string triple, cpu;
  std::map<std::string, size_t> thunk_kinds;  // nested sequences included
  std::vector<std::string> kernels;           // the kernel thunks' names, in order
  std::vector<std::string> undefined_symbols;
  std::vector<std::string> relocation_types;
  size_t objects = 0, allocations = 0, constant_allocations = 0;
};

/// The executable `serialized` and its objects read; throws what a reader refused.
CompiledForm read_compiled_form(std::string_view serialized);

/// The verdict on a form that was read.
RunnerVerdict runner_verdict(const CompiledForm& form);

/// A verdict, and the form it judged (null when a reader refused the bytes).
struct Judged {
  RunnerVerdict verdict;
  std::shared_ptr<const CompiledForm> form;
};

/// The plugin's serialized executable read and judged: `pjrt` with the reader's message
/// where a reader refuses it. Never throws cyxla::Error.
Judged judge(std::string_view serialized);

/// judge(serialized).verdict.
RunnerVerdict runner_verdict(std::string_view serialized);

/// What `form` holds.
CompiledSummary summarize(const CompiledForm& form);

/// Whether the kernel runner applies x86-64 relocation `type`.
bool applies_relocation(uint32_t type) noexcept;

}  // namespace cyxla::compiled
