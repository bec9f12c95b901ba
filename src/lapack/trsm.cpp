// trsm: the triangular solve of BLAS (jax.scipy.linalg.solve_triangular, and the two
// solves after jnp.linalg.solve's LU). Operands a (batch..., k, k), b (batch..., m, n) and,
// in programs from older jaxlibs, a scalar alpha; attributes side, uplo, trans_x, diag;
// result the solution (b's dims), with k = m for side 'L' and n for 'R'.
#include <algorithm>

#include "lapack/call.hpp"
#include "lapack/handlers.hpp"

namespace cyxla::lapack {

template <typename T>
xla_ffi::Error* trsm(xla_ffi::CallFrame* frame) noexcept {
  return run_handler(frame, "trsm", Element<T>::letter, [&](const Call& call) {
    call.expect_counts(2, 1, 1);
    const Array a = call.operand(0, Element<T>::dtype, "a");
    const Array b = call.operand(1, Element<T>::dtype, "b");
    const Matrices mb = call.matrices(b);
    const Array out = call.result(0, Element<T>::dtype, "x");
    const char side = call.char_attribute("side", "LR");
    const char uplo = call.char_attribute("uplo", "LU");
    const char trans = call.char_attribute("trans_x", "NTC");
    const char diag = call.char_attribute("diag", "NU");
    const lapack_int k = side == 'L' ? mb.rows : mb.cols;
    call.expect_dims(a, mb.batch_dims, {k, k});
    call.expect_dims(out, mb.batch_dims, {mb.rows, mb.cols});
    T alpha{1};
    if (call.operand_count() == 3) {
      const Array given = call.operand(2, Element<T>::dtype, "alpha");
      call.expect_dims(given, {}, {});
      alpha = *static_cast<const T*>(given.data);
    }
    auto* fn = routines_of<T>(call.library()).trsm;

    auto* x = static_cast<T*>(out.data);
    copy_unless_same(static_cast<const T*>(b.data), x, mb.batch * mb.size());
    const auto* matrix = static_cast<const T*>(a.data);
    const lapack_int lda = std::max(1, k);
    const lapack_int ldb = std::max(1, mb.rows);
    const int64_t a_size = int64_t{k} * k;
    for (int64_t i = 0; i < mb.batch; ++i) {
      fn(&side, &uplo, &trans, &diag, &mb.rows, &mb.cols, &alpha, matrix + i * a_size, &lda,
         x + i * mb.size(), &ldb, 1, 1, 1, 1);
    }
  });
}

template xla_ffi::Error* trsm<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* trsm<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* trsm<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* trsm<c128>(xla_ffi::CallFrame*) noexcept;

}  // namespace cyxla::lapack
