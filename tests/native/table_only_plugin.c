/* A library that looks like a PJRT plugin up to GetPjrtApi, with the version, table
 * size and slots the test chooses: every function slot is null. */
#include <string.h>

#include "pjrt/pjrt_c_api.h"

static PJRT_Api api;

const PJRT_Api* GetPjrtApi(void) {
  if (FAKE_NULL_API) return NULL;
  memset(&api, 0, sizeof api);
  api.struct_size = FAKE_STRUCT_SIZE;
  api.pjrt_api_version.struct_size = sizeof(PJRT_Api_Version);
  api.pjrt_api_version.major_version = FAKE_MAJOR;
  api.pjrt_api_version.minor_version = FAKE_MINOR;
  return &api;
}
