// A typed XLA FFI handler: y = x * factor + 1 for float32 arrays of any shape, with
// `factor` an attribute of the call. Built against the FFI headers that jaxlib ships.
#include <cstddef>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

static ffi::Error ScaleAddImpl(float factor, ffi::Buffer<ffi::F32> x,
                               ffi::ResultBuffer<ffi::F32> y) {
  const float* in = x.typed_data();
  float* out = y->typed_data();
  for (size_t i = 0; i < x.element_count(); ++i) out[i] = in[i] * factor + 1.0f;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(ScaleAdd, ScaleAddImpl,
                              ffi::Ffi::Bind()
                                  .Attr<float>("factor")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());
