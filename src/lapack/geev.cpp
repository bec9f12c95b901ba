// geev: the eigendecomposition of general matrices (jnp.linalg.eig, eigvals). Operand x
// (batch..., n, n); attributes compute_left and compute_right ('V' or 'N'); results, for
// real types, the eigenvalues' real and imaginary parts wr, wi (batch..., n), the left and
// right eigenvectors vl, vr (batch..., n, n, complex) and info (batch...); for complex
// types w (batch..., n), vl, vr and info. As jaxlib's: a matrix with a value that is not
// finite is not given to LAPACK and gets info -4; real eigenvectors come from LAPACK packed
// (a conjugate pair as two real columns) and are unpacked into complex ones where info is
// 0; the workspace is the size LAPACK asks for. Eigenvectors not asked for are zeros.
#include <algorithm>
#include <cmath>

#include "lapack/call.hpp"
#include "lapack/handlers.hpp"

namespace cyxla::lapack {
namespace {

/// LAPACK's real eigenvectors, packed, as complex ones: where wi[j] != 0, columns j and j+1
/// hold the real and imaginary parts of the pair v_j = a + ib, v_{j+1} = a - ib.
template <typename R>
void unpack(lapack_int n, const R* wi, const R* packed, std::complex<R>* out) {
  const int64_t rows = n;
  for (int64_t j = 0; j < n;) {
    if (wi[j] == R(0) || std::isnan(wi[j]) || j + 1 == n) {
      for (int64_t k = 0; k < rows; ++k) out[j * rows + k] = {packed[j * rows + k], R(0)};
      ++j;
    } else {
      for (int64_t k = 0; k < rows; ++k) {
        const R re = packed[j * rows + k];
        const R im = packed[(j + 1) * rows + k];
        out[j * rows + k] = {re, im};
        out[(j + 1) * rows + k] = {re, -im};
      }
      j += 2;
    }
  }
}

}  // namespace

template <typename T>
xla_ffi::Error* geev(xla_ffi::CallFrame* frame) noexcept {
  using R = typename Element<T>::Real;
  using C = std::complex<R>;
  constexpr int kComplex = Element<C>::dtype;
  return run_handler(frame, "geev", Element<T>::letter, [&](const Call& call) {
    constexpr int kValues = is_complex<T> ? 1 : 2;  // w, or wr and wi
    call.expect_counts(1, kValues + 3);
    const Array x = call.operand(0, Element<T>::dtype, "x");
    const Matrices m = call.matrices(x);
    if (m.rows != m.cols) call.refuse("x holds " + std::to_string(m.rows) + "x" +
                                      std::to_string(m.cols) + " matrices, expected square ones");
    const char jobvl = call.char_attribute("compute_left", "NV");
    const char jobvr = call.char_attribute("compute_right", "NV");
    const lapack_int n = m.cols;
    Array values[2];
    for (int i = 0; i < kValues; ++i) {
      values[i] = call.result(i, Element<T>::dtype, kValues == 1 ? "w" : i == 0 ? "wr" : "wi");
      call.expect_dims(values[i], m.batch_dims, {n});
    }
    const Array vl = call.result(kValues, kComplex, "vl");
    const Array vr = call.result(kValues + 1, kComplex, "vr");
    const Array info = call.result(kValues + 2, xla_ffi::kDataTypeS32, "info");
    call.expect_dims(vl, m.batch_dims, {n, n});
    call.expect_dims(vr, m.batch_dims, {n, n});
    call.expect_dims(info, m.batch_dims, {});
    const Library& library = call.library();
    auto* fn = [&] {
      if constexpr (std::is_same_v<T, float>) return library.sgeev;
      else if constexpr (std::is_same_v<T, double>) return library.dgeev;
      else if constexpr (std::is_same_v<T, c64>) return library.cgeev;
      else return library.zgeev;
    }();
    if (m.batch == 0) return;

    const lapack_int lda = std::max(1, n);
    const int64_t size = m.size();
    lapack_int status = 0;
    T query{};
    const lapack_int ask = -1;
    const auto rwork = workspace<R>(2 * int64_t{n});  // complex types; LAPACK writes it even
                                                      // in the query
    if constexpr (is_complex<T>) {
      fn(&jobvl, &jobvr, &n, nullptr, &lda, nullptr, nullptr, &lda, nullptr, &lda, &query, &ask,
         rwork.get(), &status, 1, 1);
    } else {
      fn(&jobvl, &jobvr, &n, nullptr, &lda, nullptr, nullptr, nullptr, &lda, nullptr, &lda,
         &query, &ask, &status, 1, 1);
    }
    if (status != 0) call.refuse("the workspace query failed with info " + std::to_string(status));
    const lapack_int lwork = work_size(call, query);
    const auto work = workspace<T>(lwork);
    const auto a = workspace<T>(size);  // geev overwrites its matrix: a copy of each
    const auto* in = static_cast<const T*>(x.data);
    auto* lefts = static_cast<C*>(vl.data);
    auto* rights = static_cast<C*>(vr.data);
    auto* infos = static_cast<lapack_int*>(info.data);
    if (jobvl == 'N') std::fill_n(lefts, m.batch * size, C{});
    if (jobvr == 'N') std::fill_n(rights, m.batch * size, C{});
    if constexpr (is_complex<T>) {
      auto* w = static_cast<T*>(values[0].data);
      for (int64_t i = 0; i < m.batch; ++i) {
        std::copy_n(in + i * size, size, a.get());
        if (refused_not_finite(a.get(), size, infos + i)) continue;
        fn(&jobvl, &jobvr, &n, a.get(), &lda, w + i * n, lefts + i * size, &lda,
           rights + i * size, &lda, work.get(), &lwork, rwork.get(), infos + i, 1, 1);
      }
    } else {
      auto* wr = static_cast<T*>(values[0].data);
      auto* wi = static_cast<T*>(values[1].data);
      const auto packed_left = workspace<T>(size);
      const auto packed_right = workspace<T>(size);
      for (int64_t i = 0; i < m.batch; ++i) {
        std::copy_n(in + i * size, size, a.get());
        if (refused_not_finite(a.get(), size, infos + i)) continue;
        fn(&jobvl, &jobvr, &n, a.get(), &lda, wr + i * n, wi + i * n, packed_left.get(), &lda,
           packed_right.get(), &lda, work.get(), &lwork, infos + i, 1, 1);
        if (infos[i] != 0) continue;
        if (jobvl == 'V') unpack(n, wi + i * n, packed_left.get(), lefts + i * size);
        if (jobvr == 'V') unpack(n, wi + i * n, packed_right.get(), rights + i * size);
      }
    }
  });
}

template xla_ffi::Error* geev<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* geev<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* geev<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* geev<c128>(xla_ffi::CallFrame*) noexcept;

}  // namespace cyxla::lapack
