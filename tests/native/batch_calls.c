/* Batches as a C caller makes them, through the function table (whose address
 * tests/test_batches.py passes in). Built as a shared library and called with ctypes. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cyxla/cyxla.h"

#define EXPECT(condition)                                                       \
  do {                                                                          \
    if (!(condition)) {                                                         \
      snprintf(why, why_size, "line %d: %s (%s)", __LINE__, #condition,         \
               error.message);                                                  \
      line = __LINE__;                                                          \
      goto done;                                                                \
    }                                                                           \
  } while (0)

/* For a batched executable of one f32 input and one f32 output of the same size per
 * point: checks that its spec lists `sizes` (num_sizes of them), evaluates every n from 0
 * to max_n points of `points` in one call each, and compares the results with
 * `expected` (max_n points, computed by jax.jit), with a sentinel point past the output
 * that must stay untouched; then checks that bad arguments are refused. Returns 0, or the
 * failing line with `why` filled. */
int check_batches(const cyxla_Api* api, uint64_t handle, const size_t* sizes, size_t num_sizes,
                  const float* points, const float* expected, size_t max_n, char* why,
                  size_t why_size) {
  int line = 0;
  cyxla_Error error = {CYXLA_OK, ""};
  cyxla_ProgramSpec spec = {.struct_size = sizeof spec};
  void* in = NULL;
  float* out = NULL;
  EXPECT(api->get_spec(handle, &spec, &error) == CYXLA_OK);
  EXPECT(spec.num_inputs == 1 && spec.num_outputs == 1);
  EXPECT(spec.input_types[0] == PJRT_Buffer_Type_F32);
  EXPECT(spec.input_bytes[0] == spec.output_bytes[0]);
  EXPECT(spec.num_batch_sizes == num_sizes);
  for (size_t k = 0; k < num_sizes; ++k) EXPECT(spec.batch_sizes[k] == sizes[k]);

  const size_t point = spec.input_bytes[0];
  const size_t floats = point / sizeof(float);
  in = api->aligned_memory(max_n * point + 1);
  out = malloc((max_n + 1) * point);
  EXPECT(in != NULL && out != NULL);
  memcpy(in, points, max_n * point);
  for (size_t n = 0; n <= max_n; ++n) {
    for (size_t f = 0; f < (n + 1) * floats; ++f) out[f] = -7.0f;
    cyxla_Input input = {in, PJRT_Buffer_Type_F32, n * point};
    void* outputs[] = {out};
    EXPECT(api->execute_batch(&spec, n, &input, 1, outputs, 1, &error) == CYXLA_OK);
    EXPECT(memcmp(out, expected, n * point) == 0);
    for (size_t f = n * floats; f < (n + 1) * floats; ++f) EXPECT(out[f] == -7.0f);
  }

  /* Refused, and nothing written. */
  out[0] = -7.0f;
  void* outputs[] = {out};
  cyxla_Input wrong_size = {in, PJRT_Buffer_Type_F32, point};
  EXPECT(api->execute_batch(&spec, 2, &wrong_size, 1, outputs, 1, &error) ==
         CYXLA_ERROR_INVALID_ARGUMENT);
  cyxla_Input wrong_type = {in, PJRT_Buffer_Type_F64, 2 * point};
  EXPECT(api->execute_batch(&spec, 2, &wrong_type, 1, outputs, 1, &error) ==
         CYXLA_ERROR_TYPE_MISMATCH);
  cyxla_Input null_data = {NULL, PJRT_Buffer_Type_F32, 2 * point};
  EXPECT(api->execute_batch(&spec, 2, &null_data, 1, outputs, 1, &error) ==
         CYXLA_ERROR_INVALID_ARGUMENT);
  cyxla_Input one = {in, PJRT_Buffer_Type_F32, point};
  EXPECT(api->execute(&spec, &one, 1, outputs, 1, &error) == CYXLA_ERROR_INVALID_ARGUMENT);
  EXPECT(out[0] == -7.0f);
  /* No points: nothing to read or write. */
  cyxla_Input none = {NULL, PJRT_Buffer_Type_F32, 0};
  void* no_outputs[] = {NULL};
  EXPECT(api->execute_batch(&spec, 0, &none, 1, no_outputs, 1, &error) == CYXLA_OK);

  cyxla_ProgramSpec copy = spec;
  api->release_spec(&spec);
  cyxla_Input two = {in, PJRT_Buffer_Type_F32, 2 * point};
  EXPECT(api->execute_batch(&copy, 2, &two, 1, outputs, 1, &error) == CYXLA_ERROR_RELEASED);
done:
  api->release_spec(&spec);
  api->free_aligned(in);
  free(out);
  return line;
}
