/* Holds on an executable as a C caller makes them, through the function table (whose
 * address tests/test_native_api.py passes in): a spec, a by-value copy of it, and a
 * third, independent spec. Built as a shared library and called with ctypes. */
#include <stdio.h>
#include <string.h>

#include "cyxla/cyxla.h"

/* Runs `spec` on zeros, with one input and one output sized as `live` says (a released
 * spec's arrays are gone with its hold); returns its status. */
static cyxla_Status run_sized(const cyxla_Api* api, const cyxla_ProgramSpec* spec,
                              const cyxla_ProgramSpec* live, cyxla_Error* error) {
  void* in = api->aligned_memory(live->input_bytes[0]);
  void* out = api->aligned_memory(live->output_bytes[0]);
  memset(in, 0, live->input_bytes[0]);
  cyxla_Input input = {in, live->input_types[0], live->input_bytes[0]};
  const cyxla_Status status = api->execute(spec, &input, 1, &out, 1, error);
  api->free_aligned(in);
  api->free_aligned(out);
  return status;
}

#define EXPECT(condition)                                                       \
  do {                                                                          \
    if (!(condition)) {                                                         \
      snprintf(why, why_size, "line %d: %s (%s)", __LINE__, #condition,         \
               error.message);                                                  \
      return __LINE__;                                                          \
    }                                                                           \
  } while (0)

/* Takes a spec, copies it by value and takes `third`; releases the spec and then its
 * copy (the same hold, twice). Returns 0 with `third` still held, or the failing line
 * with `why` filled. */
int copy_release_twice(const cyxla_Api* api, uint64_t handle, cyxla_ProgramSpec* third,
                       char* why, size_t why_size) {
  cyxla_Error error = {CYXLA_OK, ""};
  cyxla_ProgramSpec spec = {.struct_size = sizeof spec};
  EXPECT(api->get_spec(handle, &spec, &error) == CYXLA_OK);
  cyxla_ProgramSpec copy = spec;
  memset(third, 0, sizeof *third);
  third->struct_size = sizeof *third;
  EXPECT(api->get_spec(handle, third, &error) == CYXLA_OK);
  EXPECT(run_sized(api, &copy, third, &error) == CYXLA_OK);

  api->release_spec(&spec);
  EXPECT(spec.executable == 0);
  /* The copy shared the released hold: it is refused, and releasing it does nothing. */
  EXPECT(run_sized(api, &copy, third, &error) == CYXLA_ERROR_RELEASED);
  api->release_spec(&copy);
  EXPECT(copy.executable == 0);
  api->release_spec(&copy);
  /* The third holder is untouched. */
  EXPECT(run_sized(api, third, third, &error) == CYXLA_OK);
  return 0;
}

/* Runs `spec` on zeros: its status, with `error` filled. */
int run_zeros(const cyxla_Api* api, const cyxla_ProgramSpec* spec, cyxla_Error* error) {
  return (int)run_sized(api, spec, spec, error);
}
