// The core's one check of UTF-8, for program-file metadata and entry headers alike, and
// the one repair of text that must reach Python or C callers as UTF-8 (plugins' messages).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace cyxla::program {

/// The length of the UTF-8 sequence that starts at `text[at]` (1 for ASCII), or 0 when
/// none does: strict, so no overlong forms, surrogates or code points past U+10FFFF.
inline size_t utf8_length(std::string_view text, size_t at) noexcept {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[at + k]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80;  // the bounds of the second byte
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (at + length > text.size() || byte(1) < low || byte(1) > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  }
  return length;
}

/// `byte` written \xNN (4 characters and a NUL), as Python's "backslashreplace" writes it.
struct EscapedByte {
  char text[5];
};
inline EscapedByte escaped(unsigned char byte) noexcept {
  EscapedByte out{};
  std::snprintf(out.text, sizeof(out.text), "\\x%02x", byte);
  return out;
}

/// `text` with every byte that starts no UTF-8 sequence written as \xNN, as Python's
/// "backslashreplace" decodes it: the message of a plugin (MLIR echoes a corrupted op
/// name byte for byte) is text for Python's str and for the C API's message alike.
inline std::string with_bytes_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const size_t length = utf8_length(text, at);
    if (length != 0) {
      out.append(text.substr(at, length));
      at += length;
    } else {
      out += escaped(static_cast<unsigned char>(text[at])).text;
      ++at;
    }
  }
  return out;
}

}  // namespace cyxla::program
