/* A linear solve without Python: load the exported jnp.linalg.solve program, which calls
 * LAPACK through cyxla's own handlers, solve a batch of systems, compare with NumPy's.
 * Build: cc solve.c $(pkg-config --cflags --libs cyxla) -lm -o solve
 *   CYXLA_PJRT_PLUGIN=/path/to/plugin.so CYXLA_LAPACK=/path/to/liblapack.so \
 *     ./solve solve.cyxla solve_inputs.f32 solve_expected.f32
 * (CYXLA_LAPACK may be left unset where the system has OpenBLAS or LAPACK installed.) */
#include <cyxla/cyxla.h>
#include <math.h>
#include <stdio.h>

static int read_floats(FILE* file, float* data, size_t count) {
  return fread(data, sizeof(float), count, file) == count ? 0 : -1;
}

int main(int argc, char** argv) {
  cyxla_Error error = {0};
  uint64_t handle = 0;
  cyxla_ProgramSpec spec = {.struct_size = sizeof spec};
  if (argc != 4) return fprintf(stderr, "usage: solve PROGRAM INPUTS EXPECTED\n"), 2;
  if (cyxla_open_runtime(NULL, &error) != CYXLA_OK ||
      cyxla_load_program(argv[1], &handle, &error) != CYXLA_OK ||
      cyxla_get_spec(handle, &spec, &error) != CYXLA_OK) {
    return fprintf(stderr, "solve: %s\n", error.message), 1;
  }
  /* Inputs: the matrices A (batch x n x n), then the right-hand sides b (batch x n). */
  size_t n_a = spec.input_bytes[0] / sizeof(float), n_b = spec.input_bytes[1] / sizeof(float);
  size_t n_x = spec.output_bytes[0] / sizeof(float);
  float* a = cyxla_aligned_memory(spec.input_bytes[0]);
  float* b = cyxla_aligned_memory(spec.input_bytes[1]);
  float* x = cyxla_aligned_memory(spec.output_bytes[0]);
  float* want = cyxla_aligned_memory(spec.output_bytes[0]);
  FILE* inputs = fopen(argv[2], "rb");
  FILE* expected = fopen(argv[3], "rb");
  int read = inputs != NULL && expected != NULL && read_floats(inputs, a, n_a) == 0 &&
             read_floats(inputs, b, n_b) == 0 && read_floats(expected, want, n_x) == 0;
  if (inputs != NULL) fclose(inputs);
  if (expected != NULL) fclose(expected);
  if (!read) return fprintf(stderr, "solve: cannot read the data files\n"), 1;
  cyxla_Input args[2] = {{a, spec.input_types[0], spec.input_bytes[0]},
                         {b, spec.input_types[1], spec.input_bytes[1]}};
  void* outputs[1] = {x};
  if (cyxla_execute(&spec, args, 2, outputs, 1, &error) != CYXLA_OK) {
    return fprintf(stderr, "solve: %s\n", error.message), 1;
  }
  size_t wrong = 0;
  for (size_t i = 0; i < n_x; ++i) wrong += !(fabsf(x[i] - want[i]) <= 1e-4f + 1e-4f * fabsf(want[i]));
  printf("%zu of %zu values differ from NumPy\n", wrong, n_x);
  cyxla_free_aligned(a), cyxla_free_aligned(b), cyxla_free_aligned(x), cyxla_free_aligned(want);
  cyxla_release_spec(&spec);
  cyxla_release_program(handle);
  cyxla_close_runtime();
  return wrong == 0 ? 0 : 1;
}
