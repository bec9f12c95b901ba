/* Bound calls as a C caller makes them, through the function table (whose address
 * tests/test_bound_calls.py passes in). Built as a shared library and called with ctypes.
 * The program is one f32 input and one f32 output of the same size. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cyxla/cyxla.h"

#define EXPECT(condition)                                                       \
  do {                                                                          \
    if (!(condition)) {                                                         \
      snprintf(why, why_size, "line %d: %s (%s)", __LINE__, #condition,         \
               error.message);                                                  \
      return __LINE__;                                                          \
    }                                                                           \
  } while (0)

/* Binds aligned memory, calls twice with new inputs written in between (each result
 * against `expected`, rows of `n` floats), then checks the refusals: bad arguments at bind,
 * a spec's handle as a bound call's, a call and a second unbind after unbind. Returns 0,
 * or the failing line with `why` filled. */
int bound_rules(const cyxla_Api* api, uint64_t handle, const float* x, const float* expected,
                size_t n, char* why, size_t why_size) {
  cyxla_Error error = {CYXLA_OK, ""};
  cyxla_ProgramSpec spec = {.struct_size = sizeof spec};
  EXPECT(api->get_spec(handle, &spec, &error) == CYXLA_OK);
  const size_t bytes = n * sizeof(float);
  EXPECT(spec.input_bytes[0] == bytes && spec.output_bytes[0] == bytes);
  float* in = api->aligned_memory(bytes);
  float* out = api->aligned_memory(bytes);
  cyxla_Input input = {in, PJRT_Buffer_Type_F32, bytes};
  void* outputs[1] = {out};
  uint64_t bound = 7;

  /* Refused at bind, with nothing bound. */
  cyxla_Input wrong = {in, PJRT_Buffer_Type_F32, bytes - 4};
  EXPECT(api->bind(&spec, &wrong, 1, outputs, 1, &bound, &error) == CYXLA_ERROR_INVALID_ARGUMENT);
  EXPECT(bound == 0 && strstr(error.message, "bind: input 0 has") != NULL);
  cyxla_Input f64 = {in, PJRT_Buffer_Type_F64, bytes};
  EXPECT(api->bind(&spec, &f64, 1, outputs, 1, &bound, &error) == CYXLA_ERROR_TYPE_MISMATCH);
  EXPECT(api->bind(&spec, &input, 2, outputs, 1, &bound, &error) == CYXLA_ERROR_INVALID_ARGUMENT);
  void* null_output[1] = {NULL};
  EXPECT(api->bind(&spec, &input, 1, null_output, 1, &bound, &error) ==
         CYXLA_ERROR_INVALID_ARGUMENT);
  EXPECT(strstr(error.message, "output 0 is NULL") != NULL);
  EXPECT(api->bind(&spec, &input, 1, outputs, 1, NULL, &error) == CYXLA_ERROR_INVALID_ARGUMENT);
  EXPECT(api->bind(NULL, &input, 1, outputs, 1, &bound, &error) == CYXLA_ERROR_INVALID_ARGUMENT);

  /* Bound: each call reads what the input holds then. */
  EXPECT(api->bind(&spec, &input, 1, outputs, 1, &bound, &error) == CYXLA_OK);
  EXPECT(bound != 0);
  for (int row = 0; row < 2; ++row) {
    memcpy(in, x + row * n, bytes);
    EXPECT(api->call_bound(bound, &error) == CYXLA_OK);
    EXPECT(memcmp(out, expected + row * n, bytes) == 0);
  }
  /* A spec's handle is not a bound call's. */
  EXPECT(api->call_bound(spec.executable, &error) == CYXLA_ERROR_INVALID_ARGUMENT);
  EXPECT(api->unbind(spec.executable, &error) == CYXLA_ERROR_INVALID_ARGUMENT);
  /* The bound call outlives the spec it was bound from. */
  api->release_spec(&spec);
  EXPECT(api->call_bound(bound, &error) == CYXLA_OK);
  EXPECT(api->unbind(bound, &error) == CYXLA_OK);
  EXPECT(api->call_bound(bound, &error) == CYXLA_ERROR_RELEASED);
  EXPECT(strstr(error.message, "no bound call has the handle") != NULL);
  EXPECT(api->unbind(bound, &error) == CYXLA_ERROR_RELEASED);
  EXPECT(api->call_bound(0, NULL) == CYXLA_ERROR_RELEASED);
  api->free_aligned(in);
  api->free_aligned(out);
  return 0;
}

typedef struct Worker {
  const cyxla_Api* api;
  const cyxla_ProgramSpec* spec;
  const float* rows_in;
  const float* rows_out;
  size_t rows, n, calls, seed;
  long wrong; /* out: wrong results, or -1 when a call failed */
} Worker;

static void* work(void* argument) {
  Worker* w = argument;
  const size_t bytes = w->n * sizeof(float);
  float* in = w->api->aligned_memory(bytes);
  float* out = w->api->aligned_memory(bytes);
  cyxla_Input input = {in, PJRT_Buffer_Type_F32, bytes};
  void* outputs[1] = {out};
  uint64_t bound = 0;
  if (w->api->bind(w->spec, &input, 1, outputs, 1, &bound, NULL) != CYXLA_OK) {
    w->wrong = -1;
    return NULL;
  }
  for (size_t c = 0; c < w->calls; ++c) {
    const size_t row = (w->seed * 7919 + c) % w->rows;
    memcpy(in, w->rows_in + row * w->n, bytes);
    if (w->api->call_bound(bound, NULL) != CYXLA_OK) {
      w->wrong = -1;
      break;
    }
    if (memcmp(out, w->rows_out + row * w->n, bytes) != 0) ++w->wrong;
  }
  w->api->unbind(bound, NULL);
  w->api->free_aligned(in);
  w->api->free_aligned(out);
  return NULL;
}

/* `threads` threads (at most 16), each with a bound call of its own on one executable,
 * make `calls` calls cycling through the rows; returns the wrong results (or -1). */
long bound_threads(const cyxla_Api* api, uint64_t handle, const float* rows_in,
                   const float* rows_out, size_t rows, size_t n, size_t calls, size_t threads) {
  cyxla_ProgramSpec spec = {.struct_size = sizeof spec};
  if (threads > 16 || api->get_spec(handle, &spec, NULL) != CYXLA_OK) return -1;
  Worker workers[16];
  pthread_t ids[16];
  for (size_t t = 0; t < threads; ++t) {
    workers[t] = (Worker){api, &spec, rows_in, rows_out, rows, n, calls, t, 0};
    pthread_create(&ids[t], NULL, work, &workers[t]);
  }
  long wrong = 0;
  for (size_t t = 0; t < threads; ++t) {
    pthread_join(ids[t], NULL);
    wrong = (wrong < 0 || workers[t].wrong < 0) ? -1 : wrong + workers[t].wrong;
  }
  api->release_spec(&spec);
  return wrong;
}
