/* The plain C version: load the exported program, run it on the first input, compare with
 * jax.jit's output. Build: cc run.c $(pkg-config --cflags --libs cyxla) -lm -o run
 *   CYXLA_PJRT_PLUGIN=/path/to/plugin.so ./run mlp.cyxla inputs.f32 expected.f32 */
#include <cyxla/cyxla.h>
#include <math.h>
#include <stdio.h>

static int read_floats(const char* path, float* data, size_t count) {
  FILE* file = fopen(path, "rb");
  size_t got = file != NULL ? fread(data, sizeof(float), count, file) : 0;
  if (file != NULL) fclose(file);
  return got == count ? 0 : -1;
}

int main(int argc, char** argv) {
  cyxla_Error error = {0};
  uint64_t handle = 0;
  cyxla_ProgramSpec spec = {.struct_size = sizeof spec};
  if (argc != 4) return fprintf(stderr, "usage: run PROGRAM INPUTS EXPECTED\n"), 2;
  if (cyxla_open_runtime(NULL, &error) != CYXLA_OK ||
      cyxla_load_program(argv[1], &handle, &error) != CYXLA_OK ||
      cyxla_get_spec(handle, &spec, &error) != CYXLA_OK) {
    return fprintf(stderr, "run: %s\n", error.message), 1;
  }
  size_t n_in = spec.input_bytes[0] / sizeof(float), n_out = spec.output_bytes[0] / sizeof(float);
  float* x = cyxla_aligned_memory(spec.input_bytes[0]);
  float* y = cyxla_aligned_memory(spec.output_bytes[0]);
  float* want = cyxla_aligned_memory(spec.output_bytes[0]);
  if (read_floats(argv[2], x, n_in) != 0 || read_floats(argv[3], want, n_out) != 0) {
    return fprintf(stderr, "run: cannot read the data files\n"), 1;
  }
  cyxla_Input input = {x, spec.input_types[0], spec.input_bytes[0]};
  void* outputs[1] = {y};
  if (cyxla_execute(&spec, &input, 1, outputs, 1, &error) != CYXLA_OK) {
    return fprintf(stderr, "run: %s\n", error.message), 1;
  }
  size_t wrong = 0;
  for (size_t i = 0; i < n_out; ++i) wrong += !(fabsf(y[i] - want[i]) <= 1e-5f + 1e-5f * fabsf(want[i]));
  printf("%zu of %zu values differ from jax.jit\n", wrong, n_out);
  cyxla_free_aligned(x), cyxla_free_aligned(y), cyxla_free_aligned(want);
  cyxla_release_spec(&spec);
  cyxla_release_program(handle);
  cyxla_close_runtime();
  return wrong == 0 ? 0 : 1;
}
