/* A small PJRT plugin whose behaviour the test scripts through the exported fake_*
 * functions (called with ctypes on the same library): its platform name, its devices,
 * the outputs its "compiled" programs report, and which PJRT function fails next.
 *
 * Its programs copy the bytes of input 0 into every output (zero-filled past its end),
 * so results are known without XLA. Buffers live in malloc'd host memory whatever the
 * platform name says, so a platform other than "cpu" runs cyxla's device path
 * (PJRT_Buffer_ToHostBuffer and its event). Its FFI extension has no register_handler,
 * as in plugins built before XLA added it.
 *
 * Built with -DSCRIPTED_NO_ERROR_SLOTS, its table lacks the PJRT_Error_* functions and its
 * PJRT_Plugin_Initialize fails. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_c_api.h"

/* ------------------------------------------------------------------ the script */

static char failing[128];   /* the PJRT function that fails, "" for none */
static char error_text[1024]; /* its error's message, "" for "scripted failure of ..." */
static int null_fingerprint;
static char platform[32] = "fake";
static size_t device_count = 1;
static PJRT_Buffer_Type out_types[8] = {PJRT_Buffer_Type_F32};
static size_t num_out_types = 1;
static int64_t out_dims[32] = {3};
static size_t out_ranks[8] = {1};
static size_t num_out_shapes = 1;
static char options_seen[512];
static long destroyed_errors;
static long calls_to[64];
static const char* call_names[64];

void fake_fail(const char* function) { snprintf(failing, sizeof failing, "%s", function); }
/* The message of the scripted error from now on: any bytes, as a plugin's may be. */
void fake_error_text(const char* text) { snprintf(error_text, sizeof error_text, "%s", text); }
void fake_null_fingerprint(int on) { null_fingerprint = on; }
void fake_platform(const char* name) { snprintf(platform, sizeof platform, "%s", name); }
void fake_devices(size_t count) { device_count = count; }
const char* fake_options_seen(void) { return options_seen; }
long fake_destroyed_errors(void) { return destroyed_errors; }

/* Outputs of programs compiled from now on: `num_types` types, `num_shapes` shapes of
 * the given ranks, their dims concatenated. */
void fake_outputs(size_t num_types, const int* types, size_t num_shapes, const size_t* ranks,
                  const int64_t* dims) {
  size_t total = 0;
  num_out_types = num_types;
  for (size_t i = 0; i < num_types; ++i) out_types[i] = (PJRT_Buffer_Type)types[i];
  num_out_shapes = num_shapes;
  for (size_t i = 0; i < num_shapes; ++i) total += out_ranks[i] = ranks[i];
  memcpy(out_dims, dims, total * sizeof(int64_t));
}

/* How often `function` was called. */
long fake_calls(const char* function) {
  for (int i = 0; i < 64 && call_names[i] != NULL; ++i) {
    if (strcmp(call_names[i], function) == 0) return calls_to[i];
  }
  return 0;
}

static void count(const char* function) {
  int i = 0;
  while (i < 63 && call_names[i] != NULL && strcmp(call_names[i], function) != 0) ++i;
  call_names[i] = function;
  ++calls_to[i];
}

/* ------------------------------------------------------------------ errors */

struct PJRT_Error {
  char message[1024];
};

/* Counts the call, and returns the scripted error when `function` is the failing one. */
static PJRT_Error* enter(const char* function) {
  count(function);
  if (strcmp(failing, function) != 0) return NULL;
  PJRT_Error* error = calloc(1, sizeof(PJRT_Error));
  if (error_text[0] != '\0') {
    snprintf(error->message, sizeof error->message, "%s", error_text);
  } else {
    snprintf(error->message, sizeof error->message, "scripted failure of %s", function);
  }
  return error;
}

#define ENTER(name)                       \
  do {                                    \
    PJRT_Error* scripted = enter(#name);  \
    if (scripted != NULL) return scripted; \
  } while (0)

static void error_destroy(PJRT_Error_Destroy_Args* args) {
  ++destroyed_errors;
  free(args->error);
}

static void error_message(PJRT_Error_Message_Args* args) {
  args->message = args->error->message;
  args->message_size = strlen(args->error->message);
}

/* ------------------------------------------------------------------ plugin */

static PJRT_Error* plugin_initialize(PJRT_Plugin_Initialize_Args* args) {
  (void)args;
#ifdef SCRIPTED_NO_ERROR_SLOTS
  /* An error that only the absent PJRT_Error_Message could read. */
  return calloc(1, sizeof(PJRT_Error));
#else
  return NULL;
#endif
}

static const int64_t attribute_list[3] = {1, 2, 3};
static PJRT_NamedValue attributes[5];

static PJRT_Error* plugin_attributes(PJRT_Plugin_Attributes_Args* args) {
  static const char* names[5] = {"name", "count", "list", "ratio", "flag"};
  for (int i = 0; i < 5; ++i) {
    attributes[i].struct_size = sizeof(PJRT_NamedValue);
    attributes[i].name = names[i];
    attributes[i].name_size = strlen(names[i]);
    attributes[i].value_size = 1;
  }
  attributes[0].type = PJRT_NamedValue_kString;
  attributes[0].string_value = "scripted";
  attributes[0].value_size = 8;
  attributes[1].type = PJRT_NamedValue_kInt64;
  attributes[1].int64_value = 7;
  attributes[2].type = PJRT_NamedValue_kInt64List;
  attributes[2].int64_array_value = attribute_list;
  attributes[2].value_size = 3;
  attributes[3].type = PJRT_NamedValue_kFloat;
  attributes[3].float_value = 1.5f;
  attributes[4].type = PJRT_NamedValue_kBool;
  attributes[4].bool_value = true;
  args->attributes = attributes;
  args->num_attributes = 5;
  return NULL;
}

/* ------------------------------------------------------------------ events */

struct PJRT_Event {
  int unused;
};

static PJRT_Event* new_event(void) { return calloc(1, sizeof(PJRT_Event)); }

static PJRT_Error* event_destroy(PJRT_Event_Destroy_Args* args) {
  free(args->event);
  return NULL;
}

static PJRT_Error* event_await(PJRT_Event_Await_Args* args) {
  (void)args;
  ENTER(PJRT_Event_Await);
  return NULL;
}

/* ------------------------------------------------------------------ client */

struct PJRT_Client {
  char platform[32];
};
struct PJRT_Device {
  int unused;
};
static PJRT_Device devices[2];
static PJRT_Device* device_list[2] = {&devices[0], &devices[1]};

static PJRT_Error* client_create(PJRT_Client_Create_Args* args) {
  ENTER(PJRT_Client_Create);
  options_seen[0] = '\0';
  for (size_t i = 0; i < args->num_options; ++i) {
    const PJRT_NamedValue* v = &args->create_options[i];
    char one[96];
    switch (v->type) {
      case PJRT_NamedValue_kString:
        snprintf(one, sizeof one, "%.*s=str:%.*s ", (int)v->name_size, v->name,
                 (int)v->value_size, v->string_value);
        break;
      case PJRT_NamedValue_kInt64:
        snprintf(one, sizeof one, "%.*s=int:%lld ", (int)v->name_size, v->name,
                 (long long)v->int64_value);
        break;
      case PJRT_NamedValue_kInt64List:
        snprintf(one, sizeof one, "%.*s=list:%zu:%lld ", (int)v->name_size, v->name,
                 v->value_size, (long long)v->int64_array_value[v->value_size - 1]);
        break;
      case PJRT_NamedValue_kFloat:
        snprintf(one, sizeof one, "%.*s=float:%g ", (int)v->name_size, v->name,
                 (double)v->float_value);
        break;
      default:
        snprintf(one, sizeof one, "%.*s=bool:%d ", (int)v->name_size, v->name, (int)v->bool_value);
        break;
    }
    strncat(options_seen, one, sizeof options_seen - strlen(options_seen) - 1);
  }
  args->client = calloc(1, sizeof(PJRT_Client));
  snprintf(args->client->platform, sizeof args->client->platform, "%s", platform);
  return NULL;
}

static PJRT_Error* client_destroy(PJRT_Client_Destroy_Args* args) {
  count("PJRT_Client_Destroy");
  free(args->client);
  return NULL;
}

static PJRT_Error* client_platform_name(PJRT_Client_PlatformName_Args* args) {
  args->platform_name = args->client->platform;
  args->platform_name_size = strlen(args->client->platform);
  return NULL;
}

static PJRT_Error* client_platform_version(PJRT_Client_PlatformVersion_Args* args) {
  (void)args;
  args->platform_version = "scripted 1.0";
  args->platform_version_size = strlen(args->platform_version);
  return NULL;
}

static PJRT_Error* client_addressable_devices(PJRT_Client_AddressableDevices_Args* args) {
  args->addressable_devices = device_list;
  args->num_addressable_devices = device_count;
  return NULL;
}

/* ------------------------------------------------------------------ executables */

struct PJRT_LoadedExecutable {
  PJRT_Buffer_Type types[8];
  size_t num_types;
  int64_t dims[32];
  size_t ranks[8];
  size_t num_shapes;
  char code[64];
};
struct PJRT_Executable {
  PJRT_LoadedExecutable* loaded;
};

static PJRT_LoadedExecutable* new_loaded(const char* code, size_t code_size) {
  PJRT_LoadedExecutable* e = calloc(1, sizeof(PJRT_LoadedExecutable));
  memcpy(e->types, out_types, sizeof out_types);
  e->num_types = num_out_types;
  memcpy(e->dims, out_dims, sizeof out_dims);
  memcpy(e->ranks, out_ranks, sizeof out_ranks);
  e->num_shapes = num_out_shapes;
  snprintf(e->code, sizeof e->code, "%.*s", (int)code_size, code);
  return e;
}

static PJRT_Error* client_compile(PJRT_Client_Compile_Args* args) {
  ENTER(PJRT_Client_Compile);
  args->executable = new_loaded(args->program->code, args->program->code_size);
  return NULL;
}

static PJRT_Error* loaded_destroy(PJRT_LoadedExecutable_Destroy_Args* args) {
  free(args->executable);
  ENTER(PJRT_LoadedExecutable_Destroy);
  return NULL;
}

static PJRT_Error* loaded_get_executable(PJRT_LoadedExecutable_GetExecutable_Args* args) {
  args->executable = calloc(1, sizeof(PJRT_Executable));
  args->executable->loaded = args->loaded_executable;
  return NULL;
}

static PJRT_Error* executable_destroy(PJRT_Executable_Destroy_Args* args) {
  free(args->executable);
  return NULL;
}

static PJRT_Error* output_types(PJRT_Executable_OutputElementTypes_Args* args) {
  args->output_types = args->executable->loaded->types;
  args->num_output_types = args->executable->loaded->num_types;
  return NULL;
}

static PJRT_Error* output_dimensions(PJRT_Executable_OutputDimensions_Args* args) {
  args->dims = args->executable->loaded->dims;
  args->dim_sizes = args->executable->loaded->ranks;
  args->num_outputs = args->executable->loaded->num_shapes;
  return NULL;
}

static void delete_serialized(PJRT_SerializedExecutable* serialized) { free(serialized); }

static PJRT_Error* executable_serialize(PJRT_Executable_Serialize_Args* args) {
  char* bytes = malloc(80);
  snprintf(bytes, 80, "scripted:%s", args->executable->loaded->code);
  args->serialized_bytes = bytes;
  args->serialized_bytes_size = strlen(bytes);
  args->serialized_executable = (PJRT_SerializedExecutable*)bytes;
  args->serialized_executable_deleter = delete_serialized;
  return NULL;
}

static PJRT_Error* deserialize_and_load(PJRT_Executable_DeserializeAndLoad_Args* args) {
  ENTER(PJRT_Executable_DeserializeAndLoad);
  const size_t prefix = strlen("scripted:");
  args->loaded_executable = new_loaded(args->serialized_executable + prefix,
                                       args->serialized_executable_size - prefix);
  return NULL;
}

static PJRT_Error* executable_fingerprint(PJRT_Executable_Fingerprint_Args* args) {
  args->executable_fingerprint = null_fingerprint ? NULL : args->executable->loaded->code;
  args->executable_fingerprint_size = strlen(args->executable->loaded->code);
  return NULL;
}

/* ------------------------------------------------------------------ buffers */

struct PJRT_Buffer {
  void* data;
  size_t size;
};

static size_t element_bytes(PJRT_Buffer_Type type) {
  switch (type) {
    case PJRT_Buffer_Type_F64: case PJRT_Buffer_Type_S64: return 8;
    case PJRT_Buffer_Type_F32: case PJRT_Buffer_Type_S32: return 4;
    default: return 1;
  }
}

static PJRT_Buffer* new_buffer(const void* data, size_t size) {
  PJRT_Buffer* b = calloc(1, sizeof(PJRT_Buffer));
  b->data = calloc(1, size + 1);
  b->size = size;
  if (data != NULL) memcpy(b->data, data, size);
  return b;
}

static PJRT_Error* buffer_from_host(PJRT_Client_BufferFromHostBuffer_Args* args) {
  ENTER(PJRT_Client_BufferFromHostBuffer);
  size_t size = element_bytes(args->type);
  for (size_t d = 0; d < args->num_dims; ++d) size *= (size_t)args->dims[d];
  args->buffer = new_buffer(args->data, size);
  args->done_with_host_buffer = new_event();
  return NULL;
}

static PJRT_Error* buffer_destroy(PJRT_Buffer_Destroy_Args* args) {
  free(args->buffer->data);
  free(args->buffer);
  return NULL;
}

static PJRT_Error* buffer_to_host(PJRT_Buffer_ToHostBuffer_Args* args) {
  ENTER(PJRT_Buffer_ToHostBuffer);
  memcpy(args->dst, args->src->data, args->dst_size < args->src->size ? args->dst_size
                                                                     : args->src->size);
  args->event = new_event();
  return NULL;
}

static PJRT_Error* buffer_pointer(PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args* args) {
  ENTER(PJRT_Buffer_OpaqueDeviceMemoryDataPointer);
  args->device_memory_ptr = args->buffer->data;
  return NULL;
}

static PJRT_Error* loaded_execute(PJRT_LoadedExecutable_Execute_Args* args) {
  ENTER(PJRT_LoadedExecutable_Execute);
  const PJRT_LoadedExecutable* e = args->executable;
  const PJRT_Buffer* first = args->num_args > 0 ? args->argument_lists[0][0] : NULL;
  const int64_t* dims = e->dims;
  for (size_t j = 0; j < e->num_types; ++j) {
    size_t size = element_bytes(e->types[j]);
    for (size_t d = 0; d < e->ranks[j]; ++d) size *= (size_t)dims[d];
    dims += e->ranks[j];
    PJRT_Buffer* out = new_buffer(NULL, size);
    if (first != NULL) memcpy(out->data, first->data, size < first->size ? size : first->size);
    args->output_lists[0][j] = out;
  }
  if (args->device_complete_events != NULL) args->device_complete_events[0] = new_event();
  return NULL;
}

/* ------------------------------------------------------------------ the table */

static PJRT_FFI_Extension ffi_extension; /* register_handler stays null */
static PJRT_Api api;

const PJRT_Api* GetPjrtApi(void) {
  ffi_extension.base.struct_size = sizeof ffi_extension;
  ffi_extension.base.type = PJRT_Extension_Type_FFI;
  api.struct_size = sizeof api;
  api.extension_start = &ffi_extension.base;
  api.pjrt_api_version.struct_size = sizeof api.pjrt_api_version;
  api.pjrt_api_version.major_version = CYXLA_PJRT_API_MAJOR;
  api.pjrt_api_version.minor_version = CYXLA_PJRT_API_MINOR;
  api.PJRT_Error_Destroy = error_destroy;
  api.PJRT_Error_Message = error_message;
#ifdef SCRIPTED_NO_ERROR_SLOTS /* a table without the error slots */
  api.PJRT_Error_Destroy = NULL;
  api.PJRT_Error_Message = NULL;
#endif
  api.PJRT_Plugin_Initialize = plugin_initialize;
  api.PJRT_Plugin_Attributes = plugin_attributes;
  api.PJRT_Event_Destroy = event_destroy;
  api.PJRT_Event_Await = event_await;
  api.PJRT_Client_Create = client_create;
  api.PJRT_Client_Destroy = client_destroy;
  api.PJRT_Client_PlatformName = client_platform_name;
  api.PJRT_Client_PlatformVersion = client_platform_version;
  api.PJRT_Client_AddressableDevices = client_addressable_devices;
  api.PJRT_Client_Compile = client_compile;
  api.PJRT_Client_BufferFromHostBuffer = buffer_from_host;
  api.PJRT_LoadedExecutable_Destroy = loaded_destroy;
  api.PJRT_LoadedExecutable_GetExecutable = loaded_get_executable;
  api.PJRT_LoadedExecutable_Execute = loaded_execute;
  api.PJRT_Executable_Destroy = executable_destroy;
  api.PJRT_Executable_OutputElementTypes = output_types;
  api.PJRT_Executable_OutputDimensions = output_dimensions;
  api.PJRT_Executable_Serialize = executable_serialize;
  api.PJRT_Executable_DeserializeAndLoad = deserialize_and_load;
  api.PJRT_Executable_Fingerprint = executable_fingerprint;
  api.PJRT_Buffer_Destroy = buffer_destroy;
  api.PJRT_Buffer_ToHostBuffer = buffer_to_host;
  api.PJRT_Buffer_OpaqueDeviceMemoryDataPointer = buffer_pointer;
  return &api;
}
