// Proves that cyxla's declarations of the XLA FFI structs (src/pjrt/xla_ffi.hpp) match
// the headers that jaxlib ships: compiling this file is the test. It compiles against
// every XLA FFI API generation a supported jaxlib ships (XLA_FFI_API_MINOR selects the
// names those headers declare).
#include <cstddef>
#include <type_traits>

#include "pjrt/xla_ffi.hpp"
#include "xla/ffi/api/c_api.h"

namespace ours = cyxla::xla_ffi;

// XLA FFI 0.4 (jaxlib 0.11) renamed the extension base and replaced
// XLA_FFI_Error_GetMessage with XLA_FFI_Error_GetDetails, whose arguments end with an
// `errc` after the same `error` and `message`.
#if XLA_FFI_API_MAJOR == 0 && XLA_FFI_API_MINOR <= 3
using TheirExtensionBase = XLA_FFI_Extension_Base;
using TheirErrorArgs = XLA_FFI_Error_GetMessage_Args;
#define THEIR_ERROR_FUNCTION XLA_FFI_Error_GetMessage
#else
using TheirExtensionBase = XLA_FFI_InternalExtension;
using TheirErrorArgs = XLA_FFI_Error_GetDetails_Args;
#define THEIR_ERROR_FUNCTION XLA_FFI_Error_GetDetails
#endif

#define SAME_OFFSET(our_type, our_field, their_type, their_field)          \
  static_assert(offsetof(ours::our_type, our_field) ==                     \
                    offsetof(their_type, their_field),                     \
                #our_type "::" #our_field " is not at " #their_type "::" #their_field)

static_assert(ours::kExtensionMetadata == XLA_FFI_Extension_Metadata);
static_assert(ours::kStageExecute == XLA_FFI_ExecutionStage_EXECUTE);
static_assert(ours::kErrorInvalidArgument == XLA_FFI_Error_Code_INVALID_ARGUMENT);
static_assert(ours::kErrorUnknown == XLA_FFI_Error_Code_UNKNOWN);
static_assert(ours::kArgBuffer == XLA_FFI_ArgType_BUFFER);
static_assert(ours::kRetBuffer == XLA_FFI_RetType_BUFFER);
static_assert(ours::kAttrScalar == XLA_FFI_AttrType_SCALAR);
static_assert(ours::kErrorResourceExhausted == XLA_FFI_Error_Code_RESOURCE_EXHAUSTED);
static_assert(ours::kErrorFailedPrecondition == XLA_FFI_Error_Code_FAILED_PRECONDITION);
static_assert(ours::kErrorUnimplemented == XLA_FFI_Error_Code_UNIMPLEMENTED);
static_assert(ours::kDataTypePred == XLA_FFI_DataType_PRED);
static_assert(ours::kDataTypeS32 == XLA_FFI_DataType_S32);
static_assert(ours::kDataTypeU8 == XLA_FFI_DataType_U8);
static_assert(ours::kDataTypeU64 == XLA_FFI_DataType_U64);
static_assert(ours::kDataTypeF32 == XLA_FFI_DataType_F32);
static_assert(ours::kDataTypeF64 == XLA_FFI_DataType_F64);
static_assert(ours::kDataTypeC64 == XLA_FFI_DataType_C64);
static_assert(ours::kDataTypeC128 == XLA_FFI_DataType_C128);

static_assert(sizeof(ours::ExtensionBase) == sizeof(TheirExtensionBase));
SAME_OFFSET(ExtensionBase, type, TheirExtensionBase, type);
SAME_OFFSET(ExtensionBase, next, TheirExtensionBase, next);

static_assert(ours::kApiVersionSize == XLA_FFI_Api_Version_STRUCT_SIZE);
SAME_OFFSET(ApiVersion, major_version, XLA_FFI_Api_Version, major_version);
SAME_OFFSET(ApiVersion, minor_version, XLA_FFI_Api_Version, minor_version);

static_assert(sizeof(ours::ErrorCreateArgs) == sizeof(XLA_FFI_Error_Create_Args));
SAME_OFFSET(ErrorCreateArgs, message, XLA_FFI_Error_Create_Args, message);
SAME_OFFSET(ErrorCreateArgs, errc, XLA_FFI_Error_Create_Args, errc);
// Ours has room for every generation's fields: a 0.4 API writes `errc` after `message`,
// a 0.3 API reads the prefix up to `message`.
static_assert(sizeof(ours::ErrorGetMessageArgs) >= sizeof(TheirErrorArgs));
SAME_OFFSET(ErrorGetMessageArgs, error, TheirErrorArgs, error);
SAME_OFFSET(ErrorGetMessageArgs, message, TheirErrorArgs, message);
#if !(XLA_FFI_API_MAJOR == 0 && XLA_FFI_API_MINOR <= 3)
static_assert(sizeof(ours::ErrorGetMessageArgs) == sizeof(XLA_FFI_Error_GetDetails_Args));
SAME_OFFSET(ErrorGetMessageArgs, errc, XLA_FFI_Error_GetDetails_Args, errc);
#endif
static_assert(sizeof(ours::ErrorDestroyArgs) == sizeof(XLA_FFI_Error_Destroy_Args));
SAME_OFFSET(ErrorDestroyArgs, error, XLA_FFI_Error_Destroy_Args, error);

SAME_OFFSET(Api, api_version, XLA_FFI_Api, api_version);
SAME_OFFSET(Api, internal_api, XLA_FFI_Api, internal_api);
SAME_OFFSET(Api, error_create, XLA_FFI_Api, XLA_FFI_Error_Create);
SAME_OFFSET(Api, error_get_message, XLA_FFI_Api, THEIR_ERROR_FUNCTION);
SAME_OFFSET(Api, error_destroy, XLA_FFI_Api, XLA_FFI_Error_Destroy);

static_assert(ours::kValuesSize == XLA_FFI_Args_STRUCT_SIZE);
static_assert(ours::kValuesSize == XLA_FFI_Rets_STRUCT_SIZE);
static_assert(ours::kAttrsSize == XLA_FFI_Attrs_STRUCT_SIZE);
SAME_OFFSET(Values, size, XLA_FFI_Args, size);
SAME_OFFSET(Values, types, XLA_FFI_Args, types);
SAME_OFFSET(Values, values, XLA_FFI_Args, args);
SAME_OFFSET(Values, values, XLA_FFI_Rets, rets);
SAME_OFFSET(Attrs, names, XLA_FFI_Attrs, names);
SAME_OFFSET(Attrs, attrs, XLA_FFI_Attrs, attrs);

// The Python callback handler (src/python/host_callback.cpp) reads these.
static_assert(sizeof(ours::Buffer) == XLA_FFI_Buffer_STRUCT_SIZE);
SAME_OFFSET(Buffer, dtype, XLA_FFI_Buffer, dtype);
SAME_OFFSET(Buffer, data, XLA_FFI_Buffer, data);
SAME_OFFSET(Buffer, rank, XLA_FFI_Buffer, rank);
SAME_OFFSET(Buffer, dims, XLA_FFI_Buffer, dims);
static_assert(sizeof(ours::ByteSpan) == sizeof(XLA_FFI_ByteSpan));
SAME_OFFSET(ByteSpan, len, XLA_FFI_ByteSpan, len);
static_assert(sizeof(ours::Scalar) == sizeof(XLA_FFI_Scalar));
SAME_OFFSET(Scalar, value, XLA_FFI_Scalar, value);
static_assert(sizeof(XLA_FFI_DataType) == sizeof(int));
static_assert(sizeof(XLA_FFI_ArgType) == sizeof(int));
static_assert(sizeof(XLA_FFI_AttrType) == sizeof(int));

static_assert(ours::kCallFrameSize == XLA_FFI_CallFrame_STRUCT_SIZE);
SAME_OFFSET(CallFrame, extension_start, XLA_FFI_CallFrame, extension_start);
SAME_OFFSET(CallFrame, api, XLA_FFI_CallFrame, api);
SAME_OFFSET(CallFrame, ctx, XLA_FFI_CallFrame, ctx);
SAME_OFFSET(CallFrame, stage, XLA_FFI_CallFrame, stage);
SAME_OFFSET(CallFrame, args, XLA_FFI_CallFrame, args);
SAME_OFFSET(CallFrame, rets, XLA_FFI_CallFrame, rets);
SAME_OFFSET(CallFrame, attrs, XLA_FFI_CallFrame, attrs);
SAME_OFFSET(CallFrame, future, XLA_FFI_CallFrame, future);

static_assert(ours::kMetadataSize == XLA_FFI_Metadata_STRUCT_SIZE);
SAME_OFFSET(Metadata, api_version, XLA_FFI_Metadata, api_version);
SAME_OFFSET(Metadata, traits, XLA_FFI_Metadata, traits);
SAME_OFFSET(Metadata, state_type_id, XLA_FFI_Metadata, state_type_id);
static_assert(ours::kMetadataExtensionSize == XLA_FFI_Metadata_Extension_STRUCT_SIZE);
SAME_OFFSET(MetadataExtension, metadata, XLA_FFI_Metadata_Extension, metadata);

static_assert(std::is_same_v<ours::Handler*, ours::Error* (*)(ours::CallFrame*)>);

int main() { return 0; }
