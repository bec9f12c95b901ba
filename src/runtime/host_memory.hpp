// Host memory that CPU buffers can alias: the alignment they need, and allocating it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace cyxla {

/// Inputs aligned to this many bytes are aliased by CPU buffers instead of copied.
inline constexpr size_t kHostAlignment = 64;

constexpr bool is_aligned(const void* data) noexcept {
  return reinterpret_cast<uintptr_t>(data) % kHostAlignment == 0;
}

/// `bytes` rounded up to a whole number of alignments (what aligned_alloc wants).
constexpr size_t round_up(size_t bytes) noexcept {
  return (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
}

/// Aligned memory of at least `bytes`, freed with std::free; null for 0 bytes or when out
/// of memory.
inline void* allocate_aligned(size_t bytes) noexcept {
  return bytes == 0 ? nullptr : std::aligned_alloc(kHostAlignment, round_up(bytes));
}

}  // namespace cyxla
