/* The part of the PJRT C API that cyxla calls, declared by this project. Private: it is
 * not installed, so that a downstream file may include XLA's own pjrt_c_api.h next to
 * cyxla.h (the element types, the one piece the public headers need, live in
 * cyxla/element_type.h and are included from there).
 *
 * Follows PJRT C API version 0.114 (XLA, 2026-09): struct layouts and the order of the
 * PJRT_Api function table match that version. Structs are only ever extended at the
 * end, so a plugin of a newer minor version reads these structs as a prefix of its
 * own, and cyxla checks `PJRT_Api.struct_size` before it calls a slot that an older
 * plugin may lack. tests/test_pjrt_layout.py proves these layouts against the plugin.
 *
 * Slots this project does not call keep their place in PJRT_Api with a placeholder
 * type (CYXLA_PJRT_UNUSED), so the offsets of the slots it does call stay right.
 */
#ifndef CYXLA_SRC_PJRT_PJRT_C_API_H_
#define CYXLA_SRC_PJRT_PJRT_C_API_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cyxla/element_type.h" /* PJRT_Buffer_Type */

#ifdef __cplusplus
extern "C" {
#endif

#define CYXLA_PJRT_API_MAJOR 0
#define CYXLA_PJRT_API_MINOR 114

/* ------------------------------------------------------------------ basics */

/* X_STRUCT_SIZE, the size a caller puts in `struct_size`: the bytes up to the end of the
 * struct's last field, as XLA's header counts them (not sizeof, which adds tail padding
 * that a plugin of the same version does not expect). C++ also gets
 * cyxla_pjrt_struct_size(const X*), so that templates can find the size of their X. */
#define CYXLA_PJRT_STRUCT_SIZE_OF(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type*)0)->last_field))
#ifdef __cplusplus
#define CYXLA_PJRT_STRUCT_SIZE(type, last_field)                                        \
  enum { type##_STRUCT_SIZE = CYXLA_PJRT_STRUCT_SIZE_OF(type, last_field) };            \
  extern "C++" constexpr size_t cyxla_pjrt_struct_size(const type*) noexcept {          \
    return type##_STRUCT_SIZE;                                                         \
  }
#else
#define CYXLA_PJRT_STRUCT_SIZE(type, last_field) \
  enum { type##_STRUCT_SIZE = CYXLA_PJRT_STRUCT_SIZE_OF(type, last_field) };
#endif

typedef enum {
  PJRT_Extension_Type_Gpu_Custom_Call = 0,
  PJRT_Extension_Type_Profiler,
  PJRT_Extension_Type_Custom_Partitioner,
  PJRT_Extension_Type_Stream,
  PJRT_Extension_Type_Layouts,
  PJRT_Extension_Type_FFI,
  PJRT_Extension_Type_MemoryDescriptions,
  PJRT_Extension_Type_Triton,
  PJRT_Extension_Type_RawBuffer,
  PJRT_Extension_Type_PhaseCompile,
  PJRT_Extension_Type_Example,
  PJRT_Extension_Type_Unknown,
  PJRT_Extension_Type_CrossHostTransfers,
  PJRT_Extension_Type_ExecutableMetadata,
  PJRT_Extension_Type_Callback,
  PJRT_Extension_Type_HostAllocator,
  PJRT_Extension_Type_TpuTopology,
  PJRT_Extension_Type_TpuExecutable,
  PJRT_Extension_Type_Megascale,
  PJRT_Extension_Type_Shardings,
  PJRT_Extension_Type_AbiVersion,
  PJRT_Extension_Type_Collectives,
  PJRT_Extension_Type_MultiSlice,
  PJRT_Extension_Type_HostMemoryAllocator,
  PJRT_Extension_Type_XlaTransform,
} PJRT_Extension_Type;

/* Every extension starts with this header; they form a list from PJRT_Api.extension_start. */
typedef struct PJRT_Extension_Base {
  size_t struct_size;
  PJRT_Extension_Type type;
  struct PJRT_Extension_Base* next;
} PJRT_Extension_Base;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Extension_Base, next)

typedef struct PJRT_Api_Version {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  int major_version;  /* out */
  int minor_version;  /* out */
} PJRT_Api_Version;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Api_Version, minor_version)

typedef struct PJRT_Error PJRT_Error;
typedef struct PJRT_Event PJRT_Event;
typedef struct PJRT_Client PJRT_Client;
typedef struct PJRT_Device PJRT_Device;
typedef struct PJRT_Memory PJRT_Memory;
typedef struct PJRT_DeviceDescription PJRT_DeviceDescription;
typedef struct PJRT_Executable PJRT_Executable;
typedef struct PJRT_LoadedExecutable PJRT_LoadedExecutable;
typedef struct PJRT_Buffer PJRT_Buffer;
typedef struct PJRT_SerializedExecutable PJRT_SerializedExecutable;
typedef struct PJRT_ExecuteContext PJRT_ExecuteContext;


typedef enum {
  PJRT_Error_Code_CANCELLED = 1,
  PJRT_Error_Code_UNKNOWN = 2,
  PJRT_Error_Code_INVALID_ARGUMENT = 3,
  PJRT_Error_Code_DEADLINE_EXCEEDED = 4,
  PJRT_Error_Code_NOT_FOUND = 5,
  PJRT_Error_Code_ALREADY_EXISTS = 6,
  PJRT_Error_Code_PERMISSION_DENIED = 7,
  PJRT_Error_Code_RESOURCE_EXHAUSTED = 8,
  PJRT_Error_Code_FAILED_PRECONDITION = 9,
  PJRT_Error_Code_ABORTED = 10,
  PJRT_Error_Code_OUT_OF_RANGE = 11,
  PJRT_Error_Code_UNIMPLEMENTED = 12,
  PJRT_Error_Code_INTERNAL = 13,
  PJRT_Error_Code_UNAVAILABLE = 14,
  PJRT_Error_Code_DATA_LOSS = 15,
  PJRT_Error_Code_UNAUTHENTICATED = 16,
} PJRT_Error_Code;

typedef enum {
  PJRT_NamedValue_kString = 0,
  PJRT_NamedValue_kInt64,
  PJRT_NamedValue_kInt64List,
  PJRT_NamedValue_kFloat,
  PJRT_NamedValue_kBool,
} PJRT_NamedValue_Type;

typedef struct PJRT_NamedValue {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const char* name;
  size_t name_size;
  PJRT_NamedValue_Type type;
  union {
    const char* string_value;
    int64_t int64_value;
    const int64_t* int64_array_value;
    float float_value;
    bool bool_value;
  };
  size_t value_size; /* elements of a list or string, 1 for a scalar */
} PJRT_NamedValue;
CYXLA_PJRT_STRUCT_SIZE(PJRT_NamedValue, value_size)

typedef enum {
  PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
  PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
  PJRT_HostBufferSemantics_kImmutableZeroCopy,
  PJRT_HostBufferSemantics_kMutableZeroCopy,
} PJRT_HostBufferSemantics;

/* ------------------------------------------------------- argument structs */

typedef struct PJRT_Error_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Error* error;
} PJRT_Error_Destroy_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Error_Destroy_Args, error)

typedef struct PJRT_Error_Message_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Error* error;
  const char* message;  /* out, lives as long as `error` */
  size_t message_size;  /* out */
} PJRT_Error_Message_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Error_Message_Args, message_size)

typedef struct PJRT_Error_GetCode_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Error* error;
  PJRT_Error_Code code;  /* out */
} PJRT_Error_GetCode_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Error_GetCode_Args, code)

typedef struct PJRT_Plugin_Initialize_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
} PJRT_Plugin_Initialize_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Plugin_Initialize_Args, extension_start)

typedef struct PJRT_Plugin_Attributes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_NamedValue* attributes;  /* out, lives as long as the process */
  size_t num_attributes;              /* out */
} PJRT_Plugin_Attributes_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Plugin_Attributes_Args, num_attributes)

typedef struct PJRT_Event_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
} PJRT_Event_Destroy_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Event_Destroy_Args, event)

typedef struct PJRT_Event_Await_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
} PJRT_Event_Await_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Event_Await_Args, event)

typedef struct PJRT_Client_Create_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_NamedValue* create_options;
  size_t num_options;
  void* kv_get_callback;  /* multi-process key-value store: unused by cyxla */
  void* kv_get_user_arg;
  void* kv_put_callback;
  void* kv_put_user_arg;
  PJRT_Client* client;  /* out */
  void* kv_try_get_callback;
  void* kv_try_get_user_arg;
} PJRT_Client_Create_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Client_Create_Args, kv_try_get_user_arg)

typedef struct PJRT_Client_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
} PJRT_Client_Destroy_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Client_Destroy_Args, client)

typedef struct PJRT_Client_PlatformName_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* platform_name;  /* out, owned by the client */
  size_t platform_name_size;  /* out */
} PJRT_Client_PlatformName_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Client_PlatformName_Args, platform_name_size)

typedef struct PJRT_Client_PlatformVersion_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* platform_version;  /* out, owned by the client */
  size_t platform_version_size;  /* out */
} PJRT_Client_PlatformVersion_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Client_PlatformVersion_Args, platform_version_size)

typedef struct PJRT_Client_AddressableDevices_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Device* const* addressable_devices;  /* out, owned by the client */
  size_t num_addressable_devices;           /* out */
} PJRT_Client_AddressableDevices_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Client_AddressableDevices_Args, num_addressable_devices)

typedef struct PJRT_Program {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  char* code;
  size_t code_size;
  const char* format;  /* "mlir" for StableHLO bytecode or text */
  size_t format_size;
} PJRT_Program;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Program, format_size)

typedef struct PJRT_Client_Compile_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const PJRT_Program* program;
  const char* compile_options;  /* serialized xla.CompileOptionsProto */
  size_t compile_options_size;
  PJRT_LoadedExecutable* executable;  /* out */
} PJRT_Client_Compile_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Client_Compile_Args, executable)

typedef struct PJRT_Buffer_MemoryLayout PJRT_Buffer_MemoryLayout;

typedef struct PJRT_Client_BufferFromHostBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const void* data;
  PJRT_Buffer_Type type;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides;  /* null: dense row-major */
  size_t num_byte_strides;
  PJRT_HostBufferSemantics host_buffer_semantics;
  PJRT_Device* device;
  PJRT_Memory* memory;                     /* null: the device's default memory */
  PJRT_Buffer_MemoryLayout* device_layout; /* null: the default layout */
  PJRT_Event* done_with_host_buffer;       /* out, the caller destroys it */
  PJRT_Buffer* buffer;                     /* out */
} PJRT_Client_BufferFromHostBuffer_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Client_BufferFromHostBuffer_Args, buffer)

typedef struct PJRT_Device_GetDescription_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  PJRT_DeviceDescription* device_description;  /* out */
} PJRT_Device_GetDescription_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Device_GetDescription_Args, device_description)

typedef struct PJRT_DeviceDescription_Kind_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  const char* device_kind;  /* out */
  size_t device_kind_size;  /* out */
} PJRT_DeviceDescription_Kind_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_Kind_Args, device_kind_size)

typedef struct PJRT_Executable_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
} PJRT_Executable_Destroy_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Executable_Destroy_Args, executable)

typedef struct PJRT_Executable_NumOutputs_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_outputs;  /* out */
} PJRT_Executable_NumOutputs_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Executable_NumOutputs_Args, num_outputs)

typedef struct PJRT_Executable_Serialize_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Executable* executable;
  const char* serialized_bytes;                       /* out, backed by serialized_executable */
  size_t serialized_bytes_size;                       /* out */
  PJRT_SerializedExecutable* serialized_executable;   /* out */
  void (*serialized_executable_deleter)(PJRT_SerializedExecutable*); /* out */
} PJRT_Executable_Serialize_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Executable_Serialize_Args, serialized_executable_deleter)

typedef struct PJRT_Executable_OutputElementTypes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  const PJRT_Buffer_Type* output_types;  /* out, owned by the executable */
  size_t num_output_types;               /* out */
} PJRT_Executable_OutputElementTypes_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Executable_OutputElementTypes_Args, num_output_types)

typedef struct PJRT_Executable_OutputDimensions_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_outputs;       /* out */
  const int64_t* dims;      /* out, all outputs' dimensions, concatenated */
  const size_t* dim_sizes;  /* out, the rank of each output */
} PJRT_Executable_OutputDimensions_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Executable_OutputDimensions_Args, dim_sizes)

typedef struct PJRT_Executable_Fingerprint_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  const char* executable_fingerprint;  /* out, owned by the executable */
  size_t executable_fingerprint_size;  /* out */
} PJRT_Executable_Fingerprint_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Executable_Fingerprint_Args, executable_fingerprint_size)

/* Called twice: with program->code NULL the plugin sets code_size (and format), then
   with code pointing at code_size bytes of the caller's it fills them. */
typedef struct PJRT_Executable_OptimizedProgram_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  PJRT_Program* program; /* in and out: the caller's, filled by the plugin */
} PJRT_Executable_OptimizedProgram_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Executable_OptimizedProgram_Args, program)

typedef struct PJRT_Executable_ParameterMemoryKinds_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_parameters;            /* out */
  const char* const* memory_kinds;  /* out, owned by the executable */
  const size_t* memory_kind_sizes;  /* out, owned by the executable */
} PJRT_Executable_ParameterMemoryKinds_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Executable_ParameterMemoryKinds_Args, memory_kind_sizes)

typedef struct PJRT_LoadedExecutable_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
} PJRT_LoadedExecutable_Destroy_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_Destroy_Args, executable)

typedef struct PJRT_LoadedExecutable_GetExecutable_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* loaded_executable;
  PJRT_Executable* executable;  /* out, the caller destroys it */
} PJRT_LoadedExecutable_GetExecutable_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_GetExecutable_Args, executable)

typedef struct PJRT_ExecuteOptions {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  void* send_callbacks;  /* host send/receive callbacks: unused by cyxla */
  void* recv_callbacks;
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id;
  const int64_t* non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  PJRT_ExecuteContext* context;
  const char* call_location;
  size_t num_tasks;
  int* task_ids;
  int64_t* incarnation_ids;
  void* multi_slice_config;
  bool use_major_to_minor_data_layout_for_callbacks;
  void* hlo_output_callbacks;
  size_t num_hlo_output_callbacks;
} PJRT_ExecuteOptions;
CYXLA_PJRT_STRUCT_SIZE(PJRT_ExecuteOptions, num_hlo_output_callbacks)

typedef struct PJRT_LoadedExecutable_Execute_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
  PJRT_ExecuteOptions* options;
  PJRT_Buffer* const* const* argument_lists;  /* [num_devices][num_args] */
  size_t num_devices;
  size_t num_args;
  PJRT_Buffer** const* output_lists;          /* [num_devices][num_outputs], filled */
  PJRT_Event** device_complete_events;        /* [num_devices], filled; may be null */
  PJRT_Device* execute_device;                /* null: the compiled device assignment */
} PJRT_LoadedExecutable_Execute_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_Execute_Args, execute_device)

typedef struct PJRT_Executable_DeserializeAndLoad_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* serialized_executable;
  size_t serialized_executable_size;
  PJRT_LoadedExecutable* loaded_executable;  /* out */
  const char* overridden_serialized_compile_options;
  size_t overridden_serialized_compile_options_size;
  void* load_options;
} PJRT_Executable_DeserializeAndLoad_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Executable_DeserializeAndLoad_Args, load_options)

typedef struct PJRT_Buffer_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
} PJRT_Buffer_Destroy_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Buffer_Destroy_Args, buffer)

typedef struct PJRT_Buffer_ElementType_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Buffer_Type type;  /* out */
} PJRT_Buffer_ElementType_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Buffer_ElementType_Args, type)

typedef struct PJRT_Buffer_Dimensions_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  const int64_t* dims;  /* out, owned by the buffer */
  size_t num_dims;      /* out */
} PJRT_Buffer_Dimensions_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Buffer_Dimensions_Args, num_dims)

typedef struct PJRT_Buffer_ToHostBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* src;
  PJRT_Buffer_MemoryLayout* host_layout;  /* null: dense row-major */
  void* dst;        /* null: only report dst_size */
  size_t dst_size;  /* in/out */
  PJRT_Event* event;  /* out, the caller destroys it */
} PJRT_Buffer_ToHostBuffer_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Buffer_ToHostBuffer_Args, event)

typedef struct PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  void* device_memory_ptr;  /* out, valid while the buffer lives and is not donated */
} PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args, device_memory_ptr)

/* ------------------------------------------------------------ functions */

#define CYXLA_PJRT_FUNCTION(name) typedef PJRT_Error* name(name##_Args* args);
typedef void PJRT_Error_Destroy(PJRT_Error_Destroy_Args* args);
typedef void PJRT_Error_Message(PJRT_Error_Message_Args* args);
CYXLA_PJRT_FUNCTION(PJRT_Error_GetCode)
CYXLA_PJRT_FUNCTION(PJRT_Plugin_Initialize)
CYXLA_PJRT_FUNCTION(PJRT_Plugin_Attributes)
CYXLA_PJRT_FUNCTION(PJRT_Event_Destroy)
CYXLA_PJRT_FUNCTION(PJRT_Event_Await)
CYXLA_PJRT_FUNCTION(PJRT_Client_Create)
CYXLA_PJRT_FUNCTION(PJRT_Client_Destroy)
CYXLA_PJRT_FUNCTION(PJRT_Client_PlatformName)
CYXLA_PJRT_FUNCTION(PJRT_Client_PlatformVersion)
CYXLA_PJRT_FUNCTION(PJRT_Client_AddressableDevices)
CYXLA_PJRT_FUNCTION(PJRT_Client_Compile)
CYXLA_PJRT_FUNCTION(PJRT_Client_BufferFromHostBuffer)
CYXLA_PJRT_FUNCTION(PJRT_Device_GetDescription)
CYXLA_PJRT_FUNCTION(PJRT_DeviceDescription_Kind)
CYXLA_PJRT_FUNCTION(PJRT_Executable_Destroy)
CYXLA_PJRT_FUNCTION(PJRT_Executable_NumOutputs)
CYXLA_PJRT_FUNCTION(PJRT_Executable_Serialize)
CYXLA_PJRT_FUNCTION(PJRT_Executable_OutputElementTypes)
CYXLA_PJRT_FUNCTION(PJRT_Executable_OutputDimensions)
CYXLA_PJRT_FUNCTION(PJRT_Executable_Fingerprint)
CYXLA_PJRT_FUNCTION(PJRT_Executable_OptimizedProgram)
CYXLA_PJRT_FUNCTION(PJRT_Executable_ParameterMemoryKinds)
CYXLA_PJRT_FUNCTION(PJRT_LoadedExecutable_Destroy)
CYXLA_PJRT_FUNCTION(PJRT_LoadedExecutable_GetExecutable)
CYXLA_PJRT_FUNCTION(PJRT_LoadedExecutable_Execute)
CYXLA_PJRT_FUNCTION(PJRT_Executable_DeserializeAndLoad)
CYXLA_PJRT_FUNCTION(PJRT_Buffer_Destroy)
CYXLA_PJRT_FUNCTION(PJRT_Buffer_ElementType)
CYXLA_PJRT_FUNCTION(PJRT_Buffer_Dimensions)
CYXLA_PJRT_FUNCTION(PJRT_Buffer_ToHostBuffer)
CYXLA_PJRT_FUNCTION(PJRT_Buffer_OpaqueDeviceMemoryDataPointer)
#undef CYXLA_PJRT_FUNCTION

/* Placeholders for the slots cyxla never calls. */
#define CYXLA_PJRT_UNUSED(name) typedef void name(void);
CYXLA_PJRT_UNUSED(PJRT_Event_IsReady)
CYXLA_PJRT_UNUSED(PJRT_Event_Error)
CYXLA_PJRT_UNUSED(PJRT_Event_OnReady)
CYXLA_PJRT_UNUSED(PJRT_Client_ProcessIndex)
CYXLA_PJRT_UNUSED(PJRT_Client_Devices)
CYXLA_PJRT_UNUSED(PJRT_Client_LookupDevice)
CYXLA_PJRT_UNUSED(PJRT_Client_LookupAddressableDevice)
CYXLA_PJRT_UNUSED(PJRT_Client_AddressableMemories)
CYXLA_PJRT_UNUSED(PJRT_Client_DefaultDeviceAssignment)
CYXLA_PJRT_UNUSED(PJRT_DeviceDescription_Id)
CYXLA_PJRT_UNUSED(PJRT_DeviceDescription_ProcessIndex)
CYXLA_PJRT_UNUSED(PJRT_DeviceDescription_Attributes)
CYXLA_PJRT_UNUSED(PJRT_DeviceDescription_DebugString)
CYXLA_PJRT_UNUSED(PJRT_DeviceDescription_ToString)
CYXLA_PJRT_UNUSED(PJRT_Device_IsAddressable)
CYXLA_PJRT_UNUSED(PJRT_Device_LocalHardwareId)
CYXLA_PJRT_UNUSED(PJRT_Device_AddressableMemories)
CYXLA_PJRT_UNUSED(PJRT_Device_DefaultMemory)
CYXLA_PJRT_UNUSED(PJRT_Device_MemoryStats)
CYXLA_PJRT_UNUSED(PJRT_Memory_Id)
CYXLA_PJRT_UNUSED(PJRT_Memory_Kind)
CYXLA_PJRT_UNUSED(PJRT_Memory_DebugString)
CYXLA_PJRT_UNUSED(PJRT_Memory_ToString)
CYXLA_PJRT_UNUSED(PJRT_Memory_AddressableByDevices)
CYXLA_PJRT_UNUSED(PJRT_Executable_Name)
CYXLA_PJRT_UNUSED(PJRT_Executable_NumReplicas)
CYXLA_PJRT_UNUSED(PJRT_Executable_NumPartitions)
CYXLA_PJRT_UNUSED(PJRT_Executable_SizeOfGeneratedCodeInBytes)
CYXLA_PJRT_UNUSED(PJRT_Executable_GetCostAnalysis)
CYXLA_PJRT_UNUSED(PJRT_Executable_OutputMemoryKinds)
CYXLA_PJRT_UNUSED(PJRT_LoadedExecutable_AddressableDevices)
CYXLA_PJRT_UNUSED(PJRT_LoadedExecutable_Delete)
CYXLA_PJRT_UNUSED(PJRT_LoadedExecutable_IsDeleted)
CYXLA_PJRT_UNUSED(PJRT_LoadedExecutable_Fingerprint)
CYXLA_PJRT_UNUSED(PJRT_Buffer_UnpaddedDimensions)
CYXLA_PJRT_UNUSED(PJRT_Buffer_DynamicDimensionIndices)
CYXLA_PJRT_UNUSED(PJRT_Buffer_GetMemoryLayout)
CYXLA_PJRT_UNUSED(PJRT_Buffer_OnDeviceSizeInBytes)
CYXLA_PJRT_UNUSED(PJRT_Buffer_Device)
CYXLA_PJRT_UNUSED(PJRT_Buffer_Memory)
CYXLA_PJRT_UNUSED(PJRT_Buffer_Delete)
CYXLA_PJRT_UNUSED(PJRT_Buffer_IsDeleted)
CYXLA_PJRT_UNUSED(PJRT_Buffer_CopyToDevice)
CYXLA_PJRT_UNUSED(PJRT_Buffer_IsOnCpu)
CYXLA_PJRT_UNUSED(PJRT_Buffer_ReadyEvent)
CYXLA_PJRT_UNUSED(PJRT_Buffer_UnsafePointer)
CYXLA_PJRT_UNUSED(PJRT_Buffer_IncreaseExternalReferenceCount)
CYXLA_PJRT_UNUSED(PJRT_Buffer_DecreaseExternalReferenceCount)
CYXLA_PJRT_UNUSED(PJRT_CopyToDeviceStream_Destroy)
CYXLA_PJRT_UNUSED(PJRT_CopyToDeviceStream_AddChunk)
CYXLA_PJRT_UNUSED(PJRT_CopyToDeviceStream_TotalBytes)
CYXLA_PJRT_UNUSED(PJRT_CopyToDeviceStream_GranuleSize)
CYXLA_PJRT_UNUSED(PJRT_CopyToDeviceStream_CurrentBytes)
CYXLA_PJRT_UNUSED(PJRT_TopologyDescription_Create)
CYXLA_PJRT_UNUSED(PJRT_TopologyDescription_Destroy)
CYXLA_PJRT_UNUSED(PJRT_TopologyDescription_PlatformName)
CYXLA_PJRT_UNUSED(PJRT_TopologyDescription_PlatformVersion)
CYXLA_PJRT_UNUSED(PJRT_TopologyDescription_GetDeviceDescriptions)
CYXLA_PJRT_UNUSED(PJRT_TopologyDescription_Serialize)
CYXLA_PJRT_UNUSED(PJRT_TopologyDescription_Attributes)
CYXLA_PJRT_UNUSED(PJRT_Compile)
CYXLA_PJRT_UNUSED(PJRT_Buffer_CopyToMemory)
CYXLA_PJRT_UNUSED(PJRT_Client_CreateViewOfDeviceBuffer)
CYXLA_PJRT_UNUSED(PJRT_Client_TopologyDescription)
CYXLA_PJRT_UNUSED(PJRT_Executable_GetCompiledMemoryStats)
CYXLA_PJRT_UNUSED(PJRT_Memory_Kind_Id)
CYXLA_PJRT_UNUSED(PJRT_ExecuteContext_Create)
CYXLA_PJRT_UNUSED(PJRT_ExecuteContext_Destroy)
CYXLA_PJRT_UNUSED(PJRT_Buffer_CopyRawToHost)
CYXLA_PJRT_UNUSED(PJRT_AsyncHostToDeviceTransferManager_Destroy)
CYXLA_PJRT_UNUSED(PJRT_AsyncHostToDeviceTransferManager_TransferData)
CYXLA_PJRT_UNUSED(PJRT_Client_CreateBuffersForAsyncHostToDevice)
CYXLA_PJRT_UNUSED(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer)
CYXLA_PJRT_UNUSED(PJRT_AsyncHostToDeviceTransferManager_Device)
CYXLA_PJRT_UNUSED(PJRT_AsyncHostToDeviceTransferManager_BufferCount)
CYXLA_PJRT_UNUSED(PJRT_AsyncHostToDeviceTransferManager_BufferSize)
CYXLA_PJRT_UNUSED(PJRT_AsyncHostToDeviceTransferManager_SetBufferError)
CYXLA_PJRT_UNUSED(PJRT_AsyncHostToDeviceTransferManager_AddMetadata)
CYXLA_PJRT_UNUSED(PJRT_Client_DmaMap)
CYXLA_PJRT_UNUSED(PJRT_Client_DmaUnmap)
CYXLA_PJRT_UNUSED(PJRT_Client_CreateUninitializedBuffer)
CYXLA_PJRT_UNUSED(PJRT_Client_UpdateGlobalProcessInfo)
CYXLA_PJRT_UNUSED(PJRT_TopologyDescription_Deserialize)
CYXLA_PJRT_UNUSED(PJRT_Client_CreateAliasBuffer)
CYXLA_PJRT_UNUSED(PJRT_Client_FulfillAliasBuffer)
CYXLA_PJRT_UNUSED(PJRT_LoadedExecutable_GetDeviceAssignment)
CYXLA_PJRT_UNUSED(PJRT_Client_CreateErrorBuffer)
CYXLA_PJRT_UNUSED(PJRT_AsyncHostToDeviceTransferManager_TransferLiteral)
CYXLA_PJRT_UNUSED(PJRT_Buffer_CopyRawToHostFuture)
CYXLA_PJRT_UNUSED(PJRT_Device_PoisonExecution)
CYXLA_PJRT_UNUSED(PJRT_Device_CreateAsyncTrackingEvent)
CYXLA_PJRT_UNUSED(PJRT_AsyncTrackingEvent_Destroy)
CYXLA_PJRT_UNUSED(PJRT_Executable_GetCompileOptions)
CYXLA_PJRT_UNUSED(PJRT_Buffer_DonateWithControlDependency)
CYXLA_PJRT_UNUSED(PJRT_Event_Create)
CYXLA_PJRT_UNUSED(PJRT_Event_Set)
CYXLA_PJRT_UNUSED(PJRT_Device_GetAttributes)
CYXLA_PJRT_UNUSED(PJRT_Client_Load)
CYXLA_PJRT_UNUSED(PJRT_LoadedExecutable_AddressableDeviceLogicalIds)
CYXLA_PJRT_UNUSED(PJRT_Buffer_Bitcast)
CYXLA_PJRT_UNUSED(PJRT_Error_ForEachPayload)
CYXLA_PJRT_UNUSED(PJRT_TopologyDescription_Fingerprint)
CYXLA_PJRT_UNUSED(PJRT_Device_ClearMemoryStats)
CYXLA_PJRT_UNUSED(PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace)
CYXLA_PJRT_UNUSED(PJRT_TopologyDescription_GetMemorySpaceKindIds)
#undef CYXLA_PJRT_UNUSED

/* ------------------------------------------------------- the function table */

/* In C++ the type is named from the global scope: a member may not reuse a name that
 * the class already used unqualified. */
#ifdef __cplusplus
#define CYXLA_PJRT_SLOT(name) ::name* name;
#else
#define CYXLA_PJRT_SLOT(name) name* name;
#endif
typedef struct PJRT_Api {
  size_t struct_size;  /* the plugin's own size: slots past it do not exist */
  PJRT_Extension_Base* extension_start;
  PJRT_Api_Version pjrt_api_version;
  CYXLA_PJRT_SLOT(PJRT_Error_Destroy)
  CYXLA_PJRT_SLOT(PJRT_Error_Message)
  CYXLA_PJRT_SLOT(PJRT_Error_GetCode)
  CYXLA_PJRT_SLOT(PJRT_Plugin_Initialize)
  CYXLA_PJRT_SLOT(PJRT_Plugin_Attributes)
  CYXLA_PJRT_SLOT(PJRT_Event_Destroy)
  CYXLA_PJRT_SLOT(PJRT_Event_IsReady)
  CYXLA_PJRT_SLOT(PJRT_Event_Error)
  CYXLA_PJRT_SLOT(PJRT_Event_Await)
  CYXLA_PJRT_SLOT(PJRT_Event_OnReady)
  CYXLA_PJRT_SLOT(PJRT_Client_Create)
  CYXLA_PJRT_SLOT(PJRT_Client_Destroy)
  CYXLA_PJRT_SLOT(PJRT_Client_PlatformName)
  CYXLA_PJRT_SLOT(PJRT_Client_ProcessIndex)
  CYXLA_PJRT_SLOT(PJRT_Client_PlatformVersion)
  CYXLA_PJRT_SLOT(PJRT_Client_Devices)
  CYXLA_PJRT_SLOT(PJRT_Client_AddressableDevices)
  CYXLA_PJRT_SLOT(PJRT_Client_LookupDevice)
  CYXLA_PJRT_SLOT(PJRT_Client_LookupAddressableDevice)
  CYXLA_PJRT_SLOT(PJRT_Client_AddressableMemories)
  CYXLA_PJRT_SLOT(PJRT_Client_Compile)
  CYXLA_PJRT_SLOT(PJRT_Client_DefaultDeviceAssignment)
  CYXLA_PJRT_SLOT(PJRT_Client_BufferFromHostBuffer)
  CYXLA_PJRT_SLOT(PJRT_DeviceDescription_Id)
  CYXLA_PJRT_SLOT(PJRT_DeviceDescription_ProcessIndex)
  CYXLA_PJRT_SLOT(PJRT_DeviceDescription_Attributes)
  CYXLA_PJRT_SLOT(PJRT_DeviceDescription_Kind)
  CYXLA_PJRT_SLOT(PJRT_DeviceDescription_DebugString)
  CYXLA_PJRT_SLOT(PJRT_DeviceDescription_ToString)
  CYXLA_PJRT_SLOT(PJRT_Device_GetDescription)
  CYXLA_PJRT_SLOT(PJRT_Device_IsAddressable)
  CYXLA_PJRT_SLOT(PJRT_Device_LocalHardwareId)
  CYXLA_PJRT_SLOT(PJRT_Device_AddressableMemories)
  CYXLA_PJRT_SLOT(PJRT_Device_DefaultMemory)
  CYXLA_PJRT_SLOT(PJRT_Device_MemoryStats)
  CYXLA_PJRT_SLOT(PJRT_Memory_Id)
  CYXLA_PJRT_SLOT(PJRT_Memory_Kind)
  CYXLA_PJRT_SLOT(PJRT_Memory_DebugString)
  CYXLA_PJRT_SLOT(PJRT_Memory_ToString)
  CYXLA_PJRT_SLOT(PJRT_Memory_AddressableByDevices)
  CYXLA_PJRT_SLOT(PJRT_Executable_Destroy)
  CYXLA_PJRT_SLOT(PJRT_Executable_Name)
  CYXLA_PJRT_SLOT(PJRT_Executable_NumReplicas)
  CYXLA_PJRT_SLOT(PJRT_Executable_NumPartitions)
  CYXLA_PJRT_SLOT(PJRT_Executable_NumOutputs)
  CYXLA_PJRT_SLOT(PJRT_Executable_SizeOfGeneratedCodeInBytes)
  CYXLA_PJRT_SLOT(PJRT_Executable_GetCostAnalysis)
  CYXLA_PJRT_SLOT(PJRT_Executable_OutputMemoryKinds)
  CYXLA_PJRT_SLOT(PJRT_Executable_OptimizedProgram)
  CYXLA_PJRT_SLOT(PJRT_Executable_Serialize)
  CYXLA_PJRT_SLOT(PJRT_LoadedExecutable_Destroy)
  CYXLA_PJRT_SLOT(PJRT_LoadedExecutable_GetExecutable)
  CYXLA_PJRT_SLOT(PJRT_LoadedExecutable_AddressableDevices)
  CYXLA_PJRT_SLOT(PJRT_LoadedExecutable_Delete)
  CYXLA_PJRT_SLOT(PJRT_LoadedExecutable_IsDeleted)
  CYXLA_PJRT_SLOT(PJRT_LoadedExecutable_Execute)
  CYXLA_PJRT_SLOT(PJRT_Executable_DeserializeAndLoad)
  CYXLA_PJRT_SLOT(PJRT_LoadedExecutable_Fingerprint)
  CYXLA_PJRT_SLOT(PJRT_Buffer_Destroy)
  CYXLA_PJRT_SLOT(PJRT_Buffer_ElementType)
  CYXLA_PJRT_SLOT(PJRT_Buffer_Dimensions)
  CYXLA_PJRT_SLOT(PJRT_Buffer_UnpaddedDimensions)
  CYXLA_PJRT_SLOT(PJRT_Buffer_DynamicDimensionIndices)
  CYXLA_PJRT_SLOT(PJRT_Buffer_GetMemoryLayout)
  CYXLA_PJRT_SLOT(PJRT_Buffer_OnDeviceSizeInBytes)
  CYXLA_PJRT_SLOT(PJRT_Buffer_Device)
  CYXLA_PJRT_SLOT(PJRT_Buffer_Memory)
  CYXLA_PJRT_SLOT(PJRT_Buffer_Delete)
  CYXLA_PJRT_SLOT(PJRT_Buffer_IsDeleted)
  CYXLA_PJRT_SLOT(PJRT_Buffer_CopyToDevice)
  CYXLA_PJRT_SLOT(PJRT_Buffer_ToHostBuffer)
  CYXLA_PJRT_SLOT(PJRT_Buffer_IsOnCpu)
  CYXLA_PJRT_SLOT(PJRT_Buffer_ReadyEvent)
  CYXLA_PJRT_SLOT(PJRT_Buffer_UnsafePointer)
  CYXLA_PJRT_SLOT(PJRT_Buffer_IncreaseExternalReferenceCount)
  CYXLA_PJRT_SLOT(PJRT_Buffer_DecreaseExternalReferenceCount)
  CYXLA_PJRT_SLOT(PJRT_Buffer_OpaqueDeviceMemoryDataPointer)
  CYXLA_PJRT_SLOT(PJRT_CopyToDeviceStream_Destroy)
  CYXLA_PJRT_SLOT(PJRT_CopyToDeviceStream_AddChunk)
  CYXLA_PJRT_SLOT(PJRT_CopyToDeviceStream_TotalBytes)
  CYXLA_PJRT_SLOT(PJRT_CopyToDeviceStream_GranuleSize)
  CYXLA_PJRT_SLOT(PJRT_CopyToDeviceStream_CurrentBytes)
  CYXLA_PJRT_SLOT(PJRT_TopologyDescription_Create)
  CYXLA_PJRT_SLOT(PJRT_TopologyDescription_Destroy)
  CYXLA_PJRT_SLOT(PJRT_TopologyDescription_PlatformName)
  CYXLA_PJRT_SLOT(PJRT_TopologyDescription_PlatformVersion)
  CYXLA_PJRT_SLOT(PJRT_TopologyDescription_GetDeviceDescriptions)
  CYXLA_PJRT_SLOT(PJRT_TopologyDescription_Serialize)
  CYXLA_PJRT_SLOT(PJRT_TopologyDescription_Attributes)
  CYXLA_PJRT_SLOT(PJRT_Compile)
  CYXLA_PJRT_SLOT(PJRT_Executable_OutputElementTypes)
  CYXLA_PJRT_SLOT(PJRT_Executable_OutputDimensions)
  CYXLA_PJRT_SLOT(PJRT_Buffer_CopyToMemory)
  CYXLA_PJRT_SLOT(PJRT_Client_CreateViewOfDeviceBuffer)
  CYXLA_PJRT_SLOT(PJRT_Executable_Fingerprint)
  CYXLA_PJRT_SLOT(PJRT_Client_TopologyDescription)
  CYXLA_PJRT_SLOT(PJRT_Executable_GetCompiledMemoryStats)
  CYXLA_PJRT_SLOT(PJRT_Memory_Kind_Id)
  CYXLA_PJRT_SLOT(PJRT_ExecuteContext_Create)
  CYXLA_PJRT_SLOT(PJRT_ExecuteContext_Destroy)
  CYXLA_PJRT_SLOT(PJRT_Buffer_CopyRawToHost)
  CYXLA_PJRT_SLOT(PJRT_AsyncHostToDeviceTransferManager_Destroy)
  CYXLA_PJRT_SLOT(PJRT_AsyncHostToDeviceTransferManager_TransferData)
  CYXLA_PJRT_SLOT(PJRT_Client_CreateBuffersForAsyncHostToDevice)
  CYXLA_PJRT_SLOT(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer)
  CYXLA_PJRT_SLOT(PJRT_AsyncHostToDeviceTransferManager_Device)
  CYXLA_PJRT_SLOT(PJRT_AsyncHostToDeviceTransferManager_BufferCount)
  CYXLA_PJRT_SLOT(PJRT_AsyncHostToDeviceTransferManager_BufferSize)
  CYXLA_PJRT_SLOT(PJRT_AsyncHostToDeviceTransferManager_SetBufferError)
  CYXLA_PJRT_SLOT(PJRT_AsyncHostToDeviceTransferManager_AddMetadata)
  CYXLA_PJRT_SLOT(PJRT_Client_DmaMap)
  CYXLA_PJRT_SLOT(PJRT_Client_DmaUnmap)
  CYXLA_PJRT_SLOT(PJRT_Client_CreateUninitializedBuffer)
  CYXLA_PJRT_SLOT(PJRT_Client_UpdateGlobalProcessInfo)
  CYXLA_PJRT_SLOT(PJRT_TopologyDescription_Deserialize)
  CYXLA_PJRT_SLOT(PJRT_Client_CreateAliasBuffer)
  CYXLA_PJRT_SLOT(PJRT_Client_FulfillAliasBuffer)
  CYXLA_PJRT_SLOT(PJRT_LoadedExecutable_GetDeviceAssignment)
  CYXLA_PJRT_SLOT(PJRT_Client_CreateErrorBuffer)
  CYXLA_PJRT_SLOT(PJRT_AsyncHostToDeviceTransferManager_TransferLiteral)
  CYXLA_PJRT_SLOT(PJRT_Buffer_CopyRawToHostFuture)
  CYXLA_PJRT_SLOT(PJRT_Device_PoisonExecution)
  CYXLA_PJRT_SLOT(PJRT_Device_CreateAsyncTrackingEvent)
  CYXLA_PJRT_SLOT(PJRT_AsyncTrackingEvent_Destroy)
  CYXLA_PJRT_SLOT(PJRT_Executable_GetCompileOptions)
  CYXLA_PJRT_SLOT(PJRT_Buffer_DonateWithControlDependency)
  CYXLA_PJRT_SLOT(PJRT_Event_Create)
  CYXLA_PJRT_SLOT(PJRT_Event_Set)
  CYXLA_PJRT_SLOT(PJRT_Device_GetAttributes)
  CYXLA_PJRT_SLOT(PJRT_Client_Load)
  CYXLA_PJRT_SLOT(PJRT_LoadedExecutable_AddressableDeviceLogicalIds)
  CYXLA_PJRT_SLOT(PJRT_Buffer_Bitcast)
  CYXLA_PJRT_SLOT(PJRT_Error_ForEachPayload)
  CYXLA_PJRT_SLOT(PJRT_TopologyDescription_Fingerprint)
  CYXLA_PJRT_SLOT(PJRT_Executable_ParameterMemoryKinds)
  CYXLA_PJRT_SLOT(PJRT_Device_ClearMemoryStats)
  CYXLA_PJRT_SLOT(PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace)
  CYXLA_PJRT_SLOT(PJRT_TopologyDescription_GetMemorySpaceKindIds)
} PJRT_Api;
#undef CYXLA_PJRT_SLOT

typedef const PJRT_Api* (*PJRT_GetPjrtApi)(void);

/* ------------------------------------------------- the FFI extension (type 5) */

typedef enum {
  PJRT_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE = 1u << 0,
} PJRT_FFI_Handler_TraitsBits;

typedef struct PJRT_FFI_Register_Handler_Args {
  size_t struct_size;
  const char* target_name;
  size_t target_name_size;
  void* handler;  /* an XLA_FFI_Handler* */
  const char* platform_name;  /* "Host" for the CPU, "CUDA" or "ROCM" for GPUs */
  size_t platform_name_size;
  PJRT_FFI_Handler_TraitsBits traits;
} PJRT_FFI_Register_Handler_Args;
CYXLA_PJRT_STRUCT_SIZE(PJRT_FFI_Register_Handler_Args, traits)

typedef PJRT_Error* PJRT_FFI_Register_Handler(PJRT_FFI_Register_Handler_Args* args);

typedef struct PJRT_FFI_Extension {
  PJRT_Extension_Base base;
  void* type_register;  /* user-data types: unused by cyxla */
  void* user_data_add;
  PJRT_FFI_Register_Handler* register_handler;
} PJRT_FFI_Extension;

#ifdef __cplusplus
}
#endif

#endif /* CYXLA_SRC_PJRT_PJRT_C_API_H_ */
