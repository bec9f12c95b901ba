// geqrf, geqp3 and orgqr/ungqr: the QR factorisation (jnp.linalg.qr) as Householder
// reflectors, with column pivoting (jax.scipy.linalg.qr(pivoting=True): geqp3 takes the
// pivots' start, jpvt (batch..., n), and returns them), Q built from reflectors (also
// jax.lax.linalg.householder_product), and ormqr/unmqr: Q (or Q^T, Q^H) applied to c from
// the left or the right without forming it (jax.lax.linalg.ormqr: operands a, tau, c;
// boolean attributes left and transpose; result c_out). geqrf: operand x
// (batch..., m, n); results x_out (x's dims) and tau (batch..., min(m, n)). orgqr: operands
// x (batch..., m, n) with m >= n and tau (batch..., k) with k <= n; result x_out. Neither
// reports an info. The workspace is the size LAPACK asks for, as jaxlib's: LAPACK
// blocks its work by it, so another size could round differently.
#include <algorithm>

#include "lapack/call.hpp"
#include "lapack/handlers.hpp"

namespace cyxla::lapack {

template <typename T>
xla_ffi::Error* geqrf(xla_ffi::CallFrame* frame) noexcept {
  return run_handler(frame, "geqrf", Element<T>::letter, [&](const Call& call) {
    call.expect_counts(1, 2);
    const Array x = call.operand(0, Element<T>::dtype, "x");
    const Matrices m = call.matrices(x);
    const Array out = call.result(0, Element<T>::dtype, "x_out");
    const Array tau = call.result(1, Element<T>::dtype, "tau");
    const lapack_int k = std::min(m.rows, m.cols);
    call.expect_dims(out, m.batch_dims, {m.rows, m.cols});
    call.expect_dims(tau, m.batch_dims, {k});
    auto* fn = routines_of<T>(call.library()).geqrf;

    auto* a = static_cast<T*>(out.data);
    copy_unless_same(static_cast<const T*>(x.data), a, m.batch * m.size());
    if (m.batch == 0) return;
    const lapack_int lda = std::max(1, m.rows);
    lapack_int info = 0;
    T query{};
    const lapack_int ask = -1;
    fn(&m.rows, &m.cols, nullptr, &lda, nullptr, &query, &ask, &info);
    if (info != 0) call.refuse("the workspace query failed with info " + std::to_string(info));
    const lapack_int lwork = work_size(call, query);
    const auto work = workspace<T>(lwork);
    auto* taus = static_cast<T*>(tau.data);
    for (int64_t i = 0; i < m.batch; ++i) {
      fn(&m.rows, &m.cols, a + i * m.size(), &lda, taus + i * k, work.get(), &lwork, &info);
    }
  });
}

template <typename T>
xla_ffi::Error* geqp3(xla_ffi::CallFrame* frame) noexcept {
  using R = typename Element<T>::Real;
  return run_handler(frame, "geqp3", Element<T>::letter, [&](const Call& call) {
    call.expect_counts(2, 3);
    const Array x = call.operand(0, Element<T>::dtype, "x");
    const Matrices m = call.matrices(x);
    const Array jpvt = call.operand(1, xla_ffi::kDataTypeS32, "jpvt");
    const Array out = call.result(0, Element<T>::dtype, "x_out");
    const Array jpvt_out = call.result(1, xla_ffi::kDataTypeS32, "jpvt_out");
    const Array tau = call.result(2, Element<T>::dtype, "tau");
    const lapack_int k = std::min(m.rows, m.cols);
    call.expect_dims(jpvt, m.batch_dims, {m.cols});
    call.expect_dims(out, m.batch_dims, {m.rows, m.cols});
    call.expect_dims(jpvt_out, m.batch_dims, {m.cols});
    call.expect_dims(tau, m.batch_dims, {k});
    const Library& library = call.library();
    auto* fn = [&] {
      if constexpr (std::is_same_v<T, float>) return library.sgeqp3;
      else if constexpr (std::is_same_v<T, double>) return library.dgeqp3;
      else if constexpr (std::is_same_v<T, c64>) return library.cgeqp3;
      else return library.zgeqp3;
    }();

    auto* a = static_cast<T*>(out.data);
    copy_unless_same(static_cast<const T*>(x.data), a, m.batch * m.size());
    auto* pivots = static_cast<lapack_int*>(jpvt_out.data);
    copy_unless_same(static_cast<const lapack_int*>(jpvt.data), pivots, m.batch * m.cols);
    if (m.batch == 0) return;
    const lapack_int lda = std::max(1, m.rows);
    lapack_int info = 0;
    T query{};
    const lapack_int ask = -1;
    if constexpr (is_complex<T>) {
      fn(&m.rows, &m.cols, nullptr, &lda, nullptr, nullptr, &query, &ask, nullptr, &info);
    } else {
      fn(&m.rows, &m.cols, nullptr, &lda, nullptr, nullptr, &query, &ask, &info);
    }
    if (info != 0) call.refuse("the workspace query failed with info " + std::to_string(info));
    const lapack_int lwork = work_size(call, query);
    const auto work = workspace<T>(lwork);
    auto* taus = static_cast<T*>(tau.data);
    const auto rwork = workspace<R>(is_complex<T> ? 2 * int64_t{m.cols} : 1);  // complex only
    for (int64_t i = 0; i < m.batch; ++i) {
      if constexpr (is_complex<T>) {
        fn(&m.rows, &m.cols, a + i * m.size(), &lda, pivots + i * m.cols, taus + i * k,
           work.get(), &lwork, rwork.get(), &info);
      } else {
        fn(&m.rows, &m.cols, a + i * m.size(), &lda, pivots + i * m.cols, taus + i * k,
           work.get(), &lwork, &info);
      }
    }
  });
}

template <typename T>
xla_ffi::Error* orgqr(xla_ffi::CallFrame* frame) noexcept {
  return run_handler(frame, is_complex<T> ? "ungqr" : "orgqr", Element<T>::letter,
                     [&](const Call& call) {
    call.expect_counts(2, 1);
    const Array x = call.operand(0, Element<T>::dtype, "x");
    const Matrices m = call.matrices(x);
    const Array tau = call.operand(1, Element<T>::dtype, "tau");
    if (tau.dims.empty()) call.refuse("tau is a scalar, expected a vector or a batch of them");
    const int64_t k = tau.dims.back();
    call.expect_dims(tau, m.batch_dims, {k});
    if (m.rows < m.cols || m.cols < k) {
      call.refuse("x holds " + std::to_string(m.rows) + "x" + std::to_string(m.cols) +
                  " matrices and tau " + std::to_string(k) +
                  " reflectors each, expected rows >= columns >= reflectors");
    }
    const Array out = call.result(0, Element<T>::dtype, "x_out");
    call.expect_dims(out, m.batch_dims, {m.rows, m.cols});
    auto* fn = routines_of<T>(call.library()).orgqr;

    auto* a = static_cast<T*>(out.data);
    copy_unless_same(static_cast<const T*>(x.data), a, m.batch * m.size());
    if (m.batch == 0) return;
    const auto reflectors = static_cast<lapack_int>(k);
    const lapack_int lda = std::max(1, m.rows);
    lapack_int info = 0;
    T query{};
    const lapack_int ask = -1;
    fn(&m.rows, &m.cols, &reflectors, nullptr, &lda, nullptr, &query, &ask, &info);
    if (info != 0) call.refuse("the workspace query failed with info " + std::to_string(info));
    const lapack_int lwork = work_size(call, query);
    const auto work = workspace<T>(lwork);
    const auto* taus = static_cast<const T*>(tau.data);
    for (int64_t i = 0; i < m.batch; ++i) {
      fn(&m.rows, &m.cols, &reflectors, a + i * m.size(), &lda, taus + i * k, work.get(),
         &lwork, &info);
    }
  });
}

template <typename T>
xla_ffi::Error* ormqr(xla_ffi::CallFrame* frame) noexcept {
  return run_handler(frame, is_complex<T> ? "unmqr" : "ormqr", Element<T>::letter,
                     [&](const Call& call) {
    call.expect_counts(3, 1);
    const Array a = call.operand(0, Element<T>::dtype, "a");
    const Matrices ma = call.matrices(a);
    const Array tau = call.operand(1, Element<T>::dtype, "tau");
    const Array c = call.operand(2, Element<T>::dtype, "c");
    const Matrices mc = call.matrices(c);
    const Array out = call.result(0, Element<T>::dtype, "c_out");
    const bool left = call.bool_attribute("left");
    const bool transpose = call.bool_attribute("transpose");
    if (tau.dims.empty()) call.refuse("tau is a scalar, expected a vector or a batch of them");
    const int64_t k = tau.dims.back();
    call.expect_dims(tau, mc.batch_dims, {k});
    // Q is order (left ? m : n), from k reflectors in the columns of a.
    const lapack_int order = left ? mc.rows : mc.cols;
    if (ma.rows != order || ma.cols < k || k > order) {
      call.refuse("a holds " + std::to_string(ma.rows) + "x" + std::to_string(ma.cols) +
                  " matrices and tau " + std::to_string(k) + " reflectors each, for Q of order " +
                  std::to_string(order) + ": expected a with " + std::to_string(order) +
                  " rows and at least as many columns as reflectors, and no more reflectors "
                  "than the order");
    }
    call.expect_dims(a, mc.batch_dims, {ma.rows, ma.cols});
    call.expect_dims(out, mc.batch_dims, {mc.rows, mc.cols});
    auto* fn = routines_of<T>(call.library()).ormqr;

    auto* result = static_cast<T*>(out.data);
    copy_unless_same(static_cast<const T*>(c.data), result, mc.batch * mc.size());
    if (mc.batch == 0) return;
    const char side = left ? 'L' : 'R';
    const char trans = !transpose ? 'N' : is_complex<T> ? 'C' : 'T';
    const auto reflectors = static_cast<lapack_int>(k);
    const lapack_int lda = std::max(1, ma.rows);
    const lapack_int ldc = std::max(1, mc.rows);
    lapack_int info = 0;
    T query{};
    const lapack_int ask = -1;
    fn(&side, &trans, &mc.rows, &mc.cols, &reflectors, nullptr, &lda, nullptr, nullptr, &ldc,
       &query, &ask, &info, 1, 1);
    if (info != 0) call.refuse("the workspace query failed with info " + std::to_string(info));
    const lapack_int lwork = work_size(call, query);
    const auto work = workspace<T>(lwork);
    const auto* as = static_cast<const T*>(a.data);
    const auto* taus = static_cast<const T*>(tau.data);
    for (int64_t i = 0; i < mc.batch; ++i) {
      fn(&side, &trans, &mc.rows, &mc.cols, &reflectors, as + i * ma.size(), &lda, taus + i * k,
         result + i * mc.size(), &ldc, work.get(), &lwork, &info, 1, 1);
    }
  });
}

template xla_ffi::Error* geqrf<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* geqrf<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* geqrf<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* geqrf<c128>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* geqp3<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* geqp3<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* geqp3<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* geqp3<c128>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* ormqr<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* ormqr<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* ormqr<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* ormqr<c128>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* orgqr<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* orgqr<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* orgqr<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* orgqr<c128>(xla_ffi::CallFrame*) noexcept;

}  // namespace cyxla::lapack
