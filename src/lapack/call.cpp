// The checks of a LAPACK handler's call frame, and its errors.
#include "lapack/call.hpp"

#include <limits>
#include <vector>

#include "common/checked.hpp"

namespace cyxla::lapack {
namespace {

std::string dtype_name(int dtype) {
  switch (dtype) {
    case xla_ffi::kDataTypeS32: return "int32";
    case xla_ffi::kDataTypeU8: return "uint8";
    case xla_ffi::kDataTypeF32: return "float32";
    case xla_ffi::kDataTypeF64: return "float64";
    case xla_ffi::kDataTypeC64: return "complex64";
    case xla_ffi::kDataTypeC128: return "complex128";
    default: return "XLA data type " + std::to_string(dtype);
  }
}

std::string dims_text(std::span<const int64_t> dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

constexpr int64_t kLapackIntMax = std::numeric_limits<lapack_int>::max();

}  // namespace

xla_ffi::Error* make_error(const xla_ffi::CallFrame* frame, int code,
                           const std::string& message) noexcept {
  xla_ffi::ErrorCreateArgs args{sizeof(xla_ffi::ErrorCreateArgs), nullptr, message.c_str(),
                                code};
  return frame->api->error_create(&args);
}

xla_ffi::Error* make_error(const xla_ffi::CallFrame* frame, std::string_view family, char letter,
                           int code, const char* why) noexcept {
  try {
    return make_error(frame, code, Call(frame, family, letter).target() + ": " + why);
  } catch (...) {
    xla_ffi::ErrorCreateArgs args{sizeof(xla_ffi::ErrorCreateArgs), nullptr, why, code};
    return frame->api->error_create(&args);
  }
}

std::string Call::target() const {
  return "lapack_" + std::string(1, letter_) + std::string(family_) + "_ffi";
}

void Call::refuse(const std::string& why, int code) const {
  throw Refusal{code, target() + ": " + why};
}

void Call::expect_counts(int64_t operands, int64_t results, int64_t more_operands) const {
  const int64_t given = frame_->args.size;
  if (given < operands || given > operands + more_operands || frame_->rets.size != results) {
    const std::string wanted =
        more_operands == 0 ? std::to_string(operands)
                           : std::to_string(operands) + " to " +
                                 std::to_string(operands + more_operands);
    refuse("takes " + wanted + " operands and " + std::to_string(results) +
           " results, the program passes " + std::to_string(given) + " and " +
           std::to_string(frame_->rets.size));
  }
}

Array Call::buffer(const xla_ffi::Values& values, int expected_type, int64_t index, int dtype,
                   std::string_view name, std::string_view kind) const {
  const std::string what = std::string(kind) + " " + std::to_string(index) + " (" +
                           std::string(name) + ")";
  if (index >= values.size || values.types == nullptr || values.values == nullptr) {
    refuse(what + " is missing");
  }
  if (static_cast<const int*>(values.types)[index] != expected_type) {
    refuse(what + " is not a buffer");
  }
  const auto* buffer = static_cast<const xla_ffi::Buffer*>(values.values[index]);
  if (buffer == nullptr || buffer->rank < 0 || (buffer->rank > 0 && buffer->dims == nullptr)) {
    refuse(what + " has no dimensions");
  }
  if (buffer->dtype != dtype) {
    refuse(what + " is " + dtype_name(buffer->dtype) + ", expected " + dtype_name(dtype));
  }
  Array array{buffer->data,
              std::span<const int64_t>(buffer->dims, static_cast<size_t>(buffer->rank)), name};
  size_t count = 1;
  for (const int64_t d : array.dims) {
    const std::optional<size_t> next =
        d < 0 ? std::nullopt : checked_product(count, static_cast<size_t>(d));
    if (!next || *next > static_cast<size_t>(std::numeric_limits<int64_t>::max() / 16)) {
      refuse(what + " has the dimensions " + dims_text(array.dims) +
             ", whose size does not fit in memory");
    }
    count = *next;
  }
  if (count > 0 && array.data == nullptr) refuse(what + " has no memory");
  return array;
}

Array Call::operand(int64_t index, int dtype, std::string_view name) const {
  return buffer(frame_->args, xla_ffi::kArgBuffer, index, dtype, name, "operand");
}

Array Call::result(int64_t index, int dtype, std::string_view name) const {
  return buffer(frame_->rets, xla_ffi::kRetBuffer, index, dtype, name, "result");
}

Matrices Call::matrices(const Array& array) const {
  if (array.dims.size() < 2) {
    refuse(std::string(array.name) + " has the dimensions " + dims_text(array.dims) +
           ", expected a matrix or a batch of them");
  }
  Matrices m;
  m.batch_dims = array.dims.first(array.dims.size() - 2);
  for (const int64_t d : m.batch_dims) m.batch *= d;  // buffer() bounded the product
  const int64_t rows = array.dims[array.dims.size() - 2];
  const int64_t cols = array.dims.back();
  if (rows > kLapackIntMax || cols > kLapackIntMax) {
    refuse(std::string(array.name) + " has " + std::to_string(rows) + "x" +
           std::to_string(cols) + " matrices, more than LAPACK's 32-bit integers count");
  }
  m.rows = static_cast<lapack_int>(rows);
  m.cols = static_cast<lapack_int>(cols);
  return m;
}

void Call::expect_dims(const Array& array, std::span<const int64_t> batch_dims,
                       std::initializer_list<int64_t> trailing) const {
  bool same = array.dims.size() == batch_dims.size() + trailing.size();
  for (size_t i = 0; same && i < batch_dims.size(); ++i) same = array.dims[i] == batch_dims[i];
  size_t i = batch_dims.size();
  for (const int64_t d : trailing) {
    if (!same) break;
    same = array.dims[i++] == d;
  }
  if (!same) {
    std::vector<int64_t> wanted(batch_dims.begin(), batch_dims.end());
    wanted.insert(wanted.end(), trailing.begin(), trailing.end());
    refuse(std::string(array.name) + " has the dimensions " + dims_text(array.dims) +
           ", expected " + dims_text(wanted));
  }
}

const void* Call::scalar_attribute(std::string_view name, int dtype, const char* type) const {
  const xla_ffi::Attrs& attrs = frame_->attrs;
  const auto* types = static_cast<const int*>(attrs.types);
  const auto* const* names = static_cast<const xla_ffi::ByteSpan* const*>(attrs.names);
  for (int64_t i = 0; types != nullptr && names != nullptr && attrs.attrs != nullptr &&
                      i < attrs.size;
       ++i) {
    const xla_ffi::ByteSpan* n = names[i];
    if (n == nullptr || n->ptr == nullptr || std::string_view(n->ptr, n->len) != name) continue;
    const auto* scalar = static_cast<const xla_ffi::Scalar*>(attrs.attrs[i]);
    if (types[i] != xla_ffi::kAttrScalar || scalar == nullptr || scalar->dtype != dtype ||
        scalar->value == nullptr) {
      refuse("the attribute '" + std::string(name) + "' is not " + type + " scalar");
    }
    return scalar->value;
  }
  refuse("the attribute '" + std::string(name) + "' is missing");
}

char Call::char_attribute(std::string_view name, std::string_view allowed) const {
  const void* scalar = scalar_attribute(name, xla_ffi::kDataTypeU8, "a uint8");
  const char value = static_cast<char>(*static_cast<const uint8_t*>(scalar));
  if (value == '\0' || allowed.find(value) == std::string_view::npos) {
    std::string options;
    for (const char c : allowed) options += (options.empty() ? "'" : ", '") + std::string(1, c) + "'";
    refuse("the attribute '" + std::string(name) + "' is " +
           std::to_string(static_cast<unsigned>(static_cast<uint8_t>(value))) +
           ", expected the code of " + options);
  }
  return value;
}

int32_t Call::int_attribute(std::string_view name) const {
  int32_t value = 0;
  std::memcpy(&value, scalar_attribute(name, xla_ffi::kDataTypeS32, "an int32"), sizeof value);
  return value;
}

bool Call::bool_attribute(std::string_view name) const {
  uint8_t value = 0;
  std::memcpy(&value, scalar_attribute(name, xla_ffi::kDataTypePred, "a boolean"), sizeof value);
  return value != 0;
}

const Library& Call::library() const {
  std::string why;
  const Library* found = lapack::library(&why);
  if (found == nullptr) refuse(why, xla_ffi::kErrorFailedPrecondition);
  return *found;
}

}  // namespace cyxla::lapack
