// syevd/heevd: the eigendecomposition of symmetric or Hermitian matrices by divide and
// conquer (jnp.linalg.eigh, eigvalsh). Operand x (batch..., n, n); attributes uplo and mode
// ('V': eigenvectors too, 'N': values only); results x_out (the eigenvectors, x's dims),
// eigenvalues (batch..., n, real) and info (batch...). The workspaces have the sizes
// jaxlib gives them (LAPACK's documented minimum for the mode), not LAPACK's optimum: the
// reduction blocks its work by them, and the same sizes give the same bits.
#include <algorithm>
#include <limits>

#include "lapack/call.hpp"
#include "lapack/handlers.hpp"

namespace cyxla::lapack {
namespace {

lapack_int checked_size(const Call& call, int64_t size, const char* what) {
  if (size > std::numeric_limits<lapack_int>::max()) {
    call.refuse(std::string("the ") + what + " workspace of " + std::to_string(size) +
                " elements exceeds LAPACK's 32-bit integers");
  }
  return static_cast<lapack_int>(std::max<int64_t>(size, 1));
}

}  // namespace

template <typename T>
xla_ffi::Error* syevd(xla_ffi::CallFrame* frame) noexcept {
  using R = typename Element<T>::Real;
  return run_handler(frame, is_complex<T> ? "heevd" : "syevd", Element<T>::letter,
                     [&](const Call& call) {
    call.expect_counts(1, 3);
    const Array x = call.operand(0, Element<T>::dtype, "x");
    const Matrices m = call.matrices(x);
    if (m.rows != m.cols) call.refuse("x holds " + std::to_string(m.rows) + "x" +
                                      std::to_string(m.cols) + " matrices, expected square ones");
    const Array out = call.result(0, Element<T>::dtype, "x_out");
    const Array values = call.result(1, Element<R>::dtype, "eigenvalues");
    const Array info = call.result(2, xla_ffi::kDataTypeS32, "info");
    const char uplo = call.char_attribute("uplo", "LU");
    const char mode = call.char_attribute("mode", "NV");
    call.expect_dims(out, m.batch_dims, {m.rows, m.cols});
    call.expect_dims(values, m.batch_dims, {m.rows});
    call.expect_dims(info, m.batch_dims, {});
    const Library& library = call.library();

    auto* a = static_cast<T*>(out.data);
    copy_unless_same(static_cast<const T*>(x.data), a, m.batch * m.size());
    const int64_t n = m.rows;
    const bool vectors = mode == 'V';
    const lapack_int lda = std::max(1, m.rows);
    const lapack_int liwork = checked_size(call, vectors ? 3 + 5 * n : 1, "integer");
    const auto iwork = workspace<lapack_int>(liwork);
    auto* w = static_cast<R*>(values.data);
    auto* infos = static_cast<lapack_int*>(info.data);
    if constexpr (is_complex<T>) {
      const lapack_int lwork = checked_size(call, vectors ? 2 * n + n * n : n + 1, "complex");
      const lapack_int lrwork =
          checked_size(call, vectors ? 1 + 5 * n + 2 * n * n : std::max<int64_t>(n, 1), "real");
      const auto work = workspace<T>(lwork);
      const auto rwork = workspace<R>(lrwork);
      auto* fn = [&] {
        if constexpr (std::is_same_v<T, c64>) return library.cheevd;
        else return library.zheevd;
      }();
      for (int64_t i = 0; i < m.batch; ++i) {
        fn(&mode, &uplo, &m.rows, a + i * m.size(), &lda, w + i * n, work.get(), &lwork,
           rwork.get(), &lrwork, iwork.get(), &liwork, infos + i, 1, 1);
      }
    } else {
      const lapack_int lwork = checked_size(call, vectors ? 1 + 6 * n + 2 * n * n : 2 * n + 1, "real");
      const auto work = workspace<T>(lwork);
      auto* fn = [&] {
        if constexpr (std::is_same_v<T, float>) return library.ssyevd;
        else return library.dsyevd;
      }();
      for (int64_t i = 0; i < m.batch; ++i) {
        fn(&mode, &uplo, &m.rows, a + i * m.size(), &lda, w + i * n, work.get(), &lwork,
           iwork.get(), &liwork, infos + i, 1, 1);
      }
    }
  });
}

template xla_ffi::Error* syevd<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* syevd<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* syevd<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* syevd<c128>(xla_ffi::CallFrame*) noexcept;

}  // namespace cyxla::lapack
