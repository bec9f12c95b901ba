// Large host copies shared with helper threads: the staging copy of an unaligned input,
// and the copy of a result that could not be written in place. The plugin runs a program
// on all cores, so a copy on one core beside it can cost more than the program itself.
#pragma once

#include <cstddef>
#include <cstring>

namespace cyxla {

/// Copies below this many bytes are a plain memcpy: waking a helper would cost more.
inline constexpr size_t kSharedCopyMinBytes = size_t{1} << 20;

/// memcpy(dst, src, bytes) for memory that does not overlap, of kSharedCopyMinBytes or more:
/// the copy is cut into pieces that the calling thread and idle helper threads take in
/// turn (share_pieces: where none is free, it is a plain memcpy in this thread).
void copy_with_helpers(void* dst, const void* src, size_t bytes) noexcept;

/// The copy of staged inputs and copied-out results: inline, so that the small copies of
/// a small program's call stay a plain memcpy the compiler sees.
inline void shared_copy(void* dst, const void* src, size_t bytes) noexcept {
  if (bytes < kSharedCopyMinBytes) {
    std::memcpy(dst, src, bytes);
  } else {
    copy_with_helpers(dst, src, bytes);
  }
}

/// A copy that a call repeats: an unaligned input into its aligned staging, or a result
/// out of memory of the call's own, laid out once (a bound call's).
struct HostCopy {
  const void* from;
  void* to;
  size_t bytes;
  void run() const noexcept { shared_copy(to, from, bytes); }
};

}  // namespace cyxla
