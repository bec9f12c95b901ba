// The few structs of the XLA FFI C API (XLA's xla/ffi/api/c_api.h, API version 0.x) that
// cyxla needs to ask a handler for its metadata, the way XLA asks at registration.
//
// Declared here, under our own names, because the build does not depend on jaxlib's
// headers. Only the prefixes cyxla reads or writes are declared; fields keep XLA's order
// and types, and tests/native/layout_check.cc proves the offsets against the
// headers that jaxlib ships (jax.ffi.include_dir()).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cyxla::xla_ffi {

inline constexpr int kExtensionMetadata = 1;  // XLA_FFI_Extension_Metadata
inline constexpr int kStageExecute = 3;       // XLA_FFI_ExecutionStage_EXECUTE
inline constexpr int kErrorUnknown = 2;
inline constexpr int kErrorInvalidArgument = 3;
inline constexpr int kErrorResourceExhausted = 8;
inline constexpr int kErrorFailedPrecondition = 9;
inline constexpr int kErrorUnimplemented = 12;
inline constexpr int kArgBuffer = 1;   // XLA_FFI_ArgType_BUFFER
inline constexpr int kRetBuffer = 1;   // XLA_FFI_RetType_BUFFER
inline constexpr int kAttrScalar = 3;  // XLA_FFI_AttrType_SCALAR
// XLA_FFI_DataType: the element types of buffers and scalar attributes.
inline constexpr int kDataTypePred = 1;
inline constexpr int kDataTypeS32 = 4;
inline constexpr int kDataTypeU8 = 6;
inline constexpr int kDataTypeU64 = 9;
inline constexpr int kDataTypeF32 = 11;
inline constexpr int kDataTypeF64 = 12;
inline constexpr int kDataTypeC64 = 15;
inline constexpr int kDataTypeC128 = 18;

struct ExtensionBase {
  size_t struct_size;
  int type;  // XLA_FFI_Extension_Type
  ExtensionBase* next;
};

struct ApiVersion {
  size_t struct_size;
  ExtensionBase* extension_start;
  int major_version;
  int minor_version;
};
inline constexpr size_t kApiVersionSize = offsetof(ApiVersion, minor_version) + sizeof(int);

struct Error;  // opaque, owned by whoever created it

struct ErrorCreateArgs {
  size_t struct_size;
  ExtensionBase* extension_start;
  const char* message;
  int errc;  // XLA_FFI_Error_Code
};
/// XLA_FFI_Error_GetMessage_Args (FFI 0.3) and XLA_FFI_Error_GetDetails_Args (0.4), which
/// appends `errc`: a 0.4 plugin writes it, so the struct must have room for it, and a 0.3
/// plugin reads the prefix it knows.
struct ErrorGetMessageArgs {
  size_t struct_size;
  ExtensionBase* extension_start;
  Error* error;
  const char* message;  // out
  int errc;             // out (XLA FFI 0.4 and newer): XLA_FFI_Error_Code
};
struct ErrorDestroyArgs {
  size_t struct_size;
  ExtensionBase* extension_start;
  Error* error;
};

/// The head of XLA_FFI_Api: its version and the error functions, which every XLA FFI
/// API version has at these places.
struct Api {
  size_t struct_size;
  ExtensionBase* extension_start;
  ApiVersion api_version;
  const void* internal_api;
  Error* (*error_create)(ErrorCreateArgs*);
  void (*error_get_message)(ErrorGetMessageArgs*);
  void (*error_destroy)(ErrorDestroyArgs*);
};

/// XLA_FFI_Args and XLA_FFI_Rets share this layout.
struct Values {
  size_t struct_size;
  ExtensionBase* extension_start;
  int64_t size;
  void* types;
  void** values;
};
struct Attrs {
  size_t struct_size;
  ExtensionBase* extension_start;
  int64_t size;
  void* types;
  void* names;
  void** attrs;
};

/// An argument or result of the types kArgBuffer and kRetBuffer.
struct Buffer {
  size_t struct_size;
  ExtensionBase* extension_start;
  int dtype;  // XLA_FFI_DataType
  void* data;
  int64_t rank;
  int64_t* dims;
};

struct ByteSpan {
  const char* ptr;
  size_t len;
};

/// An attribute of the type kAttrScalar.
struct Scalar {
  int dtype;  // XLA_FFI_DataType
  void* value;
};

struct CallFrame {
  size_t struct_size;
  ExtensionBase* extension_start;
  const Api* api;
  void* ctx;
  int stage;  // XLA_FFI_ExecutionStage
  Values args;
  Values rets;
  Attrs attrs;
  void* future;  // out
};
/// XLA_FFI_CallFrame_STRUCT_SIZE: handlers insist on exactly this size (up to `attrs`).
inline constexpr size_t kCallFrameSize = offsetof(CallFrame, attrs) + sizeof(Attrs);
inline constexpr size_t kValuesSize = offsetof(Values, values) + sizeof(void**);
inline constexpr size_t kAttrsSize = offsetof(Attrs, attrs) + sizeof(void**);

struct Metadata {
  size_t struct_size;
  ApiVersion api_version;
  uint32_t traits;  // XLA_FFI_Handler_Traits
  int64_t state_type_id;
};
inline constexpr size_t kMetadataSize = offsetof(Metadata, traits) + sizeof(uint32_t);

struct MetadataExtension {
  ExtensionBase extension_base;
  Metadata* metadata;
};
inline constexpr size_t kMetadataExtensionSize =
    offsetof(MetadataExtension, metadata) + sizeof(Metadata*);

using Handler = Error*(CallFrame*);

}  // namespace cyxla::xla_ffi
