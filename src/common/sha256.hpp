// SHA-256 (FIPS 180-4), which names, checks and binds the disk cache's entries.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cyxla {

/// An incremental SHA-256: hashlib.sha256() in Python.
class Sha256 {
 public:
  Sha256() noexcept;
  Sha256& update(std::string_view bytes) noexcept;
  /// The 32-byte digest; the object is spent afterwards.
  std::array<uint8_t, 32> digest() noexcept;
  /// The digest as 64 lower-case hex digits, as hexdigest() writes it.
  std::string hexdigest();

 private:
  void compress(const uint8_t* block) noexcept;

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes hashed so far
};

/// hashlib.sha256(bytes).hexdigest().
std::string sha256_hex(std::string_view bytes);

/// `bytes` as lower-case hex digits, as bytes.hex() writes them.
std::string hex(std::string_view bytes);

}  // namespace cyxla
