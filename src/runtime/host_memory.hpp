// Host memory that CPU buffers can alias: the alignment they need, and allocating it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

namespace cyxla {

/// Inputs aligned to this many bytes are aliased by CPU buffers instead of copied.
inline constexpr size_t kHostAlignment = 64;

inline bool is_aligned(const void* data) noexcept {
  return reinterpret_cast<uintptr_t>(data) % kHostAlignment == 0;
}

/// `bytes` rounded up to a whole number of alignments (what aligned_alloc wants).
constexpr size_t round_up(size_t bytes) noexcept {
  return (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
}

/// Aligned memory of at least `bytes`, freed with std::free; null for 0 bytes, when out
/// of memory, or when `bytes` rounded up to the alignment exceeds SIZE_MAX (the rounding
/// would wrap to a tiny block).
inline void* allocate_aligned(size_t bytes) noexcept {
  if (bytes == 0 || bytes > SIZE_MAX - (kHostAlignment - 1)) return nullptr;
  return std::aligned_alloc(kHostAlignment, round_up(bytes));
}

/// Aligned memory that grows to the largest size asked of it and is then reused: a
/// thread's staging or padding area. reserve() throws std::bad_alloc when out of memory.
class Scratch {
 public:
  std::byte* reserve(size_t bytes) {
    if (bytes > capacity_) {
      memory_.reset(static_cast<std::byte*>(allocate_aligned(bytes)));
      if (memory_ == nullptr) {
        capacity_ = 0;
        throw std::bad_alloc();
      }
      capacity_ = round_up(bytes);
    }
    return memory_.get();
  }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> memory_;
  size_t capacity_ = 0;
};

}  // namespace cyxla
