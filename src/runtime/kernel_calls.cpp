// The kernel runner's side of an executable: building its program once, laying out a
// call's memory (the caller's where it can be, staging and scratch where it must), and
// reading the outputs back. A call is resolved once for the memory it runs over: a
// BoundCall's at bind, execute()'s when a thread's call differs from its last.
#include "common/error.hpp"
#include "runtime/executable.hpp"
#include "runtime/host_memory.hpp"
#include "runtime/shared_copy.hpp"
#include "runtime/small_array.hpp"

namespace cyxla {

static_assert(compiled::kRunnerAlignment == kHostAlignment,
              "staging and scratch give kernels the alignment the verdict promises them");

using Place = kernels::KernelProgram::Place;

/// The kernel runner's memory in one thread: the scratch that its calls through execute()
/// lay out in, and the last such call, resolved (as a bound call's is) and known by what
/// its layout depends on: the executable and the caller's pointers. A native loop calls one
/// executable over the same memory again and again, and each call after the first runs
/// the last one's resolution. Only the last call lays out in the scratch, so a remembered
/// call's memory has not moved.
struct LastKernelCall {
  Scratch scratch;
  uint64_t executable = 0;  // Executable::id_; 0 is none
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  Executable::ResolvedKernelCall call;

  bool is(uint64_t id, std::span<const void* const> in, std::span<void* const> out) const {
    // A loop, not std::ranges::equal: its memcmp costs more than a few pointers' compares.
    if (executable != id || in.size() != inputs.size() || out.size() != outputs.size()) {
      return false;
    }
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i] != inputs[i]) return false;
    }
    for (size_t j = 0; j < out.size(); ++j) {
      if (out[j] != outputs[j]) return false;
    }
    return true;
  }
};

namespace {

LastKernelCall& last_kernel_call() {
  thread_local LastKernelCall last;
  return last;
}

}  // namespace

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

void Executable::execute_kernels(std::span<const void* const> inputs,
                                 std::span<void* const> outputs, std::span<bool> in_place) const {
  LastKernelCall& last = last_kernel_call();
  if (!last.is(id_, inputs, outputs)) lay_out_in_thread(inputs, outputs, last);
  run_resolved(last.call);
  for (size_t j = 0; j < in_place.size(); ++j) in_place[j] = last.call.in_place[j] != 0;
}

void Executable::lay_out_in_thread(std::span<const void* const> inputs,
                                   std::span<void* const> outputs, LastKernelCall& last) const {
  // The same layout as a BoundCall's, in this thread's scratch memory.
  const size_t n_donated = donated_outputs_.size();
  SmallArray<void*> donors(n_donated);
  place_donors(inputs, outputs, {donors.data(), n_donated});
  const size_t bytes = kernel_call_bytes(inputs, {donors.data(), n_donated});
  // Until it is laid out again, the call remembered is none: growing the scratch frees
  // the memory the last call was laid out in, and a throw may leave it half resolved.
  last.executable = 0;
  std::byte* memory = bytes != 0 ? last.scratch.reserve(bytes) : nullptr;
  SmallArray<std::byte*> bases(kernels_->places().size());
  lay_out_kernel_call(inputs, outputs, {donors.data(), n_donated}, memory,
                      {bases.data(), bases.size()});
  resolve_kernel_call(inputs, outputs, {bases.data(), bases.size()}, last.call);
  last.inputs.assign(inputs.begin(), inputs.end());  // capacity reused: no allocation
  last.outputs.assign(outputs.begin(), outputs.end());
  last.executable = id_;
}

void Executable::resolve_kernel_call(std::span<const void* const> inputs,
                                     std::span<void* const> outputs,
                                     std::span<std::byte* const> bases,
                                     ResolvedKernelCall& call) const {
  kernels_->resolve(bases.data(), call.slices);
  call.inputs_staged.clear();
  call.outputs_copied.clear();
  call.in_place.assign(outputs.size(), 0);
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
    call.in_place[j] = result == outputs[j];
    if (result != outputs[j] && output_bytes_[j] != 0) {
      call.outputs_copied.push_back({result, outputs[j], output_bytes_[j]});
    }
  }
}

void Executable::run_resolved(const ResolvedKernelCall& call) const {
  for (const HostCopy& copy : call.inputs_staged) copy.run();
  kernels_->run(call.slices);
  for (const HostCopy& copy : call.outputs_copied) copy.run();
}

}  // namespace cyxla
