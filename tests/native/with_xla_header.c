/* cyxla's public headers in one file with XLA's own xla/pjrt/c/pjrt_c_api.h, in the order
 * that XLA_FIRST picks, compiled as C and as C++ by tests/test_xla_header.py. Both
 * declare the PJRT element types: cyxla's must yield to XLA's, and agree with them. */
#include <Python.h>

#ifdef XLA_FIRST
#include "xla/pjrt/c/pjrt_c_api.h"
#include "cyxla/cyxla.h"
#else
#include "cyxla/cyxla.h"
#include "xla/pjrt/c/pjrt_c_api.h"
#endif
#ifdef __cplusplus
#include "cyxla/cyxla.hpp"
#define STATIC_ASSERT static_assert
#else
#define STATIC_ASSERT _Static_assert
#endif

/* cyxla's numbering is XLA's, for every type that the fetched header (PJRT 0.81) has. */
#define SAME_VALUE(name, value, bytes, text) \
  STATIC_ASSERT(PJRT_Buffer_Type_##name == (value), "PJRT_Buffer_Type_" #name);
CYXLA_ELEMENT_TYPES_UNTIL_0_81(SAME_VALUE)

/* The public structs take XLA's enum where cyxla's would be. */
int main(void) {
  cyxla_Input input = {NULL, PJRT_Buffer_Type_F32, 0};
  const PJRT_Buffer_Type* types = &input.type;
  PJRT_Api_Version version = {PJRT_Api_Version_STRUCT_SIZE, NULL, PJRT_API_MAJOR, PJRT_API_MINOR};
  return (*types == PJRT_Buffer_Type_F32 && version.major_version == 0) ? 0 : 1;
}
