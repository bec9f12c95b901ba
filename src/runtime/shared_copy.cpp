// A large copy cut into pieces for the helper threads (common/helper_threads.hpp).
#include "runtime/shared_copy.hpp"

#include <algorithm>
#include <cstdint>

#include "common/helper_threads.hpp"

namespace cyxla {
namespace {

/// Large enough that taking a piece costs nothing beside copying it, small enough that
/// the last pieces end close together.
constexpr size_t kPieceBytes = size_t{256} << 10;

struct Copy {
  std::byte* dst;
  const std::byte* src;
  size_t bytes;
  size_t piece_bytes;
};

bool copy_piece(const void* context, uint64_t index) noexcept {
  const Copy& c = *static_cast<const Copy*>(context);
  const size_t offset = index * c.piece_bytes;
  std::memcpy(c.dst + offset, c.src + offset, std::min(c.piece_bytes, c.bytes - offset));
  return true;
}

}  // namespace

void copy_with_helpers(void* dst, const void* src, size_t bytes) noexcept {
  const size_t piece_bytes = std::max(kPieceBytes, bytes / kMaxPieces + 1);
  const Copy copy{static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), bytes,
                  piece_bytes};
  share_pieces(copy_piece, &copy, (bytes + piece_bytes - 1) / piece_bytes);
}

}  // namespace cyxla
