// libFuzzer target: cyxla's LAPACK handlers (src/lapack/) on call frames built from the
// fuzzer's bytes, as a program file could make XLA build them: any target, operand and
// result counts, element types, ranks, dimensions and attributes. The buffers have the
// sizes their dimensions say (XLA allocates them so), so a handler that reads or writes
// past what it checked is caught by AddressSanitizer; a refusal must come back as an FFI
// error, never a crash. With CYXLA_LAPACK naming a LAPACK (.ci/sanitizers names SciPy's
// OpenBLAS), calls that pass the checks run LAPACK on the fuzzed shapes too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "lapack/handlers.hpp"
#include "pjrt/xla_ffi.hpp"

namespace ffi = cyxla::xla_ffi;

namespace {

/// The bytes, read front to back; zeros once they run out.
struct Bytes {
  const uint8_t* data;
  size_t size;
  uint8_t next() {
    if (size == 0) return 0;
    --size;
    return *data++;
  }
};

// The fake XLA_FFI_Api's errors: the message, owned until the error is destroyed.
struct FakeError {
  std::string message;
};
ffi::Error* create_error(ffi::ErrorCreateArgs* args) {
  return reinterpret_cast<ffi::Error*>(new FakeError{args->message});
}
void get_message(ffi::ErrorGetMessageArgs* args) {
  args->message = reinterpret_cast<FakeError*>(args->error)->message.c_str();
}
void destroy_error(ffi::ErrorDestroyArgs* args) {
  delete reinterpret_cast<FakeError*>(args->error);
}

const ffi::Api kApi = {sizeof(ffi::Api), nullptr, {sizeof(ffi::ApiVersion), nullptr, 0, 4},
                       nullptr, &create_error, &get_message, &destroy_error};

constexpr int kDtypes[] = {ffi::kDataTypeF32, ffi::kDataTypeF64,  ffi::kDataTypeC64,
                           ffi::kDataTypeC128, ffi::kDataTypeS32, ffi::kDataTypeU8};
constexpr size_t kBytesOf[] = {4, 8, 8, 16, 4, 1};
const char* const kNames[] = {"uplo", "mode",         "side",          "trans_x", "diag",
                              "sort", "compute_left", "compute_right", "low",     "high",
                              "left", "transpose",    "other"};
constexpr char kCodes[] = {'L', 'U', 'N', 'V', 'A', 'S', 'O', 'T', 'C', 'R', 'X', 0};

/// One buffer of the frame: its dimensions and memory.
struct Buffer {
  std::vector<int64_t> dims;
  std::vector<std::byte> memory;
  ffi::Buffer view{};
};

void fill(Bytes& in, Buffer& b, int* type) {
  const size_t which = in.next() % std::size(kDtypes);
  const int64_t rank = in.next() % 5;
  size_t count = 1;
  for (int64_t i = 0; i < rank; ++i) {
    b.dims.push_back(in.next() % 6);
    count *= static_cast<size_t>(b.dims.back());
  }
  b.memory.resize(count * kBytesOf[which]);
  for (std::byte& x : b.memory) x = static_cast<std::byte>(in.next());
  b.view = {sizeof(ffi::Buffer), nullptr, kDtypes[which],
            b.memory.empty() ? nullptr : b.memory.data(), rank, b.dims.data()};
  *type = in.next() % 8 == 0 ? 2 : 1;  // now and then not a buffer
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  const auto targets = cyxla::lapack::targets();
  const cyxla::lapack::Target& target = targets[in.next() % targets.size()];

  const size_t operands = in.next() % 5, results = in.next() % 7;
  std::vector<Buffer> buffers(operands + results);
  std::vector<int> types(buffers.size());
  std::vector<void*> values(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    fill(in, buffers[i], &types[i]);
    values[i] = &buffers[i].view;
  }

  const size_t attributes = in.next() % 6;
  std::vector<ffi::ByteSpan> names(attributes);
  std::vector<const ffi::ByteSpan*> name_pointers(attributes);
  std::vector<int> attribute_types(attributes);
  std::vector<ffi::Scalar> scalars(attributes);
  std::vector<int32_t> payloads(attributes);
  std::vector<void*> attribute_values(attributes);
  for (size_t i = 0; i < attributes; ++i) {
    const char* name = kNames[in.next() % std::size(kNames)];
    names[i] = {name, std::strlen(name)};
    name_pointers[i] = &names[i];
    const uint8_t shape = in.next();
    attribute_types[i] = shape % 5 == 0 ? 4 : 3;  // now and then a string, not a scalar
    const uint8_t value = in.next();
    // int32 (gehrd's low and high), boolean (ormqr's left and transpose) or uint8 (the
    // character codes); any of them where another is expected, too.
    const int dtype = shape % 7 == 0   ? ffi::kDataTypeS32
                      : shape % 3 == 0 ? ffi::kDataTypePred
                                       : ffi::kDataTypeU8;
    payloads[i] = dtype == ffi::kDataTypeS32    ? value % 8
                  : dtype == ffi::kDataTypePred ? value % 2
                                                : kCodes[value % std::size(kCodes)];
    scalars[i] = {dtype, &payloads[i]};
    attribute_values[i] = &scalars[i];
  }

  ffi::CallFrame frame{};
  frame.struct_size = ffi::kCallFrameSize;
  frame.api = &kApi;
  frame.stage = ffi::kStageExecute;
  frame.args = {ffi::kValuesSize, nullptr, static_cast<int64_t>(operands), types.data(),
                values.data()};
  frame.rets = {ffi::kValuesSize, nullptr, static_cast<int64_t>(results),
                types.data() + operands, values.data() + operands};
  frame.attrs = {ffi::kAttrsSize, nullptr, static_cast<int64_t>(attributes),
                 attribute_types.data(), name_pointers.data(), attribute_values.data()};

  if (ffi::Error* error = target.handler(&frame)) {
    ffi::ErrorGetMessageArgs get{sizeof get, nullptr, error, nullptr, 0};
    kApi.error_get_message(&get);
    // A refusal names its target first.
    if (get.message == nullptr || std::strncmp(get.message, target.name.data(), target.name.size()) != 0) {
      std::abort();
    }
    ffi::ErrorDestroyArgs destroy{sizeof destroy, nullptr, error};
    kApi.error_destroy(&destroy);
  }
  return 0;
}
