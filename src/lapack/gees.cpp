// gees: the Schur decomposition (jax.scipy.linalg.schur). Operand x (batch..., n, n);
// attributes mode ('V': Schur vectors too, 'N') and sort ('N' only: ordering the
// eigenvalues needs a selection function, which jaxlib does not support either); results
// x_out (the Schur form T, x's dims), vs (batch..., n, n), the eigenvalues (real types: wr
// and wi, complex types: w; batch..., n), sdim and info (batch...). The workspace is the
// size LAPACK asks for, as jaxlib's.
#include <algorithm>

#include "lapack/call.hpp"
#include "lapack/handlers.hpp"

namespace cyxla::lapack {

template <typename T>
xla_ffi::Error* gees(xla_ffi::CallFrame* frame) noexcept {
  using R = typename Element<T>::Real;
  return run_handler(frame, "gees", Element<T>::letter, [&](const Call& call) {
    constexpr int kValues = is_complex<T> ? 1 : 2;  // w, or wr and wi
    call.expect_counts(1, kValues + 4);
    const Array x = call.operand(0, Element<T>::dtype, "x");
    const Matrices m = call.matrices(x);
    if (m.rows != m.cols) call.refuse("x holds " + std::to_string(m.rows) + "x" +
                                      std::to_string(m.cols) + " matrices, expected square ones");
    const char jobvs = call.char_attribute("mode", "NV");
    const char sort = call.char_attribute("sort", "NS");
    if (sort != 'N') {
      call.refuse("sorting the eigenvalues (sort 'S') is not supported, as in jaxlib",
                  xla_ffi::kErrorUnimplemented);
    }
    const lapack_int n = m.cols;
    const Array out = call.result(0, Element<T>::dtype, "x_out");
    const Array vs = call.result(1, Element<T>::dtype, "schur_vectors");
    call.expect_dims(out, m.batch_dims, {n, n});
    call.expect_dims(vs, m.batch_dims, {n, n});
    Array values[2];
    for (int i = 0; i < kValues; ++i) {
      values[i] = call.result(2 + i, Element<T>::dtype,
                              kValues == 1 ? "eigenvalues" : i == 0 ? "wr" : "wi");
      call.expect_dims(values[i], m.batch_dims, {n});
    }
    const Array sdim = call.result(2 + kValues, xla_ffi::kDataTypeS32, "sdim");
    const Array info = call.result(3 + kValues, xla_ffi::kDataTypeS32, "info");
    call.expect_dims(sdim, m.batch_dims, {});
    call.expect_dims(info, m.batch_dims, {});
    const Library& library = call.library();
    auto* fn = [&] {
      if constexpr (std::is_same_v<T, float>) return library.sgees;
      else if constexpr (std::is_same_v<T, double>) return library.dgees;
      else if constexpr (std::is_same_v<T, c64>) return library.cgees;
      else return library.zgees;
    }();

    auto* a = static_cast<T*>(out.data);
    copy_unless_same(static_cast<const T*>(x.data), a, m.batch * m.size());
    if (m.batch == 0) return;
    const lapack_int lda = std::max(1, n);
    lapack_int status = 0;
    T query{};
    const lapack_int ask = -1;
    if constexpr (is_complex<T>) {
      fn(&jobvs, &sort, nullptr, &n, nullptr, &lda, nullptr, nullptr, nullptr, &lda, &query,
         &ask, nullptr, nullptr, &status, 1, 1);
    } else {
      fn(&jobvs, &sort, nullptr, &n, nullptr, &lda, nullptr, nullptr, nullptr, nullptr, &lda,
         &query, &ask, nullptr, &status, 1, 1);
    }
    if (status != 0) call.refuse("the workspace query failed with info " + std::to_string(status));
    const lapack_int lwork = work_size(call, query);
    const auto work = workspace<T>(lwork);
    auto* vectors = static_cast<T*>(vs.data);
    auto* sdims = static_cast<lapack_int*>(sdim.data);
    auto* infos = static_cast<lapack_int*>(info.data);
    if constexpr (is_complex<T>) {
      const auto rwork = workspace<R>(n);
      auto* w = static_cast<T*>(values[0].data);
      for (int64_t i = 0; i < m.batch; ++i) {
        fn(&jobvs, &sort, nullptr, &n, a + i * m.size(), &lda, sdims + i, w + i * n,
           vectors + i * m.size(), &lda, work.get(), &lwork, rwork.get(), nullptr, infos + i, 1,
           1);
      }
    } else {
      auto* wr = static_cast<T*>(values[0].data);
      auto* wi = static_cast<T*>(values[1].data);
      for (int64_t i = 0; i < m.batch; ++i) {
        fn(&jobvs, &sort, nullptr, &n, a + i * m.size(), &lda, sdims + i, wr + i * n,
           wi + i * n, vectors + i * m.size(), &lda, work.get(), &lwork, nullptr, infos + i, 1,
           1);
      }
    }
  });
}

template xla_ffi::Error* gees<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gees<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gees<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gees<c128>(xla_ffi::CallFrame*) noexcept;

}  // namespace cyxla::lapack
