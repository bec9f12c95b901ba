/* The baseline of benchmarks/standalone.py's memory figure: a process that runs a program
 * file's StableHLO with nothing but the PJRT C API (CPU plugins only), then prints its
 * peak resident set. No checks beyond PJRT's errors: it is a measuring stick.
 *
 *   bare_pjrt PLUGIN PROGRAM_FILE INPUTS_F32      (one f32 input of the file's first shape) */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_c_api.h"

static const PJRT_Api* api;

static void check(PJRT_Error* error, const char* what) {
  if (error == NULL) return;
  PJRT_Error_Message_Args m = {PJRT_Error_Message_Args_STRUCT_SIZE, NULL, error, NULL, 0};
  api->PJRT_Error_Message(&m);
  fprintf(stderr, "%s: %.*s\n", what, (int)m.message_size, m.message);
  exit(1);
}

static char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) exit((fprintf(stderr, "cannot open %s\n", path), 1));
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char* data = malloc(*size);
  if (fread(data, 1, *size, f) != *size) exit((fprintf(stderr, "cannot read %s\n", path), 1));
  fclose(f);
  return data;
}

int main(int argc, char** argv) {
  if (argc != 4) return fprintf(stderr, "usage: bare_pjrt PLUGIN PROGRAM INPUTS\n"), 2;
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) return fprintf(stderr, "%s\n", dlerror()), 1;
  api = ((const PJRT_Api* (*)(void))dlsym(library, "GetPjrtApi"))();
  PJRT_Plugin_Initialize_Args init = {PJRT_Plugin_Initialize_Args_STRUCT_SIZE, NULL};
  check(api->PJRT_Plugin_Initialize(&init), "initialize");
  PJRT_Client_Create_Args create = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE};
  check(api->PJRT_Client_Create(&create), "client");
  PJRT_Client_AddressableDevices_Args devices = {
      .struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE, .client = create.client};
  check(api->PJRT_Client_AddressableDevices(&devices), "devices");

  /* The file's three parts, by the sizes in its header (FORMAT.md). */
  size_t size = 0, input_size = 0;
  char* file = read_file(argv[2], &size);
  uint64_t m, s, c;
  memcpy(&m, file + 16, 8), memcpy(&s, file + 24, 8), memcpy(&c, file + 32, 8);
  PJRT_Program program = {.struct_size = PJRT_Program_STRUCT_SIZE, .code = file + 48 + m,
                          .code_size = s, .format = "mlir", .format_size = 4};
  PJRT_Client_Compile_Args compile = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE,
                                      .client = create.client, .program = &program,
                                      .compile_options = file + 48 + m + s,
                                      .compile_options_size = c};
  check(api->PJRT_Client_Compile(&compile), "compile");

  /* The input: the metadata's first "input F32 [d0,d1]" line. */
  float* input = (float*)read_file(argv[3], &input_size);
  int64_t dims[2] = {0, 0};
  const char* line = strstr(file + 48, "\ninput F32 [");
  if (line == NULL || sscanf(line, "\ninput F32 [%ld,%ld]", &dims[0], &dims[1]) != 2) {
    return fprintf(stderr, "bare_pjrt runs programs of one f32[d0,d1] input\n"), 1;
  }
  PJRT_Client_BufferFromHostBuffer_Args in = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
      .client = create.client, .data = input, .type = PJRT_Buffer_Type_F32, .dims = dims,
      .num_dims = 2, .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableZeroCopy,
      .device = devices.addressable_devices[0]};
  check(api->PJRT_Client_BufferFromHostBuffer(&in), "buffer");

  PJRT_ExecuteOptions options = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
  PJRT_Buffer* const* arguments = &in.buffer;
  PJRT_Buffer* result = NULL;
  PJRT_Buffer** results = &result;
  PJRT_Event* done = NULL;
  PJRT_LoadedExecutable_Execute_Args execute = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
      .executable = compile.executable, .options = &options, .argument_lists = &arguments,
      .num_devices = 1, .num_args = 1, .output_lists = &results, .device_complete_events = &done};
  check(api->PJRT_LoadedExecutable_Execute(&execute), "execute");
  PJRT_Event_Await_Args await = {PJRT_Event_Await_Args_STRUCT_SIZE, NULL, done};
  check(api->PJRT_Event_Await(&await), "await");
  PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args out = {
      PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args_STRUCT_SIZE, NULL, result, NULL};
  check(api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&out), "output");
  printf("first_output %g\n", (double)((const float*)out.device_memory_ptr)[0]);

  char status_line[256];
  FILE* status = fopen("/proc/self/status", "r");
  while (status != NULL && fgets(status_line, sizeof status_line, status) != NULL) {
    if (strncmp(status_line, "VmHWM:", 6) == 0) printf("peak_rss_kib %ld\n", atol(status_line + 6));
  }
  return 0;
}
