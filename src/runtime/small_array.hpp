// A fixed-size array that lives inline for the usual argument counts, so that the hot
// path allocates nothing, and on the heap beyond that.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <type_traits>

namespace cyxla {

template <class T, size_t N = 16>
class SmallArray {
 public:
  /// `n` value-initialized elements.
  explicit SmallArray(size_t n) : size_(n) {
    if (n > N) {
      heap_ = std::make_unique<T[]>(n);
    } else if constexpr (std::is_trivially_default_constructible_v<T>) {
      // Only the n in use: clearing all N of them costs a small call more than it runs.
      for (size_t i = 0; i < n; ++i) inline_[i] = T{};
    }
  }
  T* data() noexcept { return size_ > N ? heap_.get() : inline_.data(); }
  T& operator[](size_t i) noexcept { return data()[i]; }
  size_t size() const noexcept { return size_; }

 private:
  size_t size_;
  std::array<T, N> inline_;  // a trivial type's: only the first size_ are initialized
  std::unique_ptr<T[]> heap_;  // value-initialized, never moved
};

}  // namespace cyxla
