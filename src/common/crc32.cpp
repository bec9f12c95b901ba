// A table-driven CRC-32: the reflected polynomial 0xEDB88320, initial and final XOR with
// all ones, one table lookup per byte.
#include "common/crc32.hpp"

#include <array>

namespace cyxla {
namespace {

constexpr std::array<uint32_t, 256> make_table() noexcept {
  std::array<uint32_t, 256> table{};
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) != 0 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[n] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

}  // namespace

uint32_t crc32(std::string_view bytes) noexcept {
  uint32_t c = 0xFFFFFFFFu;
  for (const char byte : bytes) c = kTable[(c ^ static_cast<unsigned char>(byte)) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

}  // namespace cyxla
