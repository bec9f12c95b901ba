// A fixed-size array that lives inline for the usual argument counts, so that the hot
// path allocates nothing, and on the heap beyond that.
#pragma once

#include <array>
#include <cstddef>
#include <memory>

namespace cyxla {

template <class T, size_t N = 16>
class SmallArray {
 public:
  /// `n` value-initialized elements.
  explicit SmallArray(size_t n) : size_(n) {
    if (n > N) heap_ = std::make_unique<T[]>(n);
  }
  T* data() noexcept { return size_ > N ? heap_.get() : inline_.data(); }
  T& operator[](size_t i) noexcept { return data()[i]; }
  size_t size() const noexcept { return size_; }

 private:
  size_t size_;
  std::array<T, N> inline_{};
  std::unique_ptr<T[]> heap_;  // value-initialized, never moved
};

}  // namespace cyxla
