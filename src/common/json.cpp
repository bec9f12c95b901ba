// Writing JSON, and reading it strictly.
#include "common/json.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

#include "common/utf8.hpp"

namespace cyxla::json {
namespace {

/// `unit` (below 0x10000) as \uXXXX.
void append_escape(std::string& out, uint32_t unit) {
  constexpr std::string_view kDigits = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kDigits[unit >> shift & 0xFu];
}

void dump_string(std::string& out, std::string_view text) {
  out += '"';
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20 || c == 0x7F) {
            append_escape(out, c);
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    const size_t length = utf8_length(text, i);
    if (length == 0) {  // a byte that is not UTF-8 (a file name's): U+DC80-U+DCFF, which
                        // Python's os functions map back to the byte
      append_escape(out, 0xDC00u + c);
      ++i;
      continue;
    }
    out.append(text.substr(i, length));  // UTF-8 as it is
    i += length;
  }
  out += '"';
}

/// The shortest text that reads back as `x`, with a fraction or an exponent so that it
/// reads back as a float; null for what JSON has no number for (the reader refuses
/// NaN and Infinity).
std::string number_text(double x) {
  if (!std::isfinite(x)) return "null";
  std::array<char, 32> text{};
  const auto end = std::to_chars(text.data(), text.data() + text.size(), x).ptr;
  std::string out(text.data(), end);
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

void dump_to(std::string& out, const Value& value) {
  std::visit(
      [&out]<class T>(const T& v) {
        if constexpr (std::is_same_v<T, std::nullptr_t>) {
          out += "null";
        } else if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out += std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          out += number_text(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          dump_string(out, v);
        } else if constexpr (std::is_same_v<T, Array>) {
          out += '[';
          for (size_t i = 0; i < v.size(); ++i) {
            if (i != 0) out += ',';
            dump_to(out, v[i]);
          }
          out += ']';
        } else {
          out += '{';
          bool first = true;
          for (const auto& [name, member] : v) {
            if (!first) out += ',';
            first = false;
            dump_string(out, name);
            out += ':';
            dump_to(out, member);
          }
          out += '}';
        }
      },
      value.data);
}

/// `v` as a parsed value, made in place (moving a Value out of a temporary trips GCC 12's
/// -Wmaybe-uninitialized).
template <class T>
std::optional<Value> made(T&& v) {
  return std::optional<Value>(std::in_place, std::forward<T>(v));
}

/// A recursive-descent reader of strict RFC 8259 JSON: UTF-8, no NaN or Infinity, no
/// leading zeros or trailing commas, nesting bounded.
class Reader {
 public:
  Reader(std::string_view text, int max_depth) : text_(text), depth_left_(max_depth) {}

  std::optional<Value> document() {
    std::optional<Value> value = read_value();
    skip_space();
    if (!value || at_ != text_.size()) return std::nullopt;
    return value;
  }

 private:
  void skip_space() noexcept {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) {
      ++at_;
    }
  }

  bool take(std::string_view word) noexcept {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  std::optional<Value> read_value() {
    skip_space();
    if (at_ == text_.size()) return std::nullopt;
    switch (text_[at_]) {
      case '{': return nested([this] { return read_object(); });
      case '[': return nested([this] { return read_array(); });
      case '"': {
        std::optional<std::string> s = read_string();
        if (!s) return std::nullopt;
        return made(std::move(*s));
      }
      case 't': return take("true") ? made(true) : std::nullopt;
      case 'f': return take("false") ? made(false) : std::nullopt;
      case 'n': return take("null") ? made(nullptr) : std::nullopt;
      default: return read_number();
    }
  }

  template <class Read>
  std::optional<Value> nested(Read read) {
    if (depth_left_ == 0) return std::nullopt;
    --depth_left_;
    std::optional<Value> value = read();
    ++depth_left_;
    return value;
  }

  std::optional<Value> read_object() {
    ++at_;  // '{'
    Object object;
    skip_space();
    if (take("}")) return made(std::move(object));
    while (true) {
      skip_space();
      if (at_ == text_.size() || text_[at_] != '"') return std::nullopt;
      std::optional<std::string> name = read_string();
      if (!name) return std::nullopt;
      skip_space();
      if (!take(":")) return std::nullopt;
      std::optional<Value> member = read_value();
      if (!member) return std::nullopt;
      object.insert_or_assign(std::move(*name), std::move(*member));  // the last one wins
      skip_space();
      if (take("}")) return made(std::move(object));
      if (!take(",")) return std::nullopt;
    }
  }

  std::optional<Value> read_array() {
    ++at_;  // '['
    Array array;
    skip_space();
    if (take("]")) return made(std::move(array));
    while (true) {
      std::optional<Value> item = read_value();
      if (!item) return std::nullopt;
      array.push_back(std::move(*item));
      skip_space();
      if (take("]")) return made(std::move(array));
      if (!take(",")) return std::nullopt;
    }
  }

  std::optional<uint32_t> read_hex4() noexcept {
    if (at_ + 4 > text_.size()) return std::nullopt;
    uint32_t unit = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = text_[at_ + k];
      uint32_t digit = 0;
      if (c >= '0' && c <= '9') {
        digit = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return std::nullopt;
      }
      unit = unit << 4 | digit;
    }
    at_ += 4;
    return unit;
  }

  static void append_utf8(std::string& out, uint32_t code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0u | code >> 6);
      out += static_cast<char>(0x80u | (code & 0x3Fu));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0u | code >> 12);
      out += static_cast<char>(0x80u | (code >> 6 & 0x3Fu));
      out += static_cast<char>(0x80u | (code & 0x3Fu));
    } else {
      out += static_cast<char>(0xF0u | code >> 18);
      out += static_cast<char>(0x80u | (code >> 12 & 0x3Fu));
      out += static_cast<char>(0x80u | (code >> 6 & 0x3Fu));
      out += static_cast<char>(0x80u | (code & 0x3Fu));
    }
  }

  /// The code point of a \u escape (its "\u" read), joining a surrogate pair; a lone
  /// \udc80-\udcff is the byte that Python's surrogateescape decoded it from.
  bool read_escape(std::string& out) {
    std::optional<uint32_t> unit = read_hex4();
    if (!unit) return false;
    if (*unit >= 0xD800 && *unit <= 0xDBFF && take("\\u")) {
      std::optional<uint32_t> low = read_hex4();
      if (!low || *low < 0xDC00 || *low > 0xDFFF) return false;
      append_utf8(out, 0x10000 + ((*unit - 0xD800) << 10) + (*low - 0xDC00));
      return true;
    }
    if (*unit >= 0xDC80 && *unit <= 0xDCFF) {
      out += static_cast<char>(*unit - 0xDC00);
      return true;
    }
    if (*unit >= 0xD800 && *unit <= 0xDFFF) return false;
    append_utf8(out, *unit);
    return true;
  }

  std::optional<std::string> read_string() {
    ++at_;  // '"'
    std::string out;
    while (at_ < text_.size()) {
      const char c = text_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return std::nullopt;  // strict: no controls
      if (static_cast<unsigned char>(c) >= 0x80) {  // strict: UTF-8 only
        const size_t length = utf8_length(text_, at_ - 1);
        if (length == 0) return std::nullopt;
        out.append(text_.substr(at_ - 1, length));
        at_ += length - 1;
        continue;
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ == text_.size()) return std::nullopt;
      const char escaped = text_[at_++];
      switch (escaped) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u':
          if (!read_escape(out)) return std::nullopt;
          break;
        default: return std::nullopt;
      }
    }
    return std::nullopt;
  }

  std::optional<Value> read_number() {
    const size_t start = at_;
    const auto digits = [this] {
      const size_t from = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
      return at_ - from;
    };
    take("-");
    const size_t whole = at_;
    if (digits() == 0) return std::nullopt;
    if (text_[whole] == '0' && at_ - whole > 1) return std::nullopt;  // no leading zeros
    bool integral = true;
    if (take(".")) {
      integral = false;
      if (digits() == 0) return std::nullopt;
    }
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      integral = false;
      ++at_;
      if (!take("+")) take("-");
      if (digits() == 0) return std::nullopt;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + at_;
    if (integral) {
      int64_t i = 0;
      const auto [end, error] = std::from_chars(first, last, i);
      if (error != std::errc() || end != last) return std::nullopt;
      return made(i);
    }
    double d = 0;
    const auto [end, error] = std::from_chars(first, last, d);
    if (error != std::errc() || end != last || !std::isfinite(d)) return std::nullopt;
    return made(d);
  }

  std::string_view text_;
  size_t at_ = 0;
  int depth_left_;
};

}  // namespace

const Value* Value::find(std::string_view name) const {
  const Object* object = as<Object>();
  if (object == nullptr) return nullptr;
  const auto it = object->find(name);
  return it == object->end() ? nullptr : &it->second;
}

std::string dump(const Value& value) {
  std::string out;
  dump_to(out, value);
  return out;
}

std::optional<Value> parse(std::string_view text, int max_depth) {
  return Reader(text, max_depth).document();
}

}  // namespace cyxla::json
