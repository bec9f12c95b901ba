// Typed XLA FFI handlers for the custom-call tests, built at test time against the FFI
// headers that jaxlib ships (jax.ffi.include_dir()).
#include <cstddef>
#include <cstdint>

#include "xla/ffi/api/c_api.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// y = x * factor + 1, for float32 arrays of any shape; `factor` is an attribute.
ffi::Error ScaleAddImpl(float factor, ffi::Buffer<ffi::F32> x,
                        ffi::ResultBuffer<ffi::F32> y) {
  if (x.element_count() != y->element_count()) {
    return ffi::Error::InvalidArgument("x and y differ in size");
  }
  const float* in = x.typed_data();
  float* out = y->typed_data();
  for (size_t i = 0; i < x.element_count(); ++i) out[i] = in[i] * factor + 1.0f;
  return ffi::Error::Success();
}

bool IsMetadataCall(const XLA_FFI_CallFrame* frame) {
  return frame->extension_start != nullptr &&
         frame->extension_start->type == XLA_FFI_Extension_Metadata;
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(CyxlaTestScaleAdd, ScaleAddImpl,
                              ffi::Ffi::Bind()
                                  .Attr<float>("factor")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// A handler that claims to be built against XLA FFI 0.99, newer than any plugin: XLA
// rejects its registration (silently, through the PJRT FFI extension).
extern "C" XLA_FFI_Error* CyxlaTestFutureHandler(XLA_FFI_CallFrame* frame) {
  if (IsMetadataCall(frame)) {
    auto* extension = reinterpret_cast<XLA_FFI_Metadata_Extension*>(frame->extension_start);
    extension->metadata->api_version =
        XLA_FFI_Api_Version{XLA_FFI_Api_Version_STRUCT_SIZE, nullptr, 0, 99};
    extension->metadata->traits = 0;
  }
  return nullptr;
}

// A handler that refuses XLA's metadata call with an error.
extern "C" XLA_FFI_Error* CyxlaTestRefusingHandler(XLA_FFI_CallFrame* frame) {
  XLA_FFI_Error_Create_Args args;
  args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  args.extension_start = nullptr;
  args.message = "CyxlaTestRefusingHandler refuses every call";
  args.errc = XLA_FFI_Error_Code_FAILED_PRECONDITION;
  return frame->api->XLA_FFI_Error_Create(&args);
}
