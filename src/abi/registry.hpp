// Handles that native code holds on executables. A handle carries a generation, so a
// released or freed handle is detected and reported instead of being used after free.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "cyxla/element_type.h"
#include "runtime/batched_executable.hpp"
#include "runtime/bound_call.hpp"
#include "runtime/executable.hpp"

namespace cyxla::abi {

/// An executable as native callers see it: the ProgramSpec arrays, built once. An entry
/// holds an executable, a batched one (described by one point), or a bound call and the
/// executable it runs.
struct Entry {
  explicit Entry(std::shared_ptr<const Executable> executable);
  explicit Entry(std::shared_ptr<const BatchedExecutable> batched);
  Entry(std::shared_ptr<const Executable> executable, std::unique_ptr<BoundCall> bound_call);

  std::shared_ptr<const Executable> executable;  // null for a batched one
  std::unique_ptr<BoundCall> bound;              // null but for a bound call's handle
  std::vector<PJRT_Buffer_Type> input_types, output_types;
  std::vector<size_t> input_ranks, output_ranks;
  std::vector<const int64_t*> input_dims, output_dims;
  std::vector<size_t> input_bytes, output_bytes;
  std::shared_ptr<const BatchedExecutable> batched;  // null for an executable
};

class Registry {
  struct Slot;

 public:
  static Registry& instance();

  /// Registers `executable` with one reference; the handle is never 0. Stores the new
  /// entry in `*entry` when given (valid until that reference is released).
  uint64_t add(std::shared_ptr<const Executable> executable, const Entry** entry = nullptr);
  uint64_t add(std::shared_ptr<const BatchedExecutable> batched, const Entry** entry = nullptr);
  /// Registers a bound call (its entry holds its executable too), with one reference.
  uint64_t add(std::unique_ptr<BoundCall> bound_call);
  /// Adds a reference to a live handle; the entry stays valid until the matching release.
  /// Null when the handle was released or never existed.
  const Entry* acquire(uint64_t handle) noexcept;
  /// Drops a reference. At the last one the handle dies, in-flight calls finish, and the
  /// executable is freed. Unknown or dead handles are ignored. Allocates nothing: add()
  /// reserved room in the free list for every slot. Returns whether the handle was live.
  bool release(uint64_t handle) noexcept;

  /// Marks a call in flight on `handle` for the scope of the object (the hot path: two
  /// atomic loads and an increment, no lock).
  class Use {
   public:
    Use() noexcept = default;
    Use(Slot* slot, const Entry* entry) noexcept : slot_(slot), entry_(entry) {}
    Use(Use&&) = delete;  // returned by use() as a prvalue, never moved
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    Use& operator=(Use&&) = delete;
    ~Use();
    const Entry* entry() const noexcept { return entry_; }

   private:
    Slot* slot_ = nullptr;
    const Entry* entry_ = nullptr;
  };
  Use use(uint64_t handle) noexcept;

 private:
  static constexpr size_t kChunkSize = 1024;
  static constexpr size_t kMaxChunks = 4096;

  Slot* slot(size_t index) const noexcept;
  uint64_t add(std::unique_ptr<Entry> entry, const Entry** entry_out);

  std::mutex mutex_;  // guards everything but the atomics read on the hot path
  std::array<std::atomic<Slot*>, kMaxChunks> chunks_{};
  std::atomic<size_t> capacity_{0};
  std::vector<std::unique_ptr<Slot[]>> owned_chunks_;
  std::vector<uint32_t> free_;
};

/// Owns one reference of a registered executable; Python's Executable.handle.
class Handle {
 public:
  explicit Handle(std::shared_ptr<const Executable> executable)
      : value_(Registry::instance().add(std::move(executable))) {}
  explicit Handle(std::shared_ptr<const BatchedExecutable> batched)
      : value_(Registry::instance().add(std::move(batched))) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { Registry::instance().release(value_); }
  uint64_t value() const noexcept { return value_; }

 private:
  uint64_t value_;
};

}  // namespace cyxla::abi
