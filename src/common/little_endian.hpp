// Little-endian integers in byte strings, as the program file and the cache's entries
// lay them out.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cyxla {

/// The `T` stored little-endian at `bytes[offset]`; the caller checked the length.
template <class T>
T read_little_endian(std::string_view bytes, size_t offset) noexcept {
  T value = 0;
  for (size_t i = sizeof(T); i-- > 0;) {
    value = static_cast<T>((value << 8) | static_cast<unsigned char>(bytes[offset + i]));
  }
  return value;
}

/// `value` appended to `out`, little-endian.
template <class T>
void append_little_endian(std::string& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

}  // namespace cyxla
