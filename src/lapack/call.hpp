// One custom call, read for a LAPACK handler: every operand, result and attribute is
// checked against what the target takes before LAPACK sees it, because all of them come
// from a program (a file, perhaps). A check that fails throws Refusal, which the handler's
// boundary (run_handler) turns into an XLA FFI error naming the target; nothing unwinds
// into XLA.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>

#include "lapack/library.hpp"
#include "pjrt/ffi.hpp"
#include "pjrt/xla_ffi.hpp"

namespace cyxla::lapack {

/// Why a call was refused (or failed): the FFI error's code and message.
struct Refusal {
  int code;
  std::string message;
};

/// The XLA FFI data type of T, and the letter of its LAPACK routines.
template <typename T>
struct Element;
template <>
struct Element<float> {
  static constexpr int dtype = xla_ffi::kDataTypeF32;
  static constexpr char letter = 's';
  using Real = float;
};
template <>
struct Element<double> {
  static constexpr int dtype = xla_ffi::kDataTypeF64;
  static constexpr char letter = 'd';
  using Real = double;
};
template <>
struct Element<c64> {
  static constexpr int dtype = xla_ffi::kDataTypeC64;
  static constexpr char letter = 'c';
  using Real = float;
};
template <>
struct Element<c128> {
  static constexpr int dtype = xla_ffi::kDataTypeC128;
  static constexpr char letter = 'z';
  using Real = double;
};
template <typename T>
inline constexpr bool is_complex = Element<T>::dtype == xla_ffi::kDataTypeC64 ||
                                   Element<T>::dtype == xla_ffi::kDataTypeC128;

/// Whether the `count` values of a matrix hold one that is not finite, which then gets
/// `*info` -4 instead of a call of LAPACK. geev and the SVDs ask: geev as jaxlib's does,
/// the SVDs because LAPACK's bidiagonal QR iteration, sbdsqr, never ends on such a
/// matrix (in jaxlib too).
template <typename T>
bool refused_not_finite(const T* data, int64_t count, lapack_int* info) {
  for (int64_t i = 0; i < count; ++i) {
    bool finite;
    if constexpr (is_complex<T>) {
      finite = std::isfinite(data[i].real()) && std::isfinite(data[i].imag());
    } else {
      finite = std::isfinite(data[i]);
    }
    if (!finite) {
      *info = -4;
      return true;
    }
  }
  return false;
}

/// An operand or result: its memory and dimensions, as XLA passed them.
struct Array {
  void* data = nullptr;
  std::span<const int64_t> dims;
  std::string_view name;  // for messages: "the operand x", ...
};

/// A stack of matrices: dims (batch..., rows, cols), column-major as jaxlib's lowering
/// lays them out. Every count fits LAPACK's 32-bit integers, and every product of them
/// an int64_t.
struct Matrices {
  std::span<const int64_t> batch_dims;
  int64_t batch = 1;  // the product of batch_dims
  lapack_int rows = 0;
  lapack_int cols = 0;
  int64_t size() const { return int64_t{rows} * cols; }  // elements per matrix
};

class Call {
 public:
  /// `family` is the routine without its letter ("getrf"); `letter` the type's.
  Call(const xla_ffi::CallFrame* frame, std::string_view family, char letter)
      : frame_(frame), family_(family), letter_(letter) {}

  /// The target's name, "lapack_sgetrf_ffi".
  std::string target() const;

  /// Refuses the call unless it has `operands` operands (`more_operands` allows that
  /// many more) and `results` results.
  void expect_counts(int64_t operands, int64_t results, int64_t more_operands = 0) const;
  int64_t operand_count() const { return frame_->args.size; }

  /// Operand or result `index`, refused unless it is a buffer of `dtype`.
  Array operand(int64_t index, int dtype, std::string_view name) const;
  Array result(int64_t index, int dtype, std::string_view name) const;

  /// `array` read as a stack of matrices (rank 2 or more).
  Matrices matrices(const Array& array) const;
  /// Refuses unless `array`'s dims are `batch_dims` followed by `trailing`.
  void expect_dims(const Array& array, std::span<const int64_t> batch_dims,
                   std::initializer_list<int64_t> trailing) const;

  /// The 8-bit attribute `name` (jaxlib's enums: 'L', 'U', ...), refused unless it is
  /// present and one of `allowed`.
  char char_attribute(std::string_view name, std::string_view allowed) const;
  /// The int32 attribute `name`, refused unless present.
  int32_t int_attribute(std::string_view name) const;
  /// The boolean attribute `name`, refused unless present.
  bool bool_attribute(std::string_view name) const;

  /// The LAPACK library; refused (FAILED_PRECONDITION) with what was tried when there is
  /// none.
  const Library& library() const;

  [[noreturn]] void refuse(const std::string& why, int code = xla_ffi::kErrorInvalidArgument) const;

 private:
  /// The scalar attribute `name` of `dtype`, refused unless present and so.
  const void* scalar_attribute(std::string_view name, int dtype, const char* type) const;
  Array buffer(const xla_ffi::Values& values, int expected_type, int64_t index, int dtype,
               std::string_view name, std::string_view kind) const;

  const xla_ffi::CallFrame* frame_;
  std::string_view family_;
  char letter_;
};

/// Copies `in` to `out` unless XLA made them one buffer (an output aliasing its operand).
template <typename T>
void copy_unless_same(const T* in, T* out, int64_t count) {
  if (in != out && count > 0) std::memmove(out, in, static_cast<size_t>(count) * sizeof(T));
}

/// Workspace for LAPACK, uninitialised (LAPACK writes before it reads).
template <typename T>
std::unique_ptr<T[]> workspace(int64_t count) {
  return std::make_unique_for_overwrite<T[]>(static_cast<size_t>(count < 1 ? 1 : count));
}

/// A workspace size that LAPACK reported in a T (its real part), as a LAPACK integer.
template <typename T>
lapack_int work_size(const Call& call, T reported) {
  const double size = static_cast<double>(std::real(reported));
  if (!(size >= 0) || size > 2147483647.0) {
    call.refuse("LAPACK reported a workspace of " + std::to_string(size) + " elements",
                xla_ffi::kErrorResourceExhausted);
  }
  return size < 1 ? 1 : static_cast<lapack_int>(size);
}

/// The boundary of every handler: answers XLA's metadata call, runs `body` on the call,
/// and turns a refusal or any exception into an FFI error. Never throws.
template <typename Body>
xla_ffi::Error* run_handler(xla_ffi::CallFrame* frame, std::string_view family, char letter,
                            Body&& body) noexcept;

/// An FFI error for `frame` with `code` and `message` (XLA copies the message).
xla_ffi::Error* make_error(const xla_ffi::CallFrame* frame, int code,
                           const std::string& message) noexcept;
/// An FFI error "lapack_<letter><family>_ffi: <why>", or `why` alone where even that
/// string cannot be made (out of memory).
xla_ffi::Error* make_error(const xla_ffi::CallFrame* frame, std::string_view family, char letter,
                           int code, const char* why) noexcept;

template <typename Body>
xla_ffi::Error* run_handler(xla_ffi::CallFrame* frame, std::string_view family, char letter,
                            Body&& body) noexcept {
  if (pjrt::is_metadata_call(frame)) {
    pjrt::answer_metadata_call(frame);
    return nullptr;
  }
  const Call call(frame, family, letter);
  try {
    if (frame->stage != xla_ffi::kStageExecute) return nullptr;  // nothing to prepare
    body(call);
    return nullptr;
  } catch (const Refusal& refusal) {
    return make_error(frame, refusal.code, refusal.message);
  } catch (const std::bad_alloc&) {
    return make_error(frame, family, letter, xla_ffi::kErrorResourceExhausted,
                      "out of memory for the call's workspace");
  } catch (...) {
    return make_error(frame, family, letter, xla_ffi::kErrorUnknown, "the handler failed");
  }
}

}  // namespace cyxla::lapack
