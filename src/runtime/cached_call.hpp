// Calls of one executable that keep what they made for the last call's arguments: the
// buffers over input memory that comes back call after call, and aligned copies of
// unaligned inputs, so that a caller passing the same arrays gets a bound call's cost.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "pjrt/handles.hpp"
#include "runtime/executable.hpp"

namespace cyxla {

class CachedCall {
 public:
  explicit CachedCall(std::shared_ptr<const Executable> executable);
  CachedCall(const CachedCall&) = delete;
  CachedCall& operator=(const CachedCall&) = delete;

  /// Executable::execute, on the CPU with the buffers of the last call where an input is
  /// at the same address again (the plugin reads the memory inside Execute, so new
  /// contents are seen), and with one aligned area per unaligned input, kept for the next
  /// call, that the input is copied into. A donated output that cannot be written in place
  /// is written into an area of its own and copied out. One thread at a time uses the
  /// kept buffers; a call while another thread is in one runs Executable::execute. Keeps
  /// no reference to the memory it is given beyond the call: a kept buffer is used only
  /// for a later call that passes its address again. Throws cyxla::Error.
  void execute(std::span<const void* const> inputs, std::span<void* const> outputs);

  const Executable& executable() const noexcept { return *executable_; }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  using Area = std::unique_ptr<std::byte, Free>;
  /// Aligned memory of `bytes` (at least one byte) kept in `area`, made on first use.
  static std::byte* area_of(Area& area, size_t bytes);

  struct Input {
    const void* data = nullptr;  // what `buffer` aliases: the input's memory, or `staging`
    pjrt::Buffer buffer;
    Area staging;  // the aligned copy of an unaligned input
  };

  std::shared_ptr<const Executable> executable_;  // held alive by the cache
  bool host_;  // the CPU: buffers alias host memory, and can be kept
  std::vector<Input> inputs_;
  std::vector<Area> donor_staging_;  // per donated output that cannot be written in place
  std::vector<void*> donors_;
  std::vector<pjrt::Buffer> donor_buffers_;  // made on each call, consumed by it
  std::vector<PJRT_Buffer*> arguments_;
  std::vector<PJRT_Buffer*> results_;
  std::atomic<bool> busy_{false};
};

}  // namespace cyxla
