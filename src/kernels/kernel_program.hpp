// The kernel runner's program: a compiled form's thunk sequence with its kernels loaded
// into this process (LoadedCode), run over allocations whose memory the caller lays out.
// No PJRT: the same object code PJRT would call, called directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "compiled/runner_verdict.hpp"
#include "kernels/kernel_call.hpp"
#include "kernels/loaded_code.hpp"

namespace cyxla::kernels {

/// What the runtime knows a program by: its inputs' and outputs' sizes, and its donated
/// outputs (output donated_outputs[k] is written into parameter input_bytes.size() + k).
struct ProgramShape {
  std::span<const size_t> input_bytes;
  std::span<const size_t> output_bytes;
  std::span<const size_t> donated_outputs;
};

class KernelProgram {
 public:
  /// Where an allocation's memory comes from in a call.
  struct Place {
    /// Nowhere: a thread-local allocation, the kernels' own, which no thunk names.
    enum class From : uint8_t { Input, Donor, Scratch, Constant, Nowhere };
    From from = From::Scratch;
    /// The input's index, the donated output's k, the offset into the call's scratch or
    /// into constants().
    size_t index = 0;
  };
  static constexpr size_t kNone = std::numeric_limits<size_t>::max();

  /// The program of `form`, whose verdict is Runner::Kernels, for an executable of
  /// `shape`; loads its objects. Throws cyxla::Error (Pjrt) saying why when the form and
  /// the shape disagree or an object cannot be loaded: the program then stays on PJRT.
  KernelProgram(const compiled::CompiledForm& form, const ProgramShape& shape);
  ~KernelProgram();
  KernelProgram(const KernelProgram&) = delete;
  KernelProgram& operator=(const KernelProgram&) = delete;

  /// One place per allocation, by index.
  std::span<const Place> places() const noexcept { return places_; }
  /// Where each output lies.
  std::span<const compiled::Slice> outputs() const noexcept { return outputs_; }
  /// Per output, the scratch allocation that is exactly that output and holds no other
  /// output, which a call may place in the caller's memory for it; kNone otherwise.
  std::span<const size_t> direct_allocations() const noexcept { return direct_; }
  /// The scratch a call needs: every allocation that is not an input's or a donor's,
  /// each at a kRunnerAlignment-aligned offset.
  size_t scratch_bytes() const noexcept { return scratch_bytes_; }
  /// The constants' allocations, filled from the HLO module once and only read by the
  /// kernels: one block for every call, each at a kRunnerAlignment-aligned offset.
  std::byte* constants() const noexcept { return constants_.get(); }

  /// Every address the steps read or write, over the allocations `bases` (`bases[a]` is
  /// allocation a's memory, kRunnerAlignment-aligned; an input's is only read), into
  /// `slices` (resized, its capacity reused): what a call resolves once for its memory.
  void resolve(std::byte* const* bases, std::vector<KernelArg>& slices) const;
  /// Runs the thunks over addresses resolve() gave: a kernel gets its arguments where they
  /// lie. Allocates nothing. Safe from many threads at once over distinct memory. Throws
  /// cyxla::Error (Pjrt) when a kernel reports an error.
  void run(const std::vector<KernelArg>& resolved) const;

  struct Sequence;  // the resolved thunks (kernel_program.cpp)

 private:
  void fill_constants(const compiled::CpuExecutable& e, size_t bytes);

  LoadedCode code_;
  std::vector<Place> places_;
  std::vector<compiled::Slice> outputs_;
  std::vector<size_t> direct_;
  size_t scratch_bytes_ = 0;
  size_t slice_count_ = 0;  // the slices the steps name, numbered in resolve()'s order
  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> constants_;
  std::unique_ptr<const Sequence> steps_;
};

}  // namespace cyxla::kernels
