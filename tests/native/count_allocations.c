/* Counts heap allocations while enabled, for the test that execute allocates nothing of
 * its own. Preloaded with LD_PRELOAD; forwards to glibc's allocator. */
#include <stdatomic.h>
#include <stddef.h>

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);

static atomic_int counting;
static atomic_long allocations;

void count_allocations_start(void) {
  atomic_store(&allocations, 0);
  atomic_store(&counting, 1);
}

long count_allocations_stop(void) {
  atomic_store(&counting, 0);
  return atomic_load(&allocations);
}

static void note(void) {
  if (atomic_load_explicit(&counting, memory_order_relaxed)) atomic_fetch_add(&allocations, 1);
}

void* malloc(size_t size) {
  note();
  return __libc_malloc(size);
}

void* calloc(size_t count, size_t size) {
  note();
  return __libc_calloc(count, size);
}

void* realloc(void* pointer, size_t size) {
  note();
  return __libc_realloc(pointer, size);
}

void* memalign(size_t alignment, size_t size) {
  note();
  return __libc_memalign(alignment, size);
}

void* aligned_alloc(size_t alignment, size_t size) {
  note();
  return __libc_memalign(alignment, size);
}

int posix_memalign(void** result, size_t alignment, size_t size) {
  note();
  void* pointer = __libc_memalign(alignment, size);
  if (pointer == NULL) return 12; /* ENOMEM */
  *result = pointer;
  return 0;
}
