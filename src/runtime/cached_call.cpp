// Calls that reuse the buffers of the last call's inputs: one thread at a time.
#include "runtime/cached_call.hpp"

#include <new>

#include "pjrt/plugin.hpp"
#include "runtime/host_memory.hpp"
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
      results_(executable_->outputs().size()) {}

std::byte* CachedCall::area_of(Area& area, size_t bytes) {
  if (area == nullptr) {
    area.reset(static_cast<std::byte*>(allocate_aligned(bytes == 0 ? 1 : bytes)));
    if (area == nullptr) throw std::bad_alloc();
  }
  return area.get();
}

void CachedCall::execute(std::span<const void* const> inputs, std::span<void* const> outputs) {
  // Elsewhere than on the CPU a buffer is a copy on the device: nothing to keep.
  if (!host_ || busy_.exchange(true, std::memory_order_acquire)) {
    executable_->execute(inputs, outputs);
    return;
  }
  const Executable& e = *executable_;
  const PJRT_Api* api = e.runtime().plugin().api();
  const size_t n_in = inputs_.size();
  const std::vector<size_t>& donated = e.donated_outputs();
  // The donated buffers are consumed by the call; none outlives it, nor the busy flag.
  struct Done {
    std::atomic<bool>& busy;
    std::vector<pjrt::Buffer>& donor_buffers;
    ~Done() {
      for (pjrt::Buffer& buffer : donor_buffers) buffer.reset();
      busy.store(false, std::memory_order_release);
    }
  } done{busy_, donor_buffers_};

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
}

}  // namespace cyxla
