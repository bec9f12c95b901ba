// getrf: the LU factorisation with partial pivoting (jnp.linalg.solve, inv, det, slogdet,
// jax.scipy.linalg.lu). Operand x (batch..., m, n); results x_out (x's dims), ipiv
// (batch..., min(m, n)) and info (batch...), LAPACK's own.
#include <algorithm>

#include "lapack/call.hpp"
#include "lapack/handlers.hpp"

namespace cyxla::lapack {

template <typename T>
xla_ffi::Error* getrf(xla_ffi::CallFrame* frame) noexcept {
  return run_handler(frame, "getrf", Element<T>::letter, [&](const Call& call) {
    call.expect_counts(1, 3);
    const Array x = call.operand(0, Element<T>::dtype, "x");
    const Matrices m = call.matrices(x);
    const Array out = call.result(0, Element<T>::dtype, "x_out");
    const Array ipiv = call.result(1, xla_ffi::kDataTypeS32, "ipiv");
    const Array info = call.result(2, xla_ffi::kDataTypeS32, "info");
    const lapack_int k = std::min(m.rows, m.cols);
    call.expect_dims(out, m.batch_dims, {m.rows, m.cols});
    call.expect_dims(ipiv, m.batch_dims, {k});
    call.expect_dims(info, m.batch_dims, {});
    auto* fn = routines_of<T>(call.library()).getrf;

    auto* a = static_cast<T*>(out.data);
    copy_unless_same(static_cast<const T*>(x.data), a, m.batch * m.size());
    auto* pivots = static_cast<lapack_int*>(ipiv.data);
    auto* infos = static_cast<lapack_int*>(info.data);
    const lapack_int lda = std::max(1, m.rows);
    for (int64_t i = 0; i < m.batch; ++i) {
      fn(&m.rows, &m.cols, a + i * m.size(), &lda, pivots + i * k, infos + i);
    }
  });
}

template xla_ffi::Error* getrf<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* getrf<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* getrf<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* getrf<c128>(xla_ffi::CallFrame*) noexcept;

}  // namespace cyxla::lapack
