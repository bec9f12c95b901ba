// The JSON of the disk cache's entry headers: a strict reader (UTF-8, no NaN or
// Infinity, nesting bounded) and a compact writer.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cyxla::json {

struct Value;
using Array = std::vector<Value>;
/// Sorted by key bytes: for UTF-8 that is Python's order of str keys (by code point).
using Object = std::map<std::string, Value, std::less<>>;

/// A JSON value. Integers and floats are distinct (1 is not 1.0), as are bools and ints.
struct Value {
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> data;

  Value() noexcept : data(nullptr) {}
  Value(std::nullptr_t) noexcept : data(nullptr) {}
  Value(bool b) noexcept : data(b) {}
  Value(int64_t i) noexcept : data(i) {}
  Value(int i) noexcept : data(int64_t{i}) {}
  Value(double d) noexcept : data(d) {}
  Value(std::string s) noexcept : data(std::move(s)) {}
  Value(const char* s) : data(std::string(s)) {}
  Value(Array a) noexcept : data(std::move(a)) {}
  Value(Object o) noexcept : data(std::move(o)) {}

  /// The member `name` of an object, or null when this is no object or has none.
  const Value* find(std::string_view name) const;
  template <class T>
  const T* as() const noexcept {
    return std::get_if<T>(&data);
  }

  bool operator==(const Value&) const = default;
};

/// `value` as compact JSON, object members sorted by name; UTF-8 text as it is, and bytes
/// that are not UTF-8 as the surrogates \udc80-\udcff (how Python decodes them from file
/// names); a float as the shortest text that reads back as it, NaN and infinities as null.
std::string dump(const Value& value);

/// Parses one JSON document; nothing when it is not strict JSON (UTF-8, no NaN or Infinity,
/// integers within int64, nesting at most `max_depth` deep, nothing after the value).
std::optional<Value> parse(std::string_view text, int max_depth = 32);

}  // namespace cyxla::json
