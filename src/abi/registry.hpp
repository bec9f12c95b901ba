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

  /// Marks a use of `handle` in flight for the scope of the object (the hot path: two
  /// atomic loads and an increment, no lock).
  class Use {
   public:
    Use() noexcept = default;
    Use(Slot* slot, const Entry* entry, uint64_t weight, bool alone) noexcept
        : slot_(slot), entry_(entry), weight_(weight), alone_(alone) {}
    Use(Use&&) = delete;  // returned by use() as a prvalue, never moved
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    Use& operator=(Use&&) = delete;
    ~Use();
    const Entry* entry() const noexcept { return entry_; }
    /// For call_bound(): whether no other call of the handle was in flight when this one
    /// began (its BoundCall runs one call at a time).
    bool alone() const noexcept { return alone_; }

   private:
    Slot* slot_ = nullptr;
    const Entry* entry_ = nullptr;
    uint64_t weight_ = 0;
    bool alone_ = false;
  };
  /// Any use of a handle: many may be in flight at once.
  Use use(uint64_t handle) noexcept { return use(handle, kLook); }
  /// A call of a bound call's handle: Use::alone() says whether it may run. One count
  /// serves both that and release()'s wait, so a bound call pays one atomic increment.
  Use call(uint64_t handle) noexcept { return use(handle, 1); }

 private:
  static constexpr size_t kChunkSize = 1024;
  static constexpr size_t kMaxChunks = 4096;

  // A slot counts the uses in flight in one number: calls of a bound call in its low 32
  // bits, every other use in the high ones.
  static constexpr uint64_t kLook = uint64_t{1} << 32;

  Use use(uint64_t handle, uint64_t weight) noexcept;
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
