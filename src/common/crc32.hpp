// CRC-32 of the IEEE 802.3 polynomial (zlib's crc32), which guards a program file.
#pragma once

#include <cstdint>
#include <string_view>

namespace cyxla {

/// zlib.crc32(bytes) in Python.
uint32_t crc32(std::string_view bytes) noexcept;

}  // namespace cyxla
