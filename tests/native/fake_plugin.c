/* A fake PJRT plugin whose FFI extension takes one of the layouts of
 * PJRT_FFI_Register_Handler_Args that XLA has shipped, chosen with -DLAYOUT=n:
 *
 *   0  no FFI extension at all
 *   1  struct_size, name, name_size, int api_version, handler, platform, platform_size
 *      (XLA 2025-08; 40 bytes)
 *   2  layout 1, then traits (60 bytes)
 *   3  struct_size, name, name_size, handler, platform, platform_size, traits (52 bytes)
 *   4  a layout cyxla does not know (48 bytes)
 *
 * Like XLA, it checks struct_size first and names the size it expected, then asks the
 * handler for its metadata with an XLA_FFI_Api of version 0.2. It records what it read,
 * and the test reads that back through the fake_* functions. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_c_api.h"
#include "xla/ffi/api/c_api.h"

#ifndef LAYOUT
#error "compile with -DLAYOUT=0..4"
#endif

#if LAYOUT == 1 || LAYOUT == 2
typedef struct Args {
  size_t struct_size;
  const char* target_name;
  size_t target_name_size;
  int api_version;
  void* handler;
  const char* platform_name;
  size_t platform_name_size;
  uint32_t traits; /* read by layout 2 only */
} Args;
#if LAYOUT == 1
#define EXPECTED_SIZE (offsetof(Args, handler) + sizeof(void*))
#else
#define EXPECTED_SIZE (offsetof(Args, traits) + sizeof(uint32_t))
#endif
#else
typedef struct Args {
  size_t struct_size;
  const char* target_name;
  size_t target_name_size;
  void* handler;
  const char* platform_name;
  size_t platform_name_size;
  uint32_t traits;
} Args;
#if LAYOUT == 4
#define EXPECTED_SIZE 48
#else
#define EXPECTED_SIZE (offsetof(Args, traits) + sizeof(uint32_t))
#endif
#endif

/* ------------------------------------------------------------------ PJRT errors */

struct PJRT_Error {
  char message[256];
};

static PJRT_Error* make_error(const char* message) {
  PJRT_Error* error = calloc(1, sizeof(PJRT_Error));
  snprintf(error->message, sizeof(error->message), "%s", message);
  return error;
}

static void error_destroy(PJRT_Error_Destroy_Args* args) { free(args->error); }

static void error_message(PJRT_Error_Message_Args* args) {
  args->message = args->error->message;
  args->message_size = strlen(args->error->message);
}

static PJRT_Error* error_get_code(PJRT_Error_GetCode_Args* args) {
  args->code = PJRT_Error_Code_INVALID_ARGUMENT;
  return NULL;
}

static PJRT_Error* plugin_initialize(PJRT_Plugin_Initialize_Args* args) {
  (void)args;
  return NULL;
}

static PJRT_Error* plugin_attributes(PJRT_Plugin_Attributes_Args* args) {
  args->attributes = NULL;
  args->num_attributes = 0;
  return NULL;
}

/* ------------------------------------------------------------------ XLA FFI, v0.2 */

struct XLA_FFI_Error {
  char message[256];
};

static XLA_FFI_Error* ffi_error_create(XLA_FFI_Error_Create_Args* args) {
  XLA_FFI_Error* error = calloc(1, sizeof(XLA_FFI_Error));
  snprintf(error->message, sizeof(error->message), "%s", args->message);
  return error;
}

/* XLA FFI 0.4 (jaxlib 0.11) replaced XLA_FFI_Error_GetMessage with
 * XLA_FFI_Error_GetDetails, whose arguments add `errc` after `message`. */
#if XLA_FFI_API_MAJOR == 0 && XLA_FFI_API_MINOR <= 3
typedef XLA_FFI_Error_GetMessage_Args ErrorMessageArgs;
#define API_ERROR_MESSAGE XLA_FFI_Error_GetMessage
#else
typedef XLA_FFI_Error_GetDetails_Args ErrorMessageArgs;
#define API_ERROR_MESSAGE XLA_FFI_Error_GetDetails
#endif

static void ffi_error_get_message(ErrorMessageArgs* args) {
  args->message = args->error->message;
}

static void ffi_error_destroy(XLA_FFI_Error_Destroy_Args* args) { free(args->error); }

static XLA_FFI_Api ffi_api;

/* ------------------------------------------------------------------ what was registered */

static char last_target[128];
static char last_platform[32];
static void* last_handler;
static int last_api_version = -1;
static long last_traits = -1;
static int last_handler_minor = -1;
static int registrations;

const char* fake_target(void) { return last_target; }
const char* fake_platform(void) { return last_platform; }
void* fake_handler(void) { return last_handler; }
int fake_api_version(void) { return last_api_version; }
long fake_traits(void) { return last_traits; }
int fake_handler_minor(void) { return last_handler_minor; }
int fake_registrations(void) { return registrations; }

static PJRT_Error* register_handler(PJRT_FFI_Register_Handler_Args* raw) {
  Args* args = (Args*)raw;
  if (args->struct_size < EXPECTED_SIZE) {
    char message[200];
    snprintf(message, sizeof(message),
             "Unexpected PJRT_FFI_Register_Handler_Args size: expected %zu, got %zu.",
             (size_t)EXPECTED_SIZE, args->struct_size);
    return make_error(message);
  }
  /* XLA asks the handler for its metadata, then (silently) keeps or drops it. */
  XLA_FFI_Metadata metadata = {XLA_FFI_Metadata_STRUCT_SIZE,
                               {XLA_FFI_Api_Version_STRUCT_SIZE, NULL, 0, 0}, 0, {0}};
  XLA_FFI_Metadata_Extension extension = {
      {XLA_FFI_Metadata_Extension_STRUCT_SIZE, XLA_FFI_Extension_Metadata, NULL}, &metadata};
  XLA_FFI_CallFrame frame;
  memset(&frame, 0, sizeof(frame));
  frame.struct_size = XLA_FFI_CallFrame_STRUCT_SIZE;
  frame.extension_start = &extension.extension_base;
  frame.api = &ffi_api;
  frame.stage = XLA_FFI_ExecutionStage_EXECUTE;
  frame.args.struct_size = XLA_FFI_Args_STRUCT_SIZE;
  frame.rets.struct_size = XLA_FFI_Rets_STRUCT_SIZE;
  frame.attrs.struct_size = XLA_FFI_Attrs_STRUCT_SIZE;
  XLA_FFI_Error* error = ((XLA_FFI_Handler*)args->handler)(&frame);
  if (error != NULL) {
    free(error);
    return NULL;
  }
  snprintf(last_target, sizeof(last_target), "%.*s", (int)args->target_name_size,
           args->target_name);
  snprintf(last_platform, sizeof(last_platform), "%.*s", (int)args->platform_name_size,
           args->platform_name);
  last_handler = args->handler;
  last_handler_minor = metadata.api_version.minor_version;
#if LAYOUT == 1 || LAYOUT == 2
  last_api_version = args->api_version;
#endif
#if LAYOUT != 1
  last_traits = args->traits;
#endif
  ++registrations;
  return NULL;
}

/* ------------------------------------------------------------------ the tables */

static PJRT_FFI_Extension ffi_extension;
static PJRT_Api api;

const PJRT_Api* GetPjrtApi(void) {
  ffi_api.struct_size = sizeof(ffi_api);
  ffi_api.api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
  ffi_api.api_version.major_version = 0;
  ffi_api.api_version.minor_version = 2;
  ffi_api.XLA_FFI_Error_Create = ffi_error_create;
  ffi_api.API_ERROR_MESSAGE = ffi_error_get_message;
  ffi_api.XLA_FFI_Error_Destroy = ffi_error_destroy;

  ffi_extension.base.struct_size = sizeof(ffi_extension);
  ffi_extension.base.type = PJRT_Extension_Type_FFI;
  ffi_extension.register_handler = register_handler;

  api.struct_size = sizeof(api);
  api.extension_start = LAYOUT == 0 ? NULL : &ffi_extension.base;
  api.pjrt_api_version.struct_size = sizeof(api.pjrt_api_version);
  api.pjrt_api_version.major_version = 0;
  api.pjrt_api_version.minor_version = 114;
  api.PJRT_Error_Destroy = error_destroy;
  api.PJRT_Error_Message = error_message;
  api.PJRT_Error_GetCode = error_get_code;
  api.PJRT_Plugin_Initialize = plugin_initialize;
  api.PJRT_Plugin_Attributes = plugin_attributes;
  return &api;
}
