// Calls of one executable that keep what they made for the last call's arguments: the
// buffers over input memory that comes back call after call, and aligned copies of
// unaligned inputs, so that a caller passing the same arrays gets a bound call's cost;
// and, once given one, a variant of the program that reads large unaligned inputs where
// they are (in_place_variant.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
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
  /// for a later call that passes its address again. On the kernel runner, which wraps
  /// no buffers, a call is Executable::execute. Throws cyxla::Error.
  ///
  /// Where a variant was given (read_in_place) and the inputs it reads in place are the
  /// ones unaligned at readable offsets, the variant runs instead, reading them where they
  /// are. Returns true once, on the kCopiesBeforeVariant-th call in a row that copied the
  /// same such inputs while no variant was given: the caller may then compile the
  /// variant (variant_inputs) and give it to read_in_place.
  bool execute(std::span<const void* const> inputs, std::span<void* const> outputs);

  /// The inputs of the variant that reads the unaligned inputs of the call that returned
  /// true in place (in_place_variant_inputs); empty before such a call.
  std::vector<TensorSpec> variant_inputs() const;

  /// Runs `variant`, a compile of the program that takes variant_inputs() and has its
  /// outputs and donated outputs, for the calls it serves from now on; waits for a call in
  /// another thread to end. InvalidArgument when `variant` is not such a program.
  void read_in_place(std::shared_ptr<const Executable> variant);

  /// How many calls ran the variant (for tests).
  size_t calls_read_in_place() const noexcept {
    return calls_read_in_place_.load(std::memory_order_relaxed);
  }

  const Executable& executable() const noexcept { return *executable_; }

  /// Calls in a row that copy the same unaligned inputs before execute() asks for a
  /// variant: a loop, not a one-off call, is worth a compile.
  static constexpr int kCopiesBeforeVariant = 4;

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  using Area = std::unique_ptr<std::byte, Free>;
  /// Aligned memory of `bytes` (at least one byte) kept in `area`, made on first use.
  static std::byte* area_of(Area& area, size_t bytes);
  /// Counts a call that copied the readable inputs `copied` (a mask); true when it is time
  /// to ask for a variant (execute's result).
  bool ask_for_variant(uint64_t copied) noexcept;
  /// The call through the variant: each input it reads in place from the alignment below.
  void run_variant(std::span<const void* const> inputs, std::span<void* const> outputs);

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

  // The read-in-place variant, guarded by busy_ as the kept buffers are.
  uint64_t candidates_;  // the inputs a variant could read in place (in_place_candidates)
  uint64_t copied_ = 0;  // the unaligned readable inputs of the last call (a mask)
  int copies_in_a_row_ = 0;
  std::atomic<uint64_t> asked_{0};  // the mask execute() asked a variant for; 0 before
  uint64_t variant_reads_ = 0;  // the mask the variant reads in place; 0 without one
  std::unique_ptr<CachedCall> variant_;
  Area offsets_;  // kOffsetType per input the variant reads in place
  std::vector<const void*> variant_arguments_;
  std::atomic<size_t> calls_read_in_place_{0};
};

}  // namespace cyxla
