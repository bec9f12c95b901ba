// The element types cyxla passes between host memory and PJRT buffers; their list lives
// in the public cyxla/element_type.h.
#pragma once

#include <cstddef>
#include <string_view>

#include "cyxla/element_type.h"

namespace cyxla {

/// Bytes per element of a supported type, or 0 for a type cyxla does not carry
/// (8-bit and smaller floats, sub-byte integers, tokens).
constexpr size_t element_size(PJRT_Buffer_Type type) noexcept {
  switch (type) {
#define CYXLA_SIZE_CASE_(name, value, bytes, text) \
  case PJRT_Buffer_Type_##name:                    \
    return bytes;
    CYXLA_ELEMENT_TYPES(CYXLA_SIZE_CASE_)
#undef CYXLA_SIZE_CASE_
  }
  return 0;
}

/// The XLA name of a supported type (f32, s64, pred, ...) for error messages, or
/// "unsupported".
std::string_view element_type_name(PJRT_Buffer_Type type) noexcept;
/// The same for the integer `value` of a type, which need not be one (a C caller's).
std::string_view element_type_name_of_value(long long value) noexcept;

}  // namespace cyxla
