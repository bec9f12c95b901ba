/* The element types of cyxla's inputs and outputs: PJRT's PJRT_Buffer_Type, its names
 * and numbers, which are part of the PJRT C API's ABI and never change.
 *
 * This is the one piece of the PJRT C API that cyxla's public headers need, and the one
 * home of cyxla's element types: the core's byte sizes and names, and the Cython
 * declarations in cyxla/_pjrt.pxd, come from the list below.
 *
 * XLA's own xla/pjrt/c/pjrt_c_api.h declares the same enum. When it was included first,
 * or can be found on the include path as <xla/pjrt/c/pjrt_c_api.h>, it is used instead of
 * the declaration here, so a file may include it and cyxla.h in either order. (A copy of
 * XLA's header reached under another name has to be included before cyxla.h.)
 */
#ifndef CYXLA_ELEMENT_TYPE_H_
#define CYXLA_ELEMENT_TYPE_H_

/* X(NAME, value, bytes, "name"): every PJRT element type, with its value, the bytes of one
 * element (0 for the types cyxla does not carry: 8-bit and smaller floats, sub-byte
 * integers, tokens) and XLA's short name of it. */
#define CYXLA_ELEMENT_TYPES(X) CYXLA_ELEMENT_TYPES_UNTIL_0_81(X) CYXLA_ELEMENT_TYPES_SINCE_0_82(X)
#define CYXLA_ELEMENT_TYPES_UNTIL_0_81(X) \
  X(INVALID, 0, 0, "invalid")           \
  X(PRED, 1, 1, "pred")                 \
  X(S8, 2, 1, "s8")                     \
  X(S16, 3, 2, "s16")                   \
  X(S32, 4, 4, "s32")                   \
  X(S64, 5, 8, "s64")                   \
  X(U8, 6, 1, "u8")                     \
  X(U16, 7, 2, "u16")                   \
  X(U32, 8, 4, "u32")                   \
  X(U64, 9, 8, "u64")                   \
  X(F16, 10, 2, "f16")                  \
  X(F32, 11, 4, "f32")                  \
  X(F64, 12, 8, "f64")                  \
  X(BF16, 13, 2, "bf16")                \
  X(C64, 14, 8, "c64")                  \
  X(C128, 15, 16, "c128")               \
  X(F8E5M2, 16, 0, "f8e5m2")            \
  X(F8E4M3FN, 17, 0, "f8e4m3fn")        \
  X(F8E4M3B11FNUZ, 18, 0, "f8e4m3b11fnuz") \
  X(F8E5M2FNUZ, 19, 0, "f8e5m2fnuz")    \
  X(F8E4M3FNUZ, 20, 0, "f8e4m3fnuz")    \
  X(S4, 21, 0, "s4")                    \
  X(U4, 22, 0, "u4")                    \
  X(TOKEN, 23, 0, "token")              \
  X(S2, 24, 0, "s2")                    \
  X(U2, 25, 0, "u2")                    \
  X(F8E4M3, 26, 0, "f8e4m3")            \
  X(F8E3M4, 27, 0, "f8e3m4")            \
  X(F8E8M0FNU, 28, 0, "f8e8m0fnu")      \
  X(F4E2M1FN, 29, 0, "f4e2m1fn")

/* The types that XLA's header gained after PJRT 0.81 (2025-11). */
#define CYXLA_ELEMENT_TYPES_SINCE_0_82(X) \
  X(S1, 30, 0, "s1")                      \
  X(U1, 31, 0, "u1")                      \
  X(F6E2M3FN, 32, 0, "f6e2m3fn")          \
  X(F6E3M2FN, 33, 0, "f6e3m2fn")

#if !defined(XLA_PJRT_C_PJRT_C_API_H_) && defined(__has_include)
#if __has_include(<xla/pjrt/c/pjrt_c_api.h>)
#include <xla/pjrt/c/pjrt_c_api.h>
#endif
#endif

#ifndef XLA_PJRT_C_PJRT_C_API_H_
#define CYXLA_ELEMENT_TYPE_ENUMERATOR_(name, value, bytes, text) PJRT_Buffer_Type_##name = value,
typedef enum { CYXLA_ELEMENT_TYPES(CYXLA_ELEMENT_TYPE_ENUMERATOR_) } PJRT_Buffer_Type;
#undef CYXLA_ELEMENT_TYPE_ENUMERATOR_
#endif

#endif /* CYXLA_ELEMENT_TYPE_H_ */
