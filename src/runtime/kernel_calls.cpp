// The kernel runner's side of an executable: building its program once, laying out a
// call's memory (the caller's where it can be, staging and scratch where it must), and
// reading the outputs back. execute() lays out each call; a BoundCall resolves its call
// once.
#include "common/error.hpp"
#include "runtime/executable.hpp"
#include "runtime/host_memory.hpp"
#include "runtime/shared_copy.hpp"
#include "runtime/small_array.hpp"

namespace cyxla {

static_assert(compiled::kRunnerAlignment == kHostAlignment,
              "staging and scratch give kernels the alignment the verdict promises them");

using Place = kernels::KernelProgram::Place;

void Executable::set_judged(compiled::Judged judged, const std::string& forced_pjrt) {
  judged_ = std::move(judged);
  runner_reason_ = judged_.verdict.reason;
  kernels_.reset();
  if (judged_.verdict.runner != compiled::Runner::Kernels || judged_.form == nullptr) return;
  if (!forced_pjrt.empty()) {
    runner_reason_ = forced_pjrt;
    return;
  }
  try {
    kernels_ = std::make_shared<const kernels::KernelProgram>(
        *judged_.form, kernels::ProgramShape{input_bytes_, output_bytes_, donated_outputs_});
  } catch (const Error& error) {
    runner_reason_ = error.what();
  }
}

size_t Executable::kernel_call_bytes(std::span<const void* const> inputs,
                                     std::span<void* const> donors) const noexcept {
  return staged_bytes(inputs, donors) + kernels_->scratch_bytes();
}

void Executable::lay_out_kernel_call(std::span<const void* const> inputs,
                                     std::span<void* const> outputs,
                                     std::span<void* const> donors, std::byte* memory,
                                     std::span<std::byte*> bases) const noexcept {
  const kernels::KernelProgram& program = *kernels_;
  // Staging first, in the order staged_bytes counts it: unaligned inputs, then donors
  // without memory of their own.
  std::byte* next = memory;
  SmallArray<std::byte*> staged_input(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    // Kernels only read an input's allocation (the verdict keeps outputs out of them).
    auto* data = static_cast<std::byte*>(const_cast<void*>(inputs[i]));
    if (!is_aligned(data)) {
      data = next;
      next += round_up(input_bytes_[i]);
    }
    staged_input[i] = data;
  }
  SmallArray<std::byte*> donor(donors.size());
  for (size_t k = 0; k < donors.size(); ++k) {
    donor[k] = static_cast<std::byte*>(donors[k]);
    if (donor[k] == nullptr) {
      donor[k] = next;
      next += round_up(output_bytes_[donated_outputs_[k]]);
    }
  }
  std::span<const Place> places = program.places();
  for (size_t a = 0; a < places.size(); ++a) {
    const Place& place = places[a];
    switch (place.from) {
      case Place::From::Input: bases[a] = staged_input[place.index]; break;
      case Place::From::Donor: bases[a] = donor[place.index]; break;
      case Place::From::Scratch: bases[a] = next + place.index; break;
      case Place::From::Constant: bases[a] = program.constants() + place.index; break;
      case Place::From::Nowhere: bases[a] = nullptr; break;
    }
  }
  std::span<const size_t> direct = program.direct_allocations();
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (direct[j] != kernels::KernelProgram::kNone &&
        writable_in_place(j, outputs[j], inputs, outputs)) {
      bases[direct[j]] = static_cast<std::byte*>(outputs[j]);
    }
  }
}

void Executable::stage_inputs(std::span<const void* const> inputs,
                              std::span<std::byte* const> bases) const noexcept {
  std::span<const Place> places = kernels_->places();
  for (size_t a = 0; a < places.size(); ++a) {
    if (places[a].from != Place::From::Input) continue;
    const size_t i = places[a].index;
    if (bases[a] != inputs[i]) shared_copy(bases[a], inputs[i], input_bytes_[i]);
  }
}

Executable::ResolvedKernelCall Executable::resolve_kernel_call(
    std::span<const void* const> inputs, std::span<void* const> outputs,
    std::span<std::byte* const> bases) const {
  ResolvedKernelCall call{kernels_->resolve(bases.data()), {}, {}};
  std::span<const Place> places = kernels_->places();
  for (size_t a = 0; a < places.size(); ++a) {
    if (places[a].from != Place::From::Input) continue;
    const size_t i = places[a].index;
    if (bases[a] != inputs[i] && input_bytes_[i] != 0) {
      call.inputs_staged.push_back({inputs[i], bases[a], input_bytes_[i]});
    }
  }
  std::span<const compiled::Slice> slices = kernels_->outputs();
  for (size_t j = 0; j < outputs.size(); ++j) {
    const std::byte* result = bases[slices[j].allocation] + slices[j].offset;
    if (result != outputs[j] && output_bytes_[j] != 0) {
      call.outputs_copied.push_back({result, outputs[j], output_bytes_[j]});
    }
  }
  return call;
}

void Executable::run_resolved(const ResolvedKernelCall& call) const {
  for (const HostCopy& copy : call.inputs_staged) copy.run();
  kernels_->run(call.slices);
  for (const HostCopy& copy : call.outputs_copied) copy.run();
}

void Executable::run_kernels(std::span<std::byte* const> bases, std::span<void* const> outputs,
                             std::span<bool> in_place) const {
  kernels_->run(bases.data());
  std::span<const compiled::Slice> slices = kernels_->outputs();
  for (size_t j = 0; j < outputs.size(); ++j) {
    const std::byte* result = bases[slices[j].allocation] + slices[j].offset;
    const bool there = result == outputs[j];
    if (!in_place.empty()) in_place[j] = there;
    if (!there && output_bytes_[j] != 0) shared_copy(outputs[j], result, output_bytes_[j]);
  }
}

}  // namespace cyxla
