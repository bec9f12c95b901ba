// Work cut into independent pieces that the calling thread and idle helper threads take
// in turn: large copies (runtime/shared_copy.hpp) and a kernel's workgroups
// (kernels/kernel_call.hpp). The plugin runs a program on all cores; cyxla's own calls do
// the same with these threads.
#pragma once

#include <cstdint>

namespace cyxla {

/// Runs piece `index` of the work that `context` describes; false reports that it failed.
using PieceFunction = bool (*)(const void* context, uint64_t index) noexcept;

/// The most pieces one work may have.
inline constexpr uint64_t kMaxPieces = 0xffff'ffffu;

/// Runs pieces 0 .. count-1 of `run` over `context`, in this thread and in idle helper threads (one per further core, at most 7, started on first
/// use), and returns whether every piece succeeded. Pieces may run in any order and at
/// once; all have ended when this returns. The caller takes pieces too, so a helper that
/// is slow to wake costs nothing but the wake-up. One work at a time is shared: work given
/// while another is shared, work of more than kMaxPieces pieces, and any work in a forked
/// child (which has no helpers), runs in this thread alone.
bool share_pieces(PieceFunction run, const void* context, uint64_t count) noexcept;

}  // namespace cyxla
