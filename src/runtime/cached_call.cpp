// Calls that reuse the buffers of the last call's inputs: one thread at a time.
#include "runtime/cached_call.hpp"

#include <algorithm>
#include <bit>
#include <new>
#include <thread>

#include "common/error.hpp"
#include "pjrt/plugin.hpp"
#include "runtime/element_type.hpp"
#include "runtime/host_memory.hpp"
#include "runtime/in_place_variant.hpp"
#include "runtime/runtime.hpp"
#include "runtime/shared_copy.hpp"

namespace cyxla {
namespace {

/// Whether `buffer` reads `data` itself rather than a copy made when it was created: only
/// such a buffer can be kept for later calls. XLA's CPU client aliases aligned dense
/// memory; a plugin that copies gets a new buffer on each call.
bool aliases(const PJRT_Api* api, const pjrt::Buffer& buffer, const void* data) {
  auto where = pjrt::make_args<PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args>();
  where.buffer = buffer.get();
  pjrt::check(pjrt::OwnedError(api, api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&where)),
              "PJRT_Buffer_OpaqueDeviceMemoryDataPointer");
  return where.device_memory_ptr == data;
}

}  // namespace

CachedCall::CachedCall(std::shared_ptr<const Executable> executable)
    : executable_(std::move(executable)),
      host_(executable_->runtime().host_is_device()),
      inputs_(executable_->inputs().size()),
      donor_staging_(executable_->donated_outputs().size()),
      donors_(executable_->donated_outputs().size()),
      donor_buffers_(executable_->donated_outputs().size()),
      arguments_(executable_->inputs().size() + executable_->donated_outputs().size()),
      results_(executable_->outputs().size()),
      candidates_(in_place_candidates(*executable_)) {}

std::byte* CachedCall::area_of(Area& area, size_t bytes) {
  if (area == nullptr) {
    area.reset(static_cast<std::byte*>(allocate_aligned(bytes == 0 ? 1 : bytes)));
    if (area == nullptr) throw std::bad_alloc();
  }
  return area.get();
}

bool CachedCall::execute(std::span<const void* const> inputs, std::span<void* const> outputs) {
  // Elsewhere than on the CPU a buffer is a copy on the device: nothing to keep.
  if (!host_ || busy_.exchange(true, std::memory_order_acquire)) {
    executable_->execute(inputs, outputs);
    return false;
  }
  const Executable& e = *executable_;
  // The donated buffers are consumed by the call; none outlives it, nor the busy flag.
  struct Done {
    std::atomic<bool>& busy;
    std::vector<pjrt::Buffer>& donor_buffers;
    ~Done() {
      for (pjrt::Buffer& buffer : donor_buffers) buffer.reset();
      busy.store(false, std::memory_order_release);
    }
  } done{busy_, donor_buffers_};

  uint64_t readable = 0;  // the candidates that are unaligned, at a readable offset
  for_each_input(candidates_, [&](size_t i) {
    if (readable_offset(inputs[i], element_size(e.inputs()[i].type)) != 0) {
      readable |= uint64_t{1} << i;
    }
  });
  if (readable != 0 && readable == variant_reads_) {
    run_variant(inputs, outputs);
    return false;
  }
  // The kernel runner wraps no buffers to keep, and stages in the thread's memory; it
  // copies unaligned inputs as PJRT's path does, so it asks for the variant alike.
  if (e.runner() == compiled::Runner::Kernels) {
    e.execute(inputs, outputs);
    return ask_for_variant(readable);
  }
  const PJRT_Api* api = e.runtime().plugin().api();
  const size_t n_in = inputs_.size();
  const std::vector<size_t>& donated = e.donated_outputs();

  for (size_t i = 0; i < n_in; ++i) {
    Input& in = inputs_[i];
    const void* data = inputs[i];
    if (!is_aligned(data)) {
      const size_t bytes = e.input_bytes()[i];
      std::byte* staging = area_of(in.staging, bytes);
      shared_copy(staging, data, bytes);
      data = staging;
    }
    // A kept buffer aliases its address only: it is used again when the address comes
    // back, whatever array is there now, since the plugin reads the memory when it runs.
    if (data != in.data || !in.buffer) {
      in.data = nullptr;  // kept only once the new buffer is known to alias `data`
      in.buffer = e.host_buffer(i, data);
      if (aliases(api, in.buffer, data)) in.data = data;
    }
    arguments_[i] = in.buffer.get();
  }
  e.place_donors(inputs, outputs, donors_);
  for (size_t k = 0; k < donated.size(); ++k) {
    const size_t j = donated[k];
    void* data = donors_[k];
    if (data == nullptr) data = area_of(donor_staging_[k], e.output_bytes()[j]);
    donor_buffers_[k] = e.donor_buffer(j, data);
    arguments_[n_in + k] = donor_buffers_[k].get();
  }
  e.execute_buffers(arguments_.data(), results_, outputs);
  return ask_for_variant(readable);
}

bool CachedCall::ask_for_variant(uint64_t copied) noexcept {
  copies_in_a_row_ = copied != 0 && copied == copied_ ? copies_in_a_row_ + 1 : 1;
  copied_ = copied;
  // Once asked, never again: a variant is given for that mask, or none can be made.
  if (copied == 0 || asked_.load(std::memory_order_relaxed) != 0 ||
      copies_in_a_row_ < kCopiesBeforeVariant) {
    return false;
  }
  asked_.store(copied, std::memory_order_relaxed);
  return true;
}

void CachedCall::run_variant(std::span<const void* const> inputs,
                             std::span<void* const> outputs) {
  const size_t n_in = inputs_.size();
  std::copy(inputs.begin(), inputs.end(), variant_arguments_.begin());
  auto* offsets = reinterpret_cast<int32_t*>(offsets_.get());
  // execute() found each of these unaligned, at a whole number of elements.
  for_each_input(variant_reads_, [&](size_t i) {
    const size_t offset = reinterpret_cast<uintptr_t>(inputs[i]) % kHostAlignment;
    variant_arguments_[i] = static_cast<const std::byte*>(inputs[i]) - offset;
    *offsets++ = static_cast<int32_t>(offset / element_size(executable_->inputs()[i].type));
  });
  variant_arguments_[n_in] = offsets_.get();
  // The variant's own inputs are aligned: it never asks for a variant of its own.
  (void)variant_->execute(variant_arguments_, outputs);
  calls_read_in_place_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<TensorSpec> CachedCall::variant_inputs() const {
  const uint64_t mask = asked_.load(std::memory_order_relaxed);
  if (mask == 0) return {};
  return in_place_variant_inputs(*executable_, mask);
}

void CachedCall::read_in_place(std::shared_ptr<const Executable> variant) {
  const uint64_t mask = asked_.load(std::memory_order_relaxed);
  const Executable& e = *executable_;
  if (mask == 0 || variant->inputs() != in_place_variant_inputs(e, mask) ||
      variant->outputs() != e.outputs() || variant->donated_outputs() != e.donated_outputs() ||
      &variant->runtime() != &e.runtime()) {
    throw Error(ErrorKind::InvalidArgument,
                "read_in_place: the variant does not take the inputs the call asked for, or "
                "differs from the program in its outputs, donated outputs or runtime");
  }
  auto call = std::make_unique<CachedCall>(std::move(variant));
  Area offsets;
  area_of(offsets, static_cast<size_t>(std::popcount(mask)) * sizeof(int32_t));
  std::vector<const void*> arguments(inputs_.size() + 1);
  // Calls in other threads use the kept state under the busy flag: wait for the current one.
  while (busy_.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  variant_ = std::move(call);
  offsets_ = std::move(offsets);
  variant_arguments_ = std::move(arguments);
  variant_reads_ = mask;
  busy_.store(false, std::memory_order_release);
}

}  // namespace cyxla
