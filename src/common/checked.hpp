// Sizes computed from what came from outside (a file, a spec, a caller's count): products
// that would wrap around are refused instead of silently becoming small.
#pragma once

#include <cstddef>
#include <optional>

namespace cyxla {

/// a * b, or nothing when it does not fit in a size_t.
inline std::optional<size_t> checked_product(size_t a, size_t b) noexcept {
  size_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

/// a + b, or nothing when it does not fit in a size_t.
inline std::optional<size_t> checked_sum(size_t a, size_t b) noexcept {
  size_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

}  // namespace cyxla
