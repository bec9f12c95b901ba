/* Process start to first result, without Python: opens the runtime, loads each program
 * file given (one f32[n] input, one f32[n] output), runs it once on 0.5, 1, 1.5, ... and
 * prints its result's bits; then when the first result was ready (first_result_unix_ns,
 * CLOCK_REALTIME, for a parent that knows when it started the process) and whether the
 * PJRT plugin is mapped into the process (plugin_mapped yes|no: /proc/self/maps names
 * the file CYXLA_PJRT_PLUGIN names). With --threads N, N threads load and run the
 * programs at once with this one, after the first result: a program that needs the plugin
 * has them race to open it. Every thread's bits are checked against this one's.
 * For tests/test_standalone_start.py and benchmarks/standalone.py.
 *   first_result [--threads N] PROGRAM... */
#define _POSIX_C_SOURCE 200809L
#include <cyxla/cyxla.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PROGRAMS 8
#define MAX_VALUES 64
#define MAX_THREADS 64

static const char* programs[MAX_PROGRAMS];
static int n_programs = 0;

typedef struct {
  uint32_t bits[MAX_PROGRAMS][MAX_VALUES];
  size_t count[MAX_PROGRAMS];
  char message[2048];
} Outcome;

/* Loads, runs once and releases program `p`; 0, or -1 with the message in `out`. */
static int run_one(int p, Outcome* out) {
  cyxla_Error error = {0};
  uint64_t handle = 0;
  cyxla_ProgramSpec spec = {.struct_size = sizeof spec};
  if (cyxla_load_program(programs[p], &handle, &error) != CYXLA_OK ||
      cyxla_get_spec(handle, &spec, &error) != CYXLA_OK) {
    snprintf(out->message, sizeof out->message, "%s: %s", programs[p], error.message);
    return -1;
  }
  size_t n = spec.output_bytes[0] / sizeof(float);
  if (n > MAX_VALUES) n = MAX_VALUES;
  float* x = cyxla_aligned_memory(spec.input_bytes[0]);
  float* y = cyxla_aligned_memory(spec.output_bytes[0]);
  for (size_t i = 0; i < spec.input_bytes[0] / sizeof(float); ++i) x[i] = 0.5f * (float)(i + 1);
  cyxla_Input input = {x, spec.input_types[0], spec.input_bytes[0]};
  void* outputs[1] = {y};
  int status = cyxla_execute(&spec, &input, 1, outputs, 1, &error) == CYXLA_OK ? 0 : -1;
  if (status != 0) snprintf(out->message, sizeof out->message, "%s: %s", programs[p], error.message);
  memcpy(out->bits[p], y, n * sizeof(float));
  out->count[p] = n;
  cyxla_free_aligned(x), cyxla_free_aligned(y);
  cyxla_release_spec(&spec);
  cyxla_release_program(handle);
  return status;
}

static void* run_all(void* outcome) {
  Outcome* out = outcome;
  for (int p = 0; p < n_programs; ++p) {
    if (run_one(p, out) != 0) return out;
  }
  return NULL;
}

/* Whether the file CYXLA_PJRT_PLUGIN names is mapped into this process. */
static int plugin_mapped(void) {
  const char* plugin = getenv("CYXLA_PJRT_PLUGIN");
  const char* name = plugin != NULL ? strrchr(plugin, '/') : NULL;
  name = name != NULL ? name + 1 : plugin;
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;
  while (name != NULL && maps != NULL && fgets(line, sizeof line, maps) != NULL) {
    if (strstr(line, name) != NULL) found = 1;
  }
  if (maps != NULL) fclose(maps);
  return found;
}

int main(int argc, char** argv) {
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (n_programs < MAX_PROGRAMS) {
      programs[n_programs++] = argv[i];
    }
  }
  if (n_programs == 0 || threads < 0 || threads > MAX_THREADS) {
    return fprintf(stderr, "usage: first_result [--threads N<=64] PROGRAM...\n"), 2;
  }
  cyxla_Error error = {0};
  if (cyxla_open_runtime(NULL, &error) != CYXLA_OK) {
    return fprintf(stderr, "first_result: %s\n", error.message), 1;
  }
  static Outcome first, others[MAX_THREADS];
  if (run_one(0, &first) != 0) return fprintf(stderr, "first_result: %s\n", first.message), 1;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  long long ready = (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
  int mapped_at_first = plugin_mapped();
  // The threads and this one load every program at once: a program that needs the
  // plugin has them race to open it.
  pthread_t ids[MAX_THREADS];
  for (int t = 0; t < threads; ++t) pthread_create(&ids[t], NULL, run_all, &others[t]);
  int differ = 0, failed = run_all(&first) != NULL;
  if (failed) fprintf(stderr, "first_result: %s\n", first.message);
  for (int t = 0; t < threads; ++t) {
    void* failure = NULL;
    pthread_join(ids[t], &failure);
    if (failure != NULL) {
      fprintf(stderr, "first_result: thread %d: %s\n", t, others[t].message);
      failed = 1;
      continue;
    }
    differ += memcmp(others[t].bits, first.bits, sizeof first.bits) != 0;
  }
  for (int p = 0; p < n_programs; ++p) {
    printf("bits %d", p);
    for (size_t i = 0; i < first.count[p]; ++i) printf(" %08x", first.bits[p][i]);
    printf("\n");
  }
  printf("first_result_unix_ns %lld\n", ready);
  printf("plugin_mapped_at_first_result %s\n", mapped_at_first ? "yes" : "no");
  printf("plugin_mapped %s\n", plugin_mapped() ? "yes" : "no");
  printf("threads_differ %d\n", differ);
  cyxla_close_runtime();
  return failed;
}
