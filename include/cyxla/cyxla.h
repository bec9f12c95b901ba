/* cyxla's native API: run compiled JAX programs from C, C++ or Cython, without the GIL.
 *
 * An extension module gets the function table once, at import time, from the Python
 * module cyxla._core (a capsule named "cyxla._core._C_API"), the way NumPy's C API is
 * imported:
 *
 *     #include <Python.h>
 *     #include <cyxla/cyxla.h>
 *     ... in the module's init function:
 *     if (cyxla_import() < 0) return NULL;   // a Python exception is set
 *
 * after which cyxla_execute(...) and the other functions below call into the table. In
 * C++, prefer <cyxla/cyxla.hpp>; in Cython, cimport cyxla._runtime.
 *
 * A process without Python (a C or C++ application, a worker) includes this header
 * without Python.h and links libcyxla (find_package(cyxla), pkg-config cyxla): the same
 * functions then call the table that libcyxla exports (cyxla_get_api). It opens the
 * runtime with a plugin (cyxla_open_runtime), loads a program file that Python saved
 * (cyxla_load_program), and runs it with cyxla_get_spec and cyxla_execute. In a Python
 * process the capsule hands out that same table: one runtime, one set of executables.
 *
 * Versions. CYXLA_ABI_VERSION counts changes of this header. The table and every struct
 * here only grow at the end: a runtime serves modules built against its own version or
 * an older one down to CYXLA_ABI_OLDEST_COMPATIBLE, and cyxla_import() refuses a runtime
 * older than the header (the module would call slots that runtime lacks). Structs that
 * the caller fills for the runtime start with `struct_size`, so a newer runtime knows
 * which fields an older caller set. A struct_size smaller than the struct of
 * CYXLA_ABI_OLDEST_COMPATIBLE is refused (CYXLA_ERROR_INVALID_ARGUMENT); a smaller one
 * than this header's (an older caller) gets the fields its struct has; a larger one (a
 * caller built against a newer header, talking to this older runtime) is accepted, and
 * only the fields this runtime knows, a prefix of the caller's struct, are read or
 * written.
 *
 * Threads. Any number of threads may call cyxla_execute at once, on the same or on
 * different executables. A ProgramSpec stays valid until cyxla_release_spec; calling
 * cyxla_execute with a released spec, or after the executable was freed, returns
 * CYXLA_ERROR_RELEASED instead of crashing. Release a spec only when no thread is
 * still executing with it. Nothing here takes the GIL or calls Python, except
 * cyxla_import. cyxla_open_runtime, cyxla_load_program and cyxla_register_ffi_handler
 * may be called from any thread; they compile or load, so keep them off hot paths.
 *
 * Arguments. `inputs` may be NULL when there are no inputs, `outputs` when there are no
 * outputs, and the data of a 0-byte input or output too; any other NULL is
 * CYXLA_ERROR_INVALID_ARGUMENT. An output may be an input's memory (x <- f(x)): every
 * input is read before any output is written. The error struct, where given, is written
 * on success too (CYXLA_OK and an empty message).
 */
#ifndef CYXLA_CYXLA_H_
#define CYXLA_CYXLA_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cyxla/element_type.h" /* PJRT_Buffer_Type: the element types of inputs and outputs */

#ifdef __cplusplus
extern "C" {
#endif

/* 1 (2026-12): the first version.
 * 2 (2026-12): batches (cyxla_execute_batch, the batch sizes in cyxla_ProgramSpec); bound
 *   calls (cyxla_bind, cyxla_call_bound, cyxla_unbind) and CYXLA_ERROR_BUSY; a process
 *   without Python: cyxla_get_api, cyxla_open_runtime and cyxla_close_runtime,
 *   cyxla_load_program and cyxla_release_program (program files),
 *   cyxla_register_ffi_handler, and CYXLA_ERROR_PROGRAM_FILE. */
#define CYXLA_ABI_VERSION 2
#define CYXLA_ABI_OLDEST_COMPATIBLE 1
#define CYXLA_CAPSULE_NAME "cyxla._core._C_API"

/* Inputs and outputs aliased by CPU buffers need this alignment; cyxla_aligned_memory
 * returns it. */
#define CYXLA_HOST_ALIGNMENT 64

typedef enum cyxla_Status {
  CYXLA_OK = 0,
  CYXLA_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, a wrong count or a wrong size */
  CYXLA_ERROR_TYPE_MISMATCH = 2,    /* an input's element type is not the program's */
  CYXLA_ERROR_RELEASED = 3,         /* the spec was released or the executable freed */
  CYXLA_ERROR_PJRT = 4,             /* the plugin reported an error */
  CYXLA_ERROR_INTERNAL = 5,         /* out of memory or a bug in cyxla */
  CYXLA_ERROR_BUSY = 6,             /* another thread is in a call of the same bound call */
  CYXLA_ERROR_PROGRAM_FILE = 7,     /* not a program file, a newer format, truncated, altered
                                       or malformed: the message says which (ABI 2) */
} cyxla_Status;

/* Where a failing call explains itself. Pass NULL where the message is not wanted. */
typedef struct cyxla_Error {
  cyxla_Status status;
  char message[512]; /* NUL-terminated UTF-8 (other bytes written \xNN), truncated to fit */
} cyxla_Error;

/* One input array: dense, row-major, in host memory. On the CPU an input aligned to
 * CYXLA_HOST_ALIGNMENT is read in place (no copy) and must not change during the call. */
typedef struct cyxla_Input {
  const void* data;
  PJRT_Buffer_Type type; /* must equal the program's input type */
  size_t nbytes;         /* must equal the program's input_bytes */
} cyxla_Input;

/* What a native caller needs to know about an executable. Filled by cyxla_get_spec;
 * the arrays stay valid until cyxla_release_spec.
 *
 * Before cyxla_get_spec the caller zero-initialises the struct (at least `executable`)
 * and sets struct_size:  cyxla_ProgramSpec spec = {.struct_size = sizeof spec};
 * A spec whose `executable` is not 0 (one that still holds an executable, or stack
 * garbage) is refused with CYXLA_ERROR_INVALID_ARGUMENT and left as it was.
 *
 * Each filled spec owns one hold of its own. A by-value copy shares that hold, it does
 * not add one: releasing the spec or any copy releases the hold, and the arrays, for all
 * of them (they then get CYXLA_ERROR_RELEASED), and releasing it again through a copy does
 * nothing. It never drops a hold that another spec owns. A second, independent hold is
 * another cyxla_get_spec. */
typedef struct cyxla_ProgramSpec {
  size_t struct_size; /* the caller sets sizeof(cyxla_ProgramSpec) before cyxla_get_spec */
  uint64_t executable; /* this spec's hold; 0 before cyxla_get_spec and after release */
  size_t num_inputs;
  size_t num_outputs;
  const PJRT_Buffer_Type* input_types;
  const size_t* input_ranks;
  const int64_t* const* input_dims; /* input_dims[i][0 .. input_ranks[i]) */
  const size_t* input_bytes;
  const PJRT_Buffer_Type* output_types;
  const size_t* output_ranks;
  const int64_t* const* output_dims;
  const size_t* output_bytes; /* the bytes cyxla_execute writes to outputs[j] */
  /* Version 2. A batched executable (cyxla.compile_batched in Python) is described above
   * by one point's inputs and outputs; these are the batch sizes it was compiled at,
   * ascending. 0 and NULL for an executable that is not batched. */
  size_t num_batch_sizes;
  const size_t* batch_sizes;
} cyxla_ProgramSpec;

/* The type of a client option's value (ABI 2). */
typedef enum cyxla_OptionType {
  CYXLA_OPTION_STRING = 0,
  CYXLA_OPTION_INT64 = 1,
  CYXLA_OPTION_FLOAT = 2,
  CYXLA_OPTION_BOOL = 3,
} cyxla_OptionType;

/* One option of the plugin's client, e.g. {"cpu_device_count", CYXLA_OPTION_INT64,
 * .int64_value = 1}. The field of `type` is read: string_value (NUL-terminated),
 * int64_value, float_value, or int64_value (0 or 1) for a bool. */
typedef struct cyxla_ClientOption {
  const char* name;
  cyxla_OptionType type;
  const char* string_value;
  int64_t int64_value;
  double float_value; /* passed to the plugin as a float */
} cyxla_ClientOption;

/* How cyxla_open_runtime opens the runtime (ABI 2). Zero-initialise it and set
 * struct_size:  cyxla_RuntimeOptions options = {.struct_size = sizeof options}; */
typedef struct cyxla_RuntimeOptions {
  size_t struct_size;
  const char* plugin_path; /* the PJRT plugin's library; NULL: $CYXLA_PJRT_PLUGIN */
  const cyxla_ClientOption* client_options;
  size_t num_client_options;
} cyxla_RuntimeOptions;

/* The function table. Entries are only appended; retired slots stay, set to NULL. */
typedef struct cyxla_Api {
  size_t struct_size;
  int abi_version;       /* CYXLA_ABI_VERSION of the runtime */
  int oldest_compatible; /* the oldest header version the runtime still serves */

  /* Fills `spec` for the executable with `handle` (Executable.handle in Python) and holds
   * it alive until cyxla_release_spec. `spec` must be zero-initialised with struct_size
   * set (see cyxla_ProgramSpec); a spec that still holds one is refused, not overwritten. */
  cyxla_Status (*get_spec)(uint64_t handle, cyxla_ProgramSpec* spec, cyxla_Error* error);
  /* Drops the spec's hold on its executable and sets spec->executable to 0. A hold that
   * was released already (through a copy of the spec) is left alone: no-op. */
  void (*release_spec)(cyxla_ProgramSpec* spec);
  /* Runs the program: reads inputs[0 .. num_inputs), writes output_bytes[j] bytes to each
   * outputs[j]. Allocates nothing on the heap for up to 16 inputs and 16 outputs. Refuses
   * a spec whose struct_size is smaller than version 1's cyxla_ProgramSpec, as get_spec
   * does. */
  cyxla_Status (*execute)(const cyxla_ProgramSpec* spec, const cyxla_Input* inputs,
                          size_t num_inputs, void* const* outputs, size_t num_outputs,
                          cyxla_Error* error);
  /* Host memory aligned to CYXLA_HOST_ALIGNMENT, freed with free_aligned. NULL for 0
   * bytes, when out of memory, and for sizes that cannot be rounded up to the alignment
   * (near SIZE_MAX): a non-NULL result always has at least `nbytes` usable bytes. */
  void* (*aligned_memory)(size_t nbytes);
  void (*free_aligned)(void* pointer);

  /* Version 2. Evaluates `n` points of a batched executable (spec->num_batch_sizes != 0)
   * in one call. inputs[i].data holds n points of input i one after another, each of
   * input_bytes[i] bytes (the spec describes one point), so inputs[i].nbytes is
   * n * input_bytes[i]; outputs[j] receives n * output_bytes[j] bytes, and nothing past
   * them. Runs the smallest compiled size that holds the points, padded with copies of
   * the last point (whose results are dropped), and splits more points than the largest
   * size into calls of the largest size and one for the rest. n == 0 checks the
   * arguments and runs nothing (inputs[i].data and outputs[j] may then be NULL).
   * Allocates nothing on the heap for up to 16 inputs and 16 outputs, once a thread's
   * scratch memory for the padding has grown to its largest size. cyxla_execute and
   * cyxla_bind refuse a batched spec. */
  cyxla_Status (*execute_batch)(const cyxla_ProgramSpec* spec, size_t n,
                                const cyxla_Input* inputs, size_t num_inputs,
                                void* const* outputs, size_t num_outputs, cyxla_Error* error);

  /* Version 2: bound calls. A bound call is a program bound, once, to the caller's input
   * and output memory: each call runs it on what the inputs hold at that moment and writes
   * the outputs, with no argument to check or wrap (on the CPU its input buffers alias
   * that memory and are made at bind time). The handle is never 0.
   *   - Memory: inputs[i].data and outputs[j] must stay valid, and be used for nothing
   *     else, until cyxla_unbind; cyxla cannot detect a free, and a call after one reads
   *     and writes freed memory. Write inputs and read outputs only between calls.
   *   - Alignment: on the CPU an input aligned to CYXLA_HOST_ALIGNMENT is read in place;
   *     an unaligned one is copied into memory of the bound call's own on every call.
   *   - Threads: any thread may call a bound call, one at a time: a call while another
   *     thread is in one returns CYXLA_ERROR_BUSY and runs nothing. Bind once per thread
   *     to run in parallel.
   *   - Lifetime: a bound call holds its executable alive; releasing the spec it was bound
   *     from, or the Python Executable, does not end it. After cyxla_unbind its handle
   *     gets CYXLA_ERROR_RELEASED (a second unbind too). Unbinding waits for a call in
   *     flight on another thread. */

  /* Checks the arguments as execute does and binds them; stores the handle in `*bound`
   * (0 on failure). */
  cyxla_Status (*bind)(const cyxla_ProgramSpec* spec, const cyxla_Input* inputs,
                       size_t num_inputs, void* const* outputs, size_t num_outputs,
                       uint64_t* bound, cyxla_Error* error);
  /* Runs the bound call. Allocates nothing of cyxla's own. */
  cyxla_Status (*call_bound)(uint64_t bound, cyxla_Error* error);
  /* Ends the bound call; CYXLA_ERROR_RELEASED for one that was unbound already. */
  cyxla_Status (*unbind)(uint64_t bound, cyxla_Error* error);

  /* Version 2: a process without Python. */
  /* Opens the process's runtime: loads the plugin at options->plugin_path (NULL or no
   * options: $CYXLA_PJRT_PLUGIN) and creates its client with the client options over
   * cyxla's defaults for its platform, which Python uses too (CPU: cpu_device_count 1,
   * asynchronous 0; CUDA and ROCm: preallocate 0); an option named replaces the
   * default. A process has one runtime: when one is open already (Python's, or an earlier call's),
   * it is shared, and a plugin_path naming another plugin is refused. Each successful
   * call is matched by one cyxla_close_runtime. */
  cyxla_Status (*open_runtime)(const cyxla_RuntimeOptions* options, cyxla_Error* error);
  /* Drops the hold of one cyxla_open_runtime; after the last, the runtime is freed once
   * the programs loaded on it are released. The plugin stays loaded. */
  void (*close_runtime)(void);
  /* Reads the program file at `path` (Program.save in Python), checks it (format,
   * size, CRC, metadata: CYXLA_ERROR_PROGRAM_FILE), checks that this runtime's platform
   * is the file's and that every custom-call target it calls has a handler, compiles it
   * with the file's compile options, and stores a handle for cyxla_get_spec in `*handle`.
   * Needs an open runtime. */
  cyxla_Status (*load_program)(const char* path, uint64_t* handle, cyxla_Error* error);
  /* Drops the handle of cyxla_load_program; specs taken from it stay valid until they
   * are released. */
  void (*release_program)(uint64_t handle);
  /* Registers `handler`, an XLA_FFI_Handler* (XLA_FFI_DEFINE_HANDLER), as the custom-call
   * target `target` of `platform` ("cpu", "cuda" or "rocm") with XLA_FFI_Handler_Traits
   * `traits`, on the open runtime's plugin; before cyxla_load_program of a program that
   * calls it. The handler must stay loaded as long as the process runs programs. */
  cyxla_Status (*register_ffi_handler)(const char* target, void* handler, const char* platform,
                                       uint32_t traits, cyxla_Error* error);
} cyxla_Api;

#ifdef __cplusplus
}
#endif

/* ------------------------------------------------------------------ importing */
/* Defined where Python.h was included first. Each translation unit keeps its own
 * pointer to the table and imports it once (cyxla_import(), or on first use). */
#ifdef PY_VERSION_HEX

static const cyxla_Api* cyxla_api_table = NULL;

/* Imports the table: 0 on success, -1 with a Python exception set. */
static inline int cyxla_import(void) {
  PyObject* module = PyImport_ImportModule("cyxla._core");
  if (module == NULL) return -1;
  PyObject* capsule = PyObject_GetAttrString(module, "_C_API");
  Py_DECREF(module);
  if (capsule == NULL) return -1;
  const cyxla_Api* api = (const cyxla_Api*)PyCapsule_GetPointer(capsule, CYXLA_CAPSULE_NAME);
  Py_DECREF(capsule);
  if (api == NULL) return -1;
  if (api->abi_version < CYXLA_ABI_VERSION) {
    PyErr_Format(PyExc_ImportError,
                 "this module was built against cyxla ABI version %d, but the installed cyxla "
                 "provides version %d; upgrade cyxla",
                 CYXLA_ABI_VERSION, api->abi_version);
    return -1;
  }
  if (CYXLA_ABI_VERSION < api->oldest_compatible) {
    PyErr_Format(PyExc_ImportError,
                 "this module was built against cyxla ABI version %d, but the installed cyxla "
                 "serves versions %d to %d; rebuild the module against the installed cyxla",
                 CYXLA_ABI_VERSION, api->oldest_compatible, api->abi_version);
    return -1;
  }
  if (api->struct_size < sizeof(cyxla_Api)) {
    PyErr_Format(PyExc_ImportError,
                 "the installed cyxla's function table has %zu bytes, this module needs %zu; "
                 "upgrade cyxla",
                 api->struct_size, sizeof(cyxla_Api));
    return -1;
  }
  __atomic_store_n(&cyxla_api_table, api, __ATOMIC_RELEASE);
  return 0;
}

/* The table, importing it on first use when the module did not call cyxla_import().
 * That lazy import takes the GIL once: call cyxla_import() at module init if a thread
 * that runs programs could wait on one that holds the GIL. */
static inline const cyxla_Api* cyxla_api(void) {
  const cyxla_Api* api = __atomic_load_n(&cyxla_api_table, __ATOMIC_ACQUIRE);
  if (__builtin_expect(api != NULL, 1)) return api;
  if (!Py_IsInitialized()) return NULL;
  PyGILState_STATE gil = PyGILState_Ensure();
  if (cyxla_import() < 0) PyErr_Clear();
  PyGILState_Release(gil);
  return __atomic_load_n(&cyxla_api_table, __ATOMIC_ACQUIRE);
}

static inline cyxla_Status cyxla_not_imported(cyxla_Error* error) {
  if (error != NULL) {
    error->status = CYXLA_ERROR_INTERNAL;
    snprintf(error->message, sizeof(error->message), "%s",
             "cannot import cyxla._core: call cyxla_import() at module init to see why");
  }
  return CYXLA_ERROR_INTERNAL;
}

#else /* no Python: the table of the libcyxla this program is linked with */

#ifdef __cplusplus
extern "C" {
#endif
/* libcyxla's table; the wrappers below check its version once. */
const cyxla_Api* cyxla_get_api(void);
#ifdef __cplusplus
}
#endif

static const cyxla_Api* cyxla_api_table = NULL;

/* The table, or NULL when the libcyxla loaded is older than this header. */
static inline const cyxla_Api* cyxla_api(void) {
  const cyxla_Api* api = __atomic_load_n(&cyxla_api_table, __ATOMIC_ACQUIRE);
  if (__builtin_expect(api != NULL, 1)) return api;
  api = cyxla_get_api();
  if (api->abi_version < CYXLA_ABI_VERSION || CYXLA_ABI_VERSION < api->oldest_compatible ||
      api->struct_size < sizeof(cyxla_Api)) {
    return NULL;
  }
  __atomic_store_n(&cyxla_api_table, api, __ATOMIC_RELEASE);
  return api;
}

static inline cyxla_Status cyxla_not_imported(cyxla_Error* error) {
  if (error != NULL) {
    const cyxla_Api* api = cyxla_get_api();
    error->status = CYXLA_ERROR_INTERNAL;
    snprintf(error->message, sizeof(error->message),
             "this program was built against cyxla ABI version %d, but the libcyxla it "
             "loaded serves versions %d to %d; rebuild it against the installed cyxla",
             CYXLA_ABI_VERSION, api->oldest_compatible, api->abi_version);
  }
  return CYXLA_ERROR_INTERNAL;
}

#endif /* PY_VERSION_HEX */

static inline cyxla_Status cyxla_get_spec(uint64_t handle, cyxla_ProgramSpec* spec,
                                          cyxla_Error* error) {
  const cyxla_Api* api = cyxla_api();
  return api != NULL ? api->get_spec(handle, spec, error) : cyxla_not_imported(error);
}

static inline void cyxla_release_spec(cyxla_ProgramSpec* spec) {
  const cyxla_Api* api = cyxla_api();
  if (api != NULL) api->release_spec(spec);
}

static inline cyxla_Status cyxla_execute(const cyxla_ProgramSpec* spec, const cyxla_Input* inputs,
                                         size_t num_inputs, void* const* outputs,
                                         size_t num_outputs, cyxla_Error* error) {
  const cyxla_Api* api = cyxla_api();
  return api != NULL ? api->execute(spec, inputs, num_inputs, outputs, num_outputs, error)
                     : cyxla_not_imported(error);
}

static inline void* cyxla_aligned_memory(size_t nbytes) {
  const cyxla_Api* api = cyxla_api();
  return api != NULL ? api->aligned_memory(nbytes) : NULL;
}

static inline void cyxla_free_aligned(void* pointer) {
  const cyxla_Api* api = cyxla_api();
  if (api != NULL) api->free_aligned(pointer);
}

static inline cyxla_Status cyxla_execute_batch(const cyxla_ProgramSpec* spec, size_t n,
                                               const cyxla_Input* inputs, size_t num_inputs,
                                               void* const* outputs, size_t num_outputs,
                                               cyxla_Error* error) {
  const cyxla_Api* api = cyxla_api();
  return api != NULL
             ? api->execute_batch(spec, n, inputs, num_inputs, outputs, num_outputs, error)
             : cyxla_not_imported(error);
}

static inline cyxla_Status cyxla_bind(const cyxla_ProgramSpec* spec, const cyxla_Input* inputs,
                                      size_t num_inputs, void* const* outputs,
                                      size_t num_outputs, uint64_t* bound, cyxla_Error* error) {
  const cyxla_Api* api = cyxla_api();
  return api != NULL ? api->bind(spec, inputs, num_inputs, outputs, num_outputs, bound, error)
                     : cyxla_not_imported(error);
}

static inline cyxla_Status cyxla_call_bound(uint64_t bound, cyxla_Error* error) {
  const cyxla_Api* api = cyxla_api();
  return api != NULL ? api->call_bound(bound, error) : cyxla_not_imported(error);
}

static inline cyxla_Status cyxla_unbind(uint64_t bound, cyxla_Error* error) {
  const cyxla_Api* api = cyxla_api();
  return api != NULL ? api->unbind(bound, error) : cyxla_not_imported(error);
}

static inline cyxla_Status cyxla_open_runtime(const cyxla_RuntimeOptions* options,
                                              cyxla_Error* error) {
  const cyxla_Api* api = cyxla_api();
  return api != NULL ? api->open_runtime(options, error) : cyxla_not_imported(error);
}

static inline void cyxla_close_runtime(void) {
  const cyxla_Api* api = cyxla_api();
  if (api != NULL) api->close_runtime();
}

static inline cyxla_Status cyxla_load_program(const char* path, uint64_t* handle,
                                              cyxla_Error* error) {
  const cyxla_Api* api = cyxla_api();
  return api != NULL ? api->load_program(path, handle, error) : cyxla_not_imported(error);
}

static inline void cyxla_release_program(uint64_t handle) {
  const cyxla_Api* api = cyxla_api();
  if (api != NULL) api->release_program(handle);
}

static inline cyxla_Status cyxla_register_ffi_handler(const char* target, void* handler,
                                                      const char* platform, uint32_t traits,
                                                      cyxla_Error* error) {
  const cyxla_Api* api = cyxla_api();
  return api != NULL ? api->register_ffi_handler(target, handler, platform, traits, error)
                     : cyxla_not_imported(error);
}

#endif /* CYXLA_CYXLA_H_ */
