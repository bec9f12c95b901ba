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
/// the copy is cut into pieces that the calling thread and idle helper threads (one per
/// further core, at most 7, started on first use) take in turn; the caller takes pieces
/// too, so a helper that is slow to wake costs nothing but the wake-up. One copy at a
/// time is shared: a copy made while another is, and any copy in a forked child (which
/// has no helpers), is a plain memcpy.
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

}  // namespace cyxla
