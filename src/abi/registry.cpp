// The handle registry: slots in fixed chunks (their addresses never move), a free list,
// and a generation per slot that invalidates old handles.
#include "abi/registry.hpp"

#include <thread>
#include <utility>

#include "common/error.hpp"

namespace cyxla::abi {

struct Registry::Slot {
  std::atomic<uint32_t> generation{1};
  std::atomic<uint64_t> in_flight{0};  // Registry::kLook per use, 1 per call
  std::atomic<const Entry*> live{nullptr};
  uint32_t references = 0;      // guarded by the registry's mutex
  // Guarded by the mutex too, except while the release() that dropped the last reference
  // waits for in-flight calls: then the slot is on no list and only that release() has it.
  std::unique_ptr<Entry> entry;
};

namespace {

constexpr uint64_t make_handle(size_t index, uint32_t generation) {
  return (static_cast<uint64_t>(generation) << 32) | static_cast<uint64_t>(index + 1);
}
constexpr size_t index_of(uint64_t handle) { return static_cast<size_t>(handle & 0xffffffffu) - 1; }
constexpr uint32_t generation_of(uint64_t handle) { return static_cast<uint32_t>(handle >> 32); }

void describe(const std::vector<TensorSpec>& specs, std::vector<PJRT_Buffer_Type>& types,
              std::vector<size_t>& ranks, std::vector<const int64_t*>& dims) {
  for (const TensorSpec& spec : specs) {
    types.push_back(spec.type);
    ranks.push_back(spec.dims.size());
    dims.push_back(spec.dims.data());
  }
}

}  // namespace

Entry::Entry(std::shared_ptr<const Executable> exe)
    : executable(std::move(exe)),
      input_bytes(executable->input_bytes()),
      output_bytes(executable->output_bytes()) {
  describe(executable->inputs(), input_types, input_ranks, input_dims);
  describe(executable->outputs(), output_types, output_ranks, output_dims);
}

Entry::Entry(std::shared_ptr<const BatchedExecutable> batched_executable)
    : input_bytes(batched_executable->input_bytes()),
      output_bytes(batched_executable->output_bytes()),
      batched(std::move(batched_executable)) {
  describe(batched->inputs(), input_types, input_ranks, input_dims);
  describe(batched->outputs(), output_types, output_ranks, output_dims);
}

Entry::Entry(std::shared_ptr<const Executable> exe, std::unique_ptr<BoundCall> bound_call)
    : Entry(std::move(exe)) {
  bound = std::move(bound_call);
}

Registry& Registry::instance() {
  static Registry registry;
  return registry;
}

Registry::Slot* Registry::slot(size_t index) const noexcept {
  if (index >= capacity_.load(std::memory_order_acquire)) return nullptr;
  Slot* chunk = chunks_[index / kChunkSize].load(std::memory_order_acquire);
  return chunk + index % kChunkSize;
}

uint64_t Registry::add(std::shared_ptr<const Executable> executable, const Entry** entry_out) {
  return add(std::make_unique<Entry>(std::move(executable)), entry_out);
}

uint64_t Registry::add(std::shared_ptr<const BatchedExecutable> batched,
                       const Entry** entry_out) {
  return add(std::make_unique<Entry>(std::move(batched)), entry_out);
}

uint64_t Registry::add(std::unique_ptr<BoundCall> bound_call) {
  std::shared_ptr<const Executable> executable = bound_call->shared_executable();
  return add(std::make_unique<Entry>(std::move(executable), std::move(bound_call)), nullptr);
}

uint64_t Registry::add(std::unique_ptr<Entry> entry, const Entry** entry_out) {
  if (entry_out != nullptr) *entry_out = entry.get();
  std::lock_guard lock(mutex_);
  if (free_.empty()) {
    const size_t chunk = owned_chunks_.size();
    // GCOVR_EXCL_START: 4M live executables, more memory than a test machine has
    if (chunk == kMaxChunks) {
      throw Error(ErrorKind::InvalidArgument, "more than " +
                                                  std::to_string(kMaxChunks * kChunkSize) +
                                                  " executables are registered at once");
    }
    // GCOVR_EXCL_STOP
    owned_chunks_.reserve(chunk + 1);
    free_.reserve((chunk + 1) * kChunkSize);  // so that release() never allocates
    owned_chunks_.push_back(std::make_unique<Slot[]>(kChunkSize));
    chunks_[chunk].store(owned_chunks_.back().get(), std::memory_order_release);
    for (size_t i = kChunkSize; i-- > 0;) {
      free_.push_back(static_cast<uint32_t>(chunk * kChunkSize + i));
    }
    capacity_.store((chunk + 1) * kChunkSize, std::memory_order_release);
  }
  const uint32_t index = free_.back();
  free_.pop_back();
  Slot& s = *slot(index);
  s.references = 1;
  s.entry = std::move(entry);
  s.live.store(s.entry.get(), std::memory_order_release);
  return make_handle(index, s.generation.load());
}

const Entry* Registry::acquire(uint64_t handle) noexcept {
  if (handle == 0) return nullptr;
  std::lock_guard lock(mutex_);
  Slot* s = slot(index_of(handle));
  if (s == nullptr || s->generation.load() != generation_of(handle) || s->references == 0) {
    return nullptr;
  }
  ++s->references;
  return s->entry.get();
}

bool Registry::release(uint64_t handle) noexcept {
  if (handle == 0) return false;
  Slot* s = nullptr;
  {
    std::lock_guard lock(mutex_);
    s = slot(index_of(handle));
    if (s == nullptr || s->generation.load() != generation_of(handle) || s->references == 0) {
      return false;
    }
    if (--s->references != 0) return true;
    // New calls now fail their generation check, and acquire() sees no references. The
    // slot is not on the free list yet, so nothing else touches it until it is put back.
    s->generation.fetch_add(1);
    s->live.store(nullptr);
  }
  // Wait for the calls already running without holding the mutex: a running call may
  // need it (a native caller that takes another spec while it executes), and the other
  // handles' acquire() and release() must not stall behind this one's calls.
  while (s->in_flight.load() != 0) std::this_thread::yield();
  const std::unique_ptr<Entry> dead = std::move(s->entry);  // freed once the lock is dropped
  std::lock_guard lock(mutex_);
  free_.push_back(static_cast<uint32_t>(index_of(handle)));
  return true;
}

Registry::Use Registry::use(uint64_t handle, uint64_t weight) noexcept {
  if (handle == 0) return {};
  Slot* s = slot(index_of(handle));
  const uint32_t generation = generation_of(handle);
  if (s == nullptr || s->generation.load() != generation) return {};
  // Announce the use, then check again: release() bumps the generation before it waits
  // for the uses in flight, so either it sees this one or this one sees the new generation.
  const uint64_t before = s->in_flight.fetch_add(weight);
  // GCOVR_EXCL_START: a release() landing between the two loads; no test can time that
  if (s->generation.load() != generation) {
    s->in_flight.fetch_sub(weight);
    return {};
  }
  // GCOVR_EXCL_STOP
  const bool alone = (before & (kLook - 1)) == 0;
  return Use(s, s->live.load(std::memory_order_acquire), weight, alone);
}

Registry::Use::~Use() {
  if (slot_ != nullptr) slot_->in_flight.fetch_sub(weight_);
}

}  // namespace cyxla::abi
