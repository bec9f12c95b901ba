// sytrd/hetrd: the reduction of a symmetric or Hermitian matrix to real tridiagonal form
// (jax.lax.linalg.tridiagonal). Operand x (batch..., n, n); attribute uplo; results x_out
// (x's dims: the reflectors), the diagonal d (batch..., n) and off-diagonal e (batch...,
// n - 1), both real, tau (batch..., n - 1) and info (batch...). The workspace is the size
// LAPACK asks for, queried as jaxlib queries it (with uplo 'L').
#include <algorithm>

#include "lapack/call.hpp"
#include "lapack/handlers.hpp"

namespace cyxla::lapack {

template <typename T>
xla_ffi::Error* sytrd(xla_ffi::CallFrame* frame) noexcept {
  using R = typename Element<T>::Real;
  return run_handler(frame, is_complex<T> ? "hetrd" : "sytrd", Element<T>::letter,
                     [&](const Call& call) {
    call.expect_counts(1, 5);
    const Array x = call.operand(0, Element<T>::dtype, "x");
    const Matrices m = call.matrices(x);
    if (m.rows != m.cols) call.refuse("x holds " + std::to_string(m.rows) + "x" +
                                      std::to_string(m.cols) + " matrices, expected square ones");
    const Array out = call.result(0, Element<T>::dtype, "x_out");
    const Array d = call.result(1, Element<R>::dtype, "diagonal");
    const Array e = call.result(2, Element<R>::dtype, "off_diagonal");
    const Array tau = call.result(3, Element<T>::dtype, "tau");
    const Array info = call.result(4, xla_ffi::kDataTypeS32, "info");
    const char uplo = call.char_attribute("uplo", "LU");
    const lapack_int n = m.cols;
    const lapack_int off = std::max(0, n - 1);
    call.expect_dims(out, m.batch_dims, {n, n});
    call.expect_dims(d, m.batch_dims, {n});
    call.expect_dims(e, m.batch_dims, {off});
    call.expect_dims(tau, m.batch_dims, {off});
    call.expect_dims(info, m.batch_dims, {});
    auto* fn = routines_of<T>(call.library()).sytrd;

    auto* a = static_cast<T*>(out.data);
    copy_unless_same(static_cast<const T*>(x.data), a, m.batch * m.size());
    if (m.batch == 0) return;
    const lapack_int lda = std::max(1, n);
    lapack_int status = 0;
    T query{};
    const lapack_int ask = -1;
    const char query_uplo = 'L';
    fn(&query_uplo, &n, nullptr, &lda, nullptr, nullptr, nullptr, &query, &ask, &status, 1);
    if (status != 0) call.refuse("the workspace query failed with info " + std::to_string(status));
    const lapack_int lwork = work_size(call, query);
    const auto work = workspace<T>(lwork);
    auto* ds = static_cast<R*>(d.data);
    auto* es = static_cast<R*>(e.data);
    auto* taus = static_cast<T*>(tau.data);
    auto* infos = static_cast<lapack_int*>(info.data);
    for (int64_t i = 0; i < m.batch; ++i) {
      fn(&uplo, &n, a + i * m.size(), &lda, ds + i * n, es + i * off, taus + i * off, work.get(),
         &lwork, infos + i, 1);
    }
  });
}

template xla_ffi::Error* sytrd<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* sytrd<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* sytrd<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* sytrd<c128>(xla_ffi::CallFrame*) noexcept;

}  // namespace cyxla::lapack
