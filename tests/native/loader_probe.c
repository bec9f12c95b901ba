/* An object for the kernel loader's tests (tests/test_kernel_loader.py), compiled with -c
 * under several code models so that its relocations take every form the loader applies:
 * a call into libm (PLT32, or R_X86_64_64 in the large model), read-only data (PC32, or
 * 64), writable data defined here (GOTPCRELX under -fpic, PC32 under -fpie), zeroed data,
 * and a call between two functions of the object. */
#include <math.h>

static const float kTable[4] = {1.5f, -2.5f, 3.25f, 0.125f};
float probe_bias = 0.75f; /* .data: global, so -fpic reaches it through the GOT */
float probe_total;        /* .bss */

__attribute__((noinline)) float probe_scale(float x, int i) { return x * kTable[i & 3]; }

/* sinf(x) * table[i] + bias, and the running total of its results. */
float probe(float x, int i) {
  const float y = probe_scale(sinf(x), i) + probe_bias;
  probe_total += y;
  return y;
}
