// Names of element types, for messages.
#include "runtime/element_type.hpp"

namespace cyxla {

// The list's numbering is PJRT's: spot checks against values XLA's header fixed forever.
static_assert(PJRT_Buffer_Type_INVALID == 0 && PJRT_Buffer_Type_PRED == 1 &&
              PJRT_Buffer_Type_F32 == 11 && PJRT_Buffer_Type_C128 == 15 &&
              PJRT_Buffer_Type_F4E2M1FN == 29 && PJRT_Buffer_Type_F6E3M2FN == 33);
static_assert(element_size(PJRT_Buffer_Type_F32) == sizeof(float) &&
              element_size(PJRT_Buffer_Type_F64) == sizeof(double) &&
              element_size(PJRT_Buffer_Type_C128) == 2 * sizeof(double) &&
              element_size(PJRT_Buffer_Type_TOKEN) == 0);

std::string_view element_type_name(PJRT_Buffer_Type type) noexcept {
  return element_type_name_of_value(type);
}

std::string_view element_type_name_of_value(long long value) noexcept {
  switch (value) {
#define CYXLA_NAME_CASE_(name, number, bytes, text) \
  case PJRT_Buffer_Type_##name:                     \
    return (bytes) != 0 ? (text) : "unsupported";
    CYXLA_ELEMENT_TYPES(CYXLA_NAME_CASE_)
#undef CYXLA_NAME_CASE_
    default:
      return "unsupported";
  }
}

}  // namespace cyxla
