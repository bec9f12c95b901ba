// The handler of cyxla's Python host callbacks. It lives in the Python binding, not in the
// core: the core never takes the GIL. Until a callback fires it costs nothing; a firing
// one takes the GIL, hands the Python dispatcher (cyxla._ffi.callbacks.dispatch) views of the
// operand and result buffers, and releases the GIL. A failure of the callback fails the
// custom call with its message, which XLA returns from the execution.
#include "python/host_callback.hpp"

#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt/ffi.hpp"
#include "pjrt/xla_ffi.hpp"

namespace nb = nanobind;

namespace cyxla::python {
namespace {

/// Set once, under the GIL, and never released: a callback may fire from a native thread
/// while the interpreter shuts down, and the dispatcher must not be freed under it.
PyObject* dispatcher = nullptr;

constexpr std::string_view kIdAttribute = "callback_id";

/// A buffer of the call, as bytes.
struct Region {
  char* data;
  Py_ssize_t size;
};

xla_ffi::Error* fail(const xla_ffi::CallFrame* frame, const std::string& message) {
  xla_ffi::ErrorCreateArgs args{sizeof(xla_ffi::ErrorCreateArgs), nullptr, message.c_str(),
                                xla_ffi::kErrorUnknown};
  return frame->api->error_create(&args);  // XLA copies the message
}

/// The bytes per element of an XLA_FFI_DataType (XLA's PrimitiveType numbers), or none
/// for types that are not whole bytes (S4, U4, F4 and the like) or not data.
std::optional<size_t> element_bytes(int type) {
  switch (type) {
    case 1: case 2: case 6:                       // PRED, S8, U8
    case 19: case 20: case 23: case 24: case 25:  // the 8-bit floats
    case 28: case 29: case 33:
      return 1;
    case 3: case 7: case 10: case 16:  // S16, U16, F16, BF16
      return 2;
    case 4: case 8: case 11:  // S32, U32, F32
      return 4;
    case 5: case 9: case 12: case 15:  // S64, U64, F64, C64
      return 8;
    case 18:  // C128
      return 16;
    default:
      return std::nullopt;
  }
}

/// The buffers of `values` (arguments or results), or an error message.
std::string regions_of(const xla_ffi::Values& values, int buffer_type, const char* role,
                       std::vector<Region>& regions) {
  static char empty = 0;  // a zero-size buffer may have no address
  const auto* types = static_cast<const int*>(values.types);
  for (int64_t i = 0; i < values.size; ++i) {
    if (types[i] != buffer_type) return std::string(role) + " is not a buffer";
    const auto* buffer = static_cast<const xla_ffi::Buffer*>(values.values[i]);
    const std::optional<size_t> bytes = element_bytes(buffer->dtype);
    if (!bytes) {
      return std::string(role) + " has the XLA element type " + std::to_string(buffer->dtype) +
             ", which Python callbacks do not carry";
    }
    size_t size = *bytes;
    for (int64_t d = 0; d < buffer->rank; ++d) size *= static_cast<size_t>(buffer->dims[d]);
    char* data = size == 0 || buffer->data == nullptr ? &empty : static_cast<char*>(buffer->data);
    regions.push_back({data, static_cast<Py_ssize_t>(size)});
  }
  return "";
}

std::optional<uint64_t> callback_id(const xla_ffi::Attrs& attrs) {
  const auto* types = static_cast<const int*>(attrs.types);
  const auto* const* names = static_cast<const xla_ffi::ByteSpan* const*>(attrs.names);
  for (int64_t i = 0; i < attrs.size; ++i) {
    if (std::string_view(names[i]->ptr, names[i]->len) != kIdAttribute) continue;
    const auto* scalar = static_cast<const xla_ffi::Scalar*>(attrs.attrs[i]);
    if (types[i] != xla_ffi::kAttrScalar || scalar->dtype != xla_ffi::kDataTypeU64) break;
    uint64_t id = 0;
    std::memcpy(&id, scalar->value, sizeof(id));
    return id;
  }
  return std::nullopt;
}

nb::list views_of(const std::vector<Region>& regions, int flags) {
  nb::list views;
  for (const Region& region : regions) {
    PyObject* view = PyMemoryView_FromMemory(region.data, region.size, flags);
    if (view == nullptr) throw nb::python_error();
    views.append(nb::steal(view));
  }
  return views;
}

/// Ends the views, so that Python cannot reach the buffers after the call (the dispatcher
/// copies what it hands the callback); one still exported is left to its owner.
void release(const nb::list& views) {
  for (nb::handle view : views) {
    try {
      view.attr("release")();
    } catch (const nb::python_error&) {  // still exported: nothing to do
    }
  }
}

/// Calls the dispatcher with the GIL held; returns the error message, "" on success.
std::string dispatch(uint64_t id, const std::vector<Region>& operands,
                     const std::vector<Region>& results) {
  if (dispatcher == nullptr) return "no Python callback dispatcher is set in this process";
  try {
    nb::list operand_views = views_of(operands, PyBUF_READ);
    nb::list result_views = views_of(results, PyBUF_WRITE);
    nb::object error = nb::handle(dispatcher)(id, operand_views, result_views);
    release(operand_views);
    release(result_views);
    return error.is_none() ? "" : nb::cast<std::string>(error);
  } catch (const std::exception& e) {  // the dispatcher itself failed
    return std::string("the Python callback dispatcher failed: ") + e.what();
  }
}

xla_ffi::Error* run_callback(xla_ffi::CallFrame* frame) {
  if (pjrt::is_metadata_call(frame)) {
    pjrt::answer_metadata_call(frame);
    return nullptr;
  }
  const std::optional<uint64_t> id = callback_id(frame->attrs);
  if (!id) {
    return fail(frame, std::string(pjrt::kPythonCallbackTarget) +
                           " needs a ui64 attribute 'callback_id' (cyxla.lower writes it)");
  }
  std::vector<Region> operands;
  std::vector<Region> results;
  std::string error = regions_of(frame->args, xla_ffi::kArgBuffer, "an operand", operands);
  if (error.empty()) error = regions_of(frame->rets, xla_ffi::kRetBuffer, "a result", results);
  if (!error.empty()) return fail(frame, "a Python callback: " + error);
  if (!Py_IsInitialized()) {
    return fail(frame, "a Python callback fired, but Python is not running in this process");
  }
  {
    nb::gil_scoped_acquire acquire;
    error = dispatch(*id, operands, results);
  }
  return error.empty() ? nullptr : fail(frame, error);
}

/// The handler: nothing unwinds into XLA.
xla_ffi::Error* python_callback(xla_ffi::CallFrame* frame) noexcept {
  try {
    return run_callback(frame);
  } catch (const std::exception& e) {
    return fail(frame, std::string("a Python callback failed: ") + e.what());
  } catch (...) {
    return fail(frame, "a Python callback failed");
  }
}

}  // namespace

const void* python_callback_handler() {
  return reinterpret_cast<const void*>(&python_callback);
}

void set_python_callback_dispatcher(nb::object function) {
  // A replaced dispatcher is kept too: a callback may be running it.
  dispatcher = function.release().ptr();
}

}  // namespace cyxla::python
