// Names of element types, for messages.
#include "runtime/element_type.hpp"

namespace cyxla {

std::string_view element_type_name(PJRT_Buffer_Type type) noexcept {
  switch (type) {
    case PJRT_Buffer_Type_PRED: return "pred";
    case PJRT_Buffer_Type_S8: return "s8";
    case PJRT_Buffer_Type_S16: return "s16";
    case PJRT_Buffer_Type_S32: return "s32";
    case PJRT_Buffer_Type_S64: return "s64";
    case PJRT_Buffer_Type_U8: return "u8";
    case PJRT_Buffer_Type_U16: return "u16";
    case PJRT_Buffer_Type_U32: return "u32";
    case PJRT_Buffer_Type_U64: return "u64";
    case PJRT_Buffer_Type_F16: return "f16";
    case PJRT_Buffer_Type_F32: return "f32";
    case PJRT_Buffer_Type_F64: return "f64";
    case PJRT_Buffer_Type_BF16: return "bf16";
    case PJRT_Buffer_Type_C64: return "c64";
    case PJRT_Buffer_Type_C128: return "c128";
    default: return "unsupported";
  }
}

}  // namespace cyxla
