// The element types cyxla passes between host memory and PJRT buffers.
#pragma once

#include <cstddef>
#include <string_view>

#include "cyxla/pjrt_c_api.h"

namespace cyxla {

/// Bytes per element of a supported type, or 0 for a type cyxla does not carry
/// (8-bit floats, sub-byte integers, tokens).
constexpr size_t element_size(PJRT_Buffer_Type type) noexcept {
  switch (type) {
    case PJRT_Buffer_Type_PRED:
    case PJRT_Buffer_Type_S8:
    case PJRT_Buffer_Type_U8:
      return 1;
    case PJRT_Buffer_Type_S16:
    case PJRT_Buffer_Type_U16:
    case PJRT_Buffer_Type_F16:
    case PJRT_Buffer_Type_BF16:
      return 2;
    case PJRT_Buffer_Type_S32:
    case PJRT_Buffer_Type_U32:
    case PJRT_Buffer_Type_F32:
      return 4;
    case PJRT_Buffer_Type_S64:
    case PJRT_Buffer_Type_U64:
    case PJRT_Buffer_Type_F64:
    case PJRT_Buffer_Type_C64:
      return 8;
    case PJRT_Buffer_Type_C128:
      return 16;
    default:
      return 0;
  }
}

/// The XLA name of a type (f32, s64, pred, ...) for error messages.
std::string_view element_type_name(PJRT_Buffer_Type type) noexcept;

}  // namespace cyxla
