// gesdd: the singular value decomposition by divide and conquer (jnp.linalg.svd,
// svdvals, pinv, matrix_rank, norm(ord=2)). Operand x (batch..., m, n); attribute mode ('A':
// full U and V^H, 'S': the first min(m, n) columns, 'N': values only); results x_out (x's
// dims, overwritten), s (batch..., min(m, n), real), u (batch..., m, m or min(m, n)), vt
// (batch..., n or min(m, n), n) and info (batch...). The workspace is the size LAPACK asks
// for, queried as jaxlib queries it; the integer and real workspaces have jaxlib's sizes.
// Unlike jaxlib's, a matrix with a value that is not finite is not given to LAPACK, whose
// bidiagonal QR iteration never ends on it: it gets info -4, which JAX turns into NaN.
#include <algorithm>
#include <limits>

#include "lapack/call.hpp"
#include "lapack/handlers.hpp"
#include "lapack/svd_contract.hpp"

namespace cyxla::lapack {

template <typename T>
xla_ffi::Error* gesdd(xla_ffi::CallFrame* frame) noexcept {
  using R = typename Element<T>::Real;
  return run_handler(frame, "gesdd", Element<T>::letter, [&](const Call& call) {
    const auto& [x, out, s, u, vt, info, m, mu, mvt, mode, k] = svd_arrays<T>(call);
    const Library& library = call.library();
    auto* fn = [&] {
      if constexpr (std::is_same_v<T, float>) return library.sgesdd;
      else if constexpr (std::is_same_v<T, double>) return library.dgesdd;
      else if constexpr (std::is_same_v<T, c64>) return library.cgesdd;
      else return library.zgesdd;
    }();

    auto* a = static_cast<T*>(out.data);
    copy_unless_same(static_cast<const T*>(x.data), a, m.batch * m.size());
    if (m.batch == 0) return;
    const lapack_int lda = std::max(1, m.rows);
    const lapack_int ldu = std::max(1, m.rows);
    const lapack_int ldvt = std::max(1, mvt.rows);
    lapack_int info_query = 0;
    T query{};
    const lapack_int ask = -1;
    const lapack_int ldvt_query = std::max(1, mode == 'A' ? m.cols : k);
    if constexpr (is_complex<T>) {
      fn(&mode, &m.rows, &m.cols, nullptr, &lda, nullptr, nullptr, &ldu, nullptr, &ldvt_query,
         &query, &ask, nullptr, nullptr, &info_query, 1);
    } else {
      fn(&mode, &m.rows, &m.cols, nullptr, &lda, nullptr, nullptr, &ldu, nullptr, &ldvt_query,
         &query, &ask, nullptr, &info_query, 1);
    }
    if (info_query != 0) {
      call.refuse("the workspace query failed with info " + std::to_string(info_query));
    }
    const lapack_int lwork = work_size(call, query);
    const auto work = workspace<T>(lwork);
    const auto iwork = workspace<lapack_int>(8 * int64_t{k});
    auto* values = static_cast<R*>(s.data);
    auto* us = static_cast<T*>(u.data);
    auto* vts = static_cast<T*>(vt.data);
    auto* infos = static_cast<lapack_int*>(info.data);
    const int64_t u_step = mode == 'N' ? 0 : mu.size();
    const int64_t vt_step = mode == 'N' ? 0 : mvt.size();
    if constexpr (is_complex<T>) {
      const int64_t kk = k;
      const int64_t big = std::max(m.rows, m.cols);
      const int64_t rsize = mode == 'N' ? 7 * kk
                                        : std::max(5 * kk * kk + 5 * kk,
                                                   2 * big * kk + 2 * kk * kk + kk);
      const auto rwork = workspace<R>(rsize);
      for (int64_t i = 0; i < m.batch; ++i) {
        if (refused_not_finite(a + i * m.size(), m.size(), infos + i)) continue;
        fn(&mode, &m.rows, &m.cols, a + i * m.size(), &lda, values + i * k, us + i * u_step,
           &ldu, vts + i * vt_step, &ldvt, work.get(), &lwork, rwork.get(), iwork.get(),
           infos + i, 1);
      }
    } else {
      for (int64_t i = 0; i < m.batch; ++i) {
        if (refused_not_finite(a + i * m.size(), m.size(), infos + i)) continue;
        fn(&mode, &m.rows, &m.cols, a + i * m.size(), &lda, values + i * k, us + i * u_step,
           &ldu, vts + i * vt_step, &ldvt, work.get(), &lwork, iwork.get(), infos + i, 1);
      }
    }
  });
}

template xla_ffi::Error* gesdd<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gesdd<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gesdd<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gesdd<c128>(xla_ffi::CallFrame*) noexcept;

}  // namespace cyxla::lapack
