/* cyxla_execute as a C caller makes it through the function table (whose address
 * tests/test_callbacks.py passes in): once, keeping the error's message, and from several
 * threads at once on one program. Built as a shared library and called with ctypes. The
 * program is one f32 input and one f32 output of the same size. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cyxla/cyxla.h"

/* One cyxla_execute of `handle` on `n` floats; returns its status, with the error's
 * message copied into `message`. */
int execute_once(const cyxla_Api* api, uint64_t handle, const float* x, float* out, size_t n,
                 char* message, size_t message_size) {
  cyxla_Error error = {CYXLA_OK, ""};
  cyxla_ProgramSpec spec = {.struct_size = sizeof spec};
  if (api->get_spec(handle, &spec, &error) != CYXLA_OK) return error.status;
  cyxla_Input input = {x, PJRT_Buffer_Type_F32, n * sizeof(float)};
  void* outputs[1] = {out};
  const cyxla_Status status = api->execute(&spec, &input, 1, outputs, 1, &error);
  snprintf(message, message_size, "%s", error.message);
  api->release_spec(&spec);
  return status;
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
  float* out = w->api->aligned_memory(bytes);
  void* outputs[1] = {out};
  for (size_t c = 0; c < w->calls; ++c) {
    const size_t row = (w->seed * 7919 + c) % w->rows;
    cyxla_Input input = {w->rows_in + row * w->n, PJRT_Buffer_Type_F32, bytes};
    if (w->api->execute(w->spec, &input, 1, outputs, 1, NULL) != CYXLA_OK) {
      w->wrong = -1;
      break;
    }
    if (memcmp(out, w->rows_out + row * w->n, bytes) != 0) ++w->wrong;
  }
  w->api->free_aligned(out);
  return NULL;
}

/* `threads` threads (at most 16) each make `calls` calls of cyxla_execute, cycling
 * through the rows; returns the wrong results (or -1 when a call failed). */
long execute_threads(const cyxla_Api* api, uint64_t handle, const float* rows_in,
                     const float* rows_out, size_t rows, size_t n, size_t calls,
                     size_t threads) {
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
