// gesvd: the singular value decomposition by QR iteration (jax.lax.linalg.svd with
// algorithm=SvdAlgorithm.QR). The contract of gesdd (svd_contract.hpp): operand x (batch..., m,
// n); attribute mode ('A', 'S' or 'N', for U and V^H alike); results x_out, s (real), u,
// vt and info. The workspace is the size LAPACK asks for; complex types take a real
// workspace of 5 min(m, n), LAPACK's size. A matrix with a value that is not finite gets
// info -4 without LAPACK, as in gesdd.cpp.
#include <algorithm>

#include "lapack/call.hpp"
#include "lapack/handlers.hpp"
#include "lapack/svd_contract.hpp"

namespace cyxla::lapack {

template <typename T>
xla_ffi::Error* gesvd(xla_ffi::CallFrame* frame) noexcept {
  using R = typename Element<T>::Real;
  return run_handler(frame, "gesvd", Element<T>::letter, [&](const Call& call) {
    const auto& [x, out, s, u, vt, info, m, mu, mvt, mode, k] = svd_arrays<T>(call);
    const Library& library = call.library();
    auto* fn = [&] {
      if constexpr (std::is_same_v<T, float>) return library.sgesvd;
      else if constexpr (std::is_same_v<T, double>) return library.dgesvd;
      else if constexpr (std::is_same_v<T, c64>) return library.cgesvd;
      else return library.zgesvd;
    }();

    auto* a = static_cast<T*>(out.data);
    copy_unless_same(static_cast<const T*>(x.data), a, m.batch * m.size());
    if (m.batch == 0) return;
    const lapack_int lda = std::max(1, m.rows);
    const lapack_int ldu = std::max(1, m.rows);
    const lapack_int ldvt = std::max(1, mvt.rows);
    lapack_int status = 0;
    T query{};
    const lapack_int ask = -1;
    const auto rwork = workspace<R>(is_complex<T> ? 5 * int64_t{k} : 1);  // complex only
    if constexpr (is_complex<T>) {
      fn(&mode, &mode, &m.rows, &m.cols, nullptr, &lda, nullptr, nullptr, &ldu, nullptr, &ldvt,
         &query, &ask, rwork.get(), &status, 1, 1);
    } else {
      fn(&mode, &mode, &m.rows, &m.cols, nullptr, &lda, nullptr, nullptr, &ldu, nullptr, &ldvt,
         &query, &ask, &status, 1, 1);
    }
    if (status != 0) call.refuse("the workspace query failed with info " + std::to_string(status));
    const lapack_int lwork = work_size(call, query);
    const auto work = workspace<T>(lwork);
    auto* values = static_cast<R*>(s.data);
    auto* us = static_cast<T*>(u.data);
    auto* vts = static_cast<T*>(vt.data);
    auto* infos = static_cast<lapack_int*>(info.data);
    const int64_t u_step = mode == 'N' ? 0 : mu.size();
    const int64_t vt_step = mode == 'N' ? 0 : mvt.size();
    for (int64_t i = 0; i < m.batch; ++i) {
      if (refused_not_finite(a + i * m.size(), m.size(), infos + i)) continue;
      if constexpr (is_complex<T>) {
        fn(&mode, &mode, &m.rows, &m.cols, a + i * m.size(), &lda, values + i * k,
           us + i * u_step, &ldu, vts + i * vt_step, &ldvt, work.get(), &lwork, rwork.get(),
           infos + i, 1, 1);
      } else {
        fn(&mode, &mode, &m.rows, &m.cols, a + i * m.size(), &lda, values + i * k,
           us + i * u_step, &ldu, vts + i * vt_step, &ldvt, work.get(), &lwork, infos + i, 1, 1);
      }
    }
  });
}

template xla_ffi::Error* gesvd<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gesvd<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gesvd<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gesvd<c128>(xla_ffi::CallFrame*) noexcept;

}  // namespace cyxla::lapack
