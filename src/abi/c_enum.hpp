// Enum fields that a C caller filled in. C lets any int stand in an enum; C++ may not read
// a value outside the enumerators' range as the enum type (UBSan's -fsanitize=enum reports
// it), so the core reads such a field as the integer it holds before checking it.
#pragma once

#include <cstring>
#include <type_traits>

namespace cyxla::abi {

template <class Enum>
std::underlying_type_t<Enum> raw_value(const Enum& field) noexcept {
  std::underlying_type_t<Enum> value;
  std::memcpy(&value, &field, sizeof(value));
  return value;
}

}  // namespace cyxla::abi
