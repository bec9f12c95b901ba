// Reading an executable's outputs, and execute(): host memory in, host memory out.
#include "runtime/executable.hpp"

#include <new>

#include "runtime/element_type.hpp"
#include "runtime/hlo_signature.hpp"
#include "runtime/runtime.hpp"
#include "runtime/shared_copy.hpp"
#include "runtime/small_array.hpp"

namespace cyxla {
namespace {

std::vector<TensorSpec> output_specs(const pjrt::Plugin& plugin, PJRT_Executable* executable) {
  auto types = pjrt::make_args<PJRT_Executable_OutputElementTypes_Args>();
  types.executable = executable;
  CYXLA_PJRT_CALL(plugin, PJRT_Executable_OutputElementTypes, types);
  auto dims = pjrt::make_args<PJRT_Executable_OutputDimensions_Args>();
  dims.executable = executable;
  CYXLA_PJRT_CALL(plugin, PJRT_Executable_OutputDimensions, dims);
  if (dims.num_outputs != types.num_output_types) {
    throw Error(ErrorKind::Pjrt, "the plugin reports " + std::to_string(types.num_output_types) +
                                     " output types but " + std::to_string(dims.num_outputs) +
                                     " output shapes");
  }
  std::vector<TensorSpec> specs(types.num_output_types);
  const int64_t* next = dims.dims;
  for (size_t i = 0; i < specs.size(); ++i) {
    specs[i].type = types.output_types[i];
    specs[i].dims.assign(next, next + dims.dim_sizes[i]);
    next += dims.dim_sizes[i];
  }
  return specs;
}

void await(const pjrt::Plugin& plugin, PJRT_Event* event, std::string_view what) {
  if (event == nullptr) return;
  pjrt::Event owned(plugin.api(), event);
  auto args = pjrt::make_args<PJRT_Event_Await_Args>();
  args.event = event;
  pjrt::check(pjrt::OwnedError(plugin.api(), plugin.api()->PJRT_Event_Await(&args)), what);
}

/// This thread's staging area for unaligned inputs (calls on one thread never overlap).
Scratch& scratch() {
  thread_local Scratch memory;
  return memory;
}

}  // namespace

uint64_t Executable::new_id() noexcept {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

Executable::Executable(std::shared_ptr<const Runtime> runtime, pjrt::LoadedExecutable loaded,
                       std::vector<TensorSpec> inputs, std::vector<size_t> donated_outputs)
    : runtime_(std::move(runtime)),
      loaded_(std::move(loaded)),
      loaded_raw_(loaded_.get()),
      inputs_(std::move(inputs)),
      donated_outputs_(std::move(donated_outputs)) {
  set_input_bytes();
  const pjrt::Plugin& plugin = runtime_->plugin();
  pjrt::Executable executable = pjrt::executable_of(plugin, loaded_.get());
  outputs_ = output_specs(plugin, executable.get());
  set_output_bytes();
}

Executable::Executable(std::shared_ptr<const Runtime> runtime,
                       std::shared_ptr<const std::string> serialized,
                       std::vector<TensorSpec> inputs, std::vector<TensorSpec> outputs,
                       std::vector<size_t> donated_outputs)
    : runtime_(std::move(runtime)),
      serialized_(std::move(serialized)),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)),
      donated_outputs_(std::move(donated_outputs)) {
  set_input_bytes();
  set_output_bytes();
}

void Executable::set_input_bytes() {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (element_size(inputs_[i].type) == 0) {
      throw Error(ErrorKind::TypeMismatch,
                  "input " + std::to_string(i) + " has an element type cyxla does not support");
    }
    input_bytes_.push_back(inputs_[i].bytes());
  }
}

void Executable::set_output_bytes() {
  for (size_t j = 0; j < outputs_.size(); ++j) {
    if (element_size(outputs_[j].type) == 0) {
      throw Error(ErrorKind::TypeMismatch, "output " + std::to_string(j) + " has element type " +
                                               std::string(element_type_name(outputs_[j].type)) +
                                               ", which cyxla does not support");
    }
    output_bytes_.push_back(outputs_[j].bytes());
  }
  std::vector<bool> seen(outputs_.size());
  for (size_t j : donated_outputs_) {
    if (j >= outputs_.size() || seen[j]) {
      throw Error(ErrorKind::InvalidArgument,
                  "donated output " + std::to_string(j) + " is out of range or given twice");
    }
    seen[j] = true;
  }
}

PJRT_LoadedExecutable* Executable::deserialize_deferred() const {
  std::lock_guard lock(deserialize_mutex_);
  if (loaded_) return loaded_.get();  // another thread deserialized it meanwhile
  pjrt::LoadedExecutable loaded = runtime_->deserialize_loaded(*serialized_);
  // What the plugin loads is what the entry recorded of it, or it serves no call.
  const pjrt::Plugin& plugin = runtime_->plugin();
  pjrt::Executable executable = pjrt::executable_of(plugin, loaded.get());
  const std::vector<TensorSpec> outputs = output_specs(plugin, executable.get());
  const std::optional<size_t> parameters = parameter_count(plugin, loaded.get());
  if (outputs != outputs_ ||
      (parameters && *parameters != inputs_.size() + donated_outputs_.size())) {
    throw Error(ErrorKind::Pjrt,
                "the plugin deserialized an executable whose parameters or outputs are not "
                "those its cache entry recorded");
  }
  loaded_ = std::move(loaded);
  loaded_raw_.store(loaded_.get(), std::memory_order_release);
  return loaded_.get();
}

bool Executable::writable_in_place(size_t output, const void* data,
                                   std::span<const void* const> inputs,
                                   std::span<void* const> outputs) const noexcept {
  if (!runtime_->host_is_device() || !is_aligned(data)) return false;
  const auto start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t end = start + output_bytes_[output];
  auto overlaps = [&](const void* other, size_t bytes) {
    const auto other_start = reinterpret_cast<uintptr_t>(other);
    return other_start < end && start < other_start + bytes;
  };
  // The plugin may write an output before it has read every input: memory that is also
  // an input, or another output, takes the copy.
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (overlaps(inputs[i], input_bytes_[i])) return false;
  }
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (j != output && overlaps(outputs[j], output_bytes_[j])) return false;
  }
  return true;
}

void Executable::place_donors(std::span<const void* const> inputs, std::span<void* const> outputs,
                              std::span<void*> donors) const noexcept {
  const bool host = runtime_->host_is_device();
  for (size_t k = 0; k < donated_outputs_.size(); ++k) {
    const size_t j = donated_outputs_[k];
    donors[k] = !host || writable_in_place(j, outputs[j], inputs, outputs) ? outputs[j] : nullptr;
  }
}

size_t Executable::staged_bytes(std::span<const void* const> inputs,
                                std::span<void* const> donors) const noexcept {
  if (!runtime_->host_is_device()) return 0;
  size_t staged = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!is_aligned(inputs[i])) staged += round_up(input_bytes_[i]);
  }
  for (size_t k = 0; k < donors.size(); ++k) {
    if (donors[k] == nullptr) staged += round_up(output_bytes_[donated_outputs_[k]]);
  }
  return staged;
}

pjrt::Buffer Executable::buffer_over(const TensorSpec& spec, const void* data,
                                     PJRT_HostBufferSemantics on_host) const {
  const PJRT_Api* api = runtime_->plugin().api();
  auto args = pjrt::make_args<PJRT_Client_BufferFromHostBuffer_Args>();
  args.client = runtime_->client();
  args.data = data;
  args.type = spec.type;
  args.dims = spec.dims.data();
  args.num_dims = spec.dims.size();
  args.host_buffer_semantics =
      runtime_->host_is_device() ? on_host : PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  args.device = runtime_->device();
  pjrt::check(pjrt::OwnedError(api, api->PJRT_Client_BufferFromHostBuffer(&args)),
              "PJRT_Client_BufferFromHostBuffer");
  pjrt::Buffer buffer(api, args.buffer);
  // On the CPU the host memory stays in use until `buffer` (or the result it was donated
  // to) is destroyed; the event that says so is not needed.
  pjrt::Event done(api, args.done_with_host_buffer);
  return buffer;
}

pjrt::Buffer Executable::host_buffer(size_t input, const void* data) const {
  return buffer_over(inputs_[input], data, PJRT_HostBufferSemantics_kImmutableZeroCopy);
}

pjrt::Buffer Executable::donor_buffer(size_t output, void* data) const {
  // Mutable: the plugin may write the aliased result into `data`.
  return buffer_over(outputs_[output], data, PJRT_HostBufferSemantics_kMutableZeroCopy);
}

void Executable::execute(std::span<const void* const> inputs, std::span<void* const> outputs,
                         std::span<bool> in_place) const {
  if (kernels_) {
    execute_kernels(inputs, outputs, in_place);
  } else {
    execute_pjrt(inputs, outputs, in_place);
  }
}

void Executable::execute_pjrt(std::span<const void* const> inputs, std::span<void* const> outputs,
                              std::span<bool> in_place) const {
  const size_t n_in = inputs_.size();
  const size_t n_out = outputs_.size();
  const size_t n_donated = donated_outputs_.size();
  // On the CPU every input becomes a buffer that aliases host memory. Unaligned inputs
  // are first staged in this thread's aligned scratch memory: one copy (shared with idle
  // cores when large), cheaper than the plugin's own, which allocates a buffer per call.
  // A donated output that cannot be written in place gets scratch memory too, and is
  // copied from there.
  const bool host = runtime_->host_is_device();
  SmallArray<void*> donors(n_donated);
  place_donors(inputs, outputs, {donors.data(), n_donated});
  const size_t staged = staged_bytes(inputs, {donors.data(), n_donated});
  std::byte* staging = staged != 0 ? scratch().reserve(staged) : nullptr;

  SmallArray<pjrt::Buffer> in(n_in + n_donated);
  SmallArray<PJRT_Buffer*> in_raw(n_in + n_donated);
  for (size_t i = 0; i < n_in; ++i) {
    const void* data = inputs[i];
    if (host && !is_aligned(data)) {
      shared_copy(staging, data, input_bytes_[i]);
      data = staging;
      staging += round_up(input_bytes_[i]);
    }
    in[i] = host_buffer(i, data);
    in_raw[i] = in[i].get();
  }
  for (size_t k = 0; k < n_donated; ++k) {
    const size_t j = donated_outputs_[k];
    void* data = donors[k];
    if (data == nullptr) {
      data = staging;
      staging += round_up(output_bytes_[j]);
    }
    in[n_in + k] = donor_buffer(j, data);
    in_raw[n_in + k] = in[n_in + k].get();
  }

  SmallArray<PJRT_Buffer*> out_raw(n_out);
  execute_buffers(in_raw.data(), {out_raw.data(), n_out}, outputs, in_place);
}

void Executable::execute_buffers(PJRT_Buffer* const* arguments, std::span<PJRT_Buffer*> results,
                                 std::span<void* const> outputs, std::span<bool> in_place) const {
  const pjrt::Plugin& plugin = runtime_->plugin();
  const PJRT_Api* api = plugin.api();
  const size_t n_out = outputs_.size();
  const bool host = runtime_->host_is_device();
  PJRT_Buffer** output_list = results.data();
  PJRT_Event* complete = nullptr;
  auto options = pjrt::make_args<PJRT_ExecuteOptions>();
  auto args = pjrt::make_args<PJRT_LoadedExecutable_Execute_Args>();
  args.executable = loaded();
  args.options = &options;
  args.argument_lists = &arguments;
  args.num_devices = 1;
  args.num_args = inputs_.size() + donated_outputs_.size();
  args.output_lists = &output_list;
  args.device_complete_events = &complete;
  pjrt::check(pjrt::OwnedError(api, api->PJRT_LoadedExecutable_Execute(&args)),
              "PJRT_LoadedExecutable_Execute");

  SmallArray<pjrt::Buffer> out(n_out);
  for (size_t j = 0; j < n_out; ++j) out[j] = pjrt::Buffer(api, results[j]);
  await(plugin, complete, "executing the program");

  for (size_t j = 0; j < n_out; ++j) {
    if (!in_place.empty()) in_place[j] = false;
    if (output_bytes_[j] == 0) continue;
    if (host) {
      // The result is in host memory already: copy it here, where PJRT_Buffer_ToHostBuffer
      // would hand the copy to a worker thread and wake us when it is done. A result
      // written in place (a donated output) is there already.
      auto where = pjrt::make_args<PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args>();
      where.buffer = results[j];
      pjrt::check(pjrt::OwnedError(api, api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&where)),
                  "PJRT_Buffer_OpaqueDeviceMemoryDataPointer");
      if (where.device_memory_ptr == outputs[j]) {
        if (!in_place.empty()) in_place[j] = true;
        continue;
      }
      shared_copy(outputs[j], where.device_memory_ptr, output_bytes_[j]);
      continue;
    }
    auto copy = pjrt::make_args<PJRT_Buffer_ToHostBuffer_Args>();
    copy.src = results[j];
    copy.dst = outputs[j];
    copy.dst_size = output_bytes_[j];
    pjrt::check(pjrt::OwnedError(api, api->PJRT_Buffer_ToHostBuffer(&copy)),
                "PJRT_Buffer_ToHostBuffer");
    await(plugin, copy.event, "copying an output to the host");
  }
}

std::string Executable::serialize() const {
  if (serialized_ && !is_loaded()) return *serialized_;
  const pjrt::Plugin& plugin = runtime_->plugin();
  pjrt::Executable executable = pjrt::executable_of(plugin, loaded());
  auto args = pjrt::make_args<PJRT_Executable_Serialize_Args>();
  args.executable = executable.get();
  CYXLA_PJRT_CALL(plugin, PJRT_Executable_Serialize, args);
  std::string bytes(args.serialized_bytes, args.serialized_bytes_size);
  if (args.serialized_executable_deleter != nullptr) {
    args.serialized_executable_deleter(args.serialized_executable);
  }
  return bytes;
}

std::string Executable::fingerprint() const {
  const pjrt::Plugin& plugin = runtime_->plugin();
  if (!plugin.has<&PJRT_Api::PJRT_Executable_Fingerprint>()) return {};
  pjrt::Executable executable = pjrt::executable_of(plugin, loaded());
  auto args = pjrt::make_args<PJRT_Executable_Fingerprint_Args>();
  args.executable = executable.get();
  CYXLA_PJRT_CALL(plugin, PJRT_Executable_Fingerprint, args);
  if (args.executable_fingerprint == nullptr) return {};
  return std::string(args.executable_fingerprint, args.executable_fingerprint_size);
}

}  // namespace cyxla
