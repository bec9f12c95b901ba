// The core's one check of UTF-8, for program-file metadata and entry headers alike, and
// the one repair of text that must reach Python or C callers as UTF-8 (plugins' messages).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace cyxla {

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

/// `byte` written \xNN: a backslash, `x` and two lower-case hex digits (and a NUL).
struct EscapedByte {
  char text[5];
};
inline EscapedByte escaped(unsigned char byte) noexcept {
  EscapedByte out{};
  std::snprintf(out.text, sizeof(out.text), "\\x%02x", byte);
  return out;
}

/// Walks `text` as printable UTF-8: calls `piece(std::string_view)` with each whole UTF-8
/// sequence as it is, and with each byte that starts none (and, with `escape_controls`,
/// each ASCII control character) written \xNN; stops early when `piece` returns false.
/// The one repair of text that must reach Python's str or a C caller as UTF-8.
template <class Piece>
void for_each_printable(std::string_view text, bool escape_controls, Piece&& piece) {
  for (size_t at = 0; at < text.size();) {
    const size_t length = utf8_length(text, at);
    const auto byte = static_cast<unsigned char>(text[at]);
    const bool control = escape_controls && (byte < 0x20 || byte == 0x7F);
    if (length != 0 && !control) {
      if (!piece(text.substr(at, length))) return;
      at += length;
    } else {
      const EscapedByte escape = escaped(byte);
      if (!piece(std::string_view(escape.text, 4))) return;
      ++at;
    }
  }
}

/// `text` with every byte that starts no UTF-8 sequence written \xNN: a plugin's message
/// (MLIR echoes a corrupted op name byte for byte) or a path, as text for Python's str
/// and for the C API's message alike.
inline std::string with_bytes_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_printable(text, false, [&](std::string_view piece) {
    out.append(piece);
    return true;
  });
  return out;
}

}  // namespace cyxla
