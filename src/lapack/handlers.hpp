// cyxla's XLA FFI handlers of jaxlib's LAPACK targets (lapack_<letter><routine>_ffi), one
// per routine and element type, and their table. The contract of each (operands,
// attributes, results, the `info` it reports) is jaxlib's (jaxlib/cpu/lapack_kernels.cc),
// which JAX promises to keep for serialized programs.
#pragma once

#include <span>
#include <string_view>

#include "lapack/library.hpp"
#include "pjrt/xla_ffi.hpp"

namespace cyxla::lapack {

/// One custom-call target and its handler.
struct Target {
  std::string_view name;
  xla_ffi::Handler* handler;
};

/// Every target cyxla handles, by name.
std::span<const Target> targets();

/// The handler of `name`, or null when cyxla has none.
xla_ffi::Handler* handler_of(std::string_view name);

// The handlers, for T in float, double, c64, c128 (instantiated in their files).
template <typename T>
xla_ffi::Error* getrf(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* trsm(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* potrf(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* geqrf(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* geqp3(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* orgqr(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* syevd(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* gesdd(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* gesvd(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* ormqr(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* geev(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* gees(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* gehrd(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* sytrd(xla_ffi::CallFrame* frame) noexcept;
template <typename T>
xla_ffi::Error* gtsv(xla_ffi::CallFrame* frame) noexcept;

/// The routines of T in `library`.
template <typename T>
const auto& routines_of(const Library& library) {
  if constexpr (std::is_same_v<T, float>) return library.s;
  else if constexpr (std::is_same_v<T, double>) return library.d;
  else if constexpr (std::is_same_v<T, c64>) return library.c;
  else return library.z;
}

}  // namespace cyxla::lapack
