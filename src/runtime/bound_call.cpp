// Binding host memory to a program once, and calling it: one thread at a time.
#include "runtime/bound_call.hpp"

#include <new>

#include "runtime/host_memory.hpp"
#include "runtime/runtime.hpp"
#include "runtime/shared_copy.hpp"

namespace cyxla {

BoundCall::BoundCall(std::shared_ptr<const Executable> executable,
                     std::span<const void* const> inputs, std::span<void* const> outputs)
    : executable_(std::move(executable)),
      inputs_(inputs.begin(), inputs.end()),
      outputs_(outputs.begin(), outputs.end()),
      results_(outputs.size()) {
  const Executable& e = *executable_;
  // Elsewhere than on the CPU a buffer is a copy on the device, made from the input's
  // current bytes: each call then uploads its inputs (execute()).
  if (!e.runtime().host_is_device()) return;
  resident_ = true;
  const std::vector<size_t>& donated = e.donated_outputs();
  // Donated outputs are written in place where they can be (Executable::execute), and
  // into memory of the bound call's own, copied out after each call, where they cannot.
  donors_.resize(donated.size());
  e.place_donors(inputs_, outputs_, donors_);
  if (e.runner() == compiled::Runner::Kernels) {
    if (const size_t bytes = e.kernel_call_bytes(inputs_, donors_); bytes != 0) {
      kernel_memory_.reset(allocate_aligned(bytes));
      if (kernel_memory_ == nullptr) throw std::bad_alloc();
    }
    std::vector<std::byte*> bases(e.compiled_form()->executable.buffers.allocations.size());
    e.lay_out_kernel_call(inputs_, outputs_, donors_,
                          static_cast<std::byte*>(kernel_memory_.get()), bases);
    e.resolve_kernel_call(inputs_, outputs_, bases, kernel_call_.emplace());
    return;
  }
  if (const size_t staged = e.staged_bytes(inputs_, donors_); staged != 0) {
    staging_.reset(allocate_aligned(staged));
    if (staging_ == nullptr) throw std::bad_alloc();
  }
  auto* next = static_cast<std::byte*>(staging_.get());
  buffers_.reserve(inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const void* data = inputs_[i];
    if (!is_aligned(data)) {
      staged_.push_back({data, next, e.input_bytes()[i]});
      data = next;
      next += round_up(e.input_bytes()[i]);
    }
    buffers_.push_back(e.host_buffer(i, data));
    arguments_.push_back(buffers_.back().get());
  }
  for (size_t k = 0; k < donated.size(); ++k) {
    if (donors_[k] != nullptr) continue;
    donors_[k] = next;
    next += round_up(e.output_bytes()[donated[k]]);
  }
  donor_buffers_.resize(donated.size());
  arguments_.resize(inputs_.size() + donated.size());
}

bool BoundCall::call() {
  if (busy_.exchange(true, std::memory_order_acquire)) return false;
  struct Done {
    std::atomic<bool>& busy;
    ~Done() { busy.store(false, std::memory_order_release); }
  } done{busy_};
  call_alone();
  return true;
}

void BoundCall::call_alone() {
  if (!resident_) {
    executable_->execute(inputs_, outputs_);
    return;
  }
  if (kernel_call_) {
    executable_->run_resolved(*kernel_call_);
    return;
  }
  // The buffers alias the caller's memory (or the copies refreshed here): the plugin reads
  // what it holds now. PJRT asks that memory under a zero-copy buffer not change while the
  // buffer lives; the CPU client reads it only inside Execute, which runs synchronously in
  // this thread, so changes between calls are seen and none races with a read.
  for (const HostCopy& copy : staged_) copy.run();
  // A donated buffer is consumed by the call that it is donated to: one per call.
  const std::vector<size_t>& donated = executable_->donated_outputs();
  for (size_t k = 0; k < donated.size(); ++k) {
    donor_buffers_[k] = executable_->donor_buffer(donated[k], donors_[k]);
    arguments_[inputs_.size() + k] = donor_buffers_[k].get();
  }
  executable_->execute_buffers(arguments_.data(), results_, outputs_);
  for (pjrt::Buffer& buffer : donor_buffers_) buffer.reset();
}

}  // namespace cyxla
