// potrf: the Cholesky factorisation (jnp.linalg.cholesky). Operand x (batch..., n, n);
// attribute uplo; results x_out (x's dims; the other triangle left as it was) and info
// (batch...): positive where a matrix is not positive definite, which JAX turns into NaN.
#include <algorithm>

#include "lapack/call.hpp"
#include "lapack/handlers.hpp"

namespace cyxla::lapack {

template <typename T>
xla_ffi::Error* potrf(xla_ffi::CallFrame* frame) noexcept {
  return run_handler(frame, "potrf", Element<T>::letter, [&](const Call& call) {
    call.expect_counts(1, 2);
    const Array x = call.operand(0, Element<T>::dtype, "x");
    const Matrices m = call.matrices(x);
    if (m.rows != m.cols) call.refuse("x holds " + std::to_string(m.rows) + "x" +
                                      std::to_string(m.cols) + " matrices, expected square ones");
    const Array out = call.result(0, Element<T>::dtype, "x_out");
    const Array info = call.result(1, xla_ffi::kDataTypeS32, "info");
    const char uplo = call.char_attribute("uplo", "LU");
    call.expect_dims(out, m.batch_dims, {m.rows, m.cols});
    call.expect_dims(info, m.batch_dims, {});
    auto* fn = routines_of<T>(call.library()).potrf;

    auto* a = static_cast<T*>(out.data);
    copy_unless_same(static_cast<const T*>(x.data), a, m.batch * m.size());
    auto* infos = static_cast<lapack_int*>(info.data);
    const lapack_int lda = std::max(1, m.rows);
    for (int64_t i = 0; i < m.batch; ++i) fn(&uplo, &m.rows, a + i * m.size(), &lda, infos + i, 1);
  });
}

template xla_ffi::Error* potrf<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* potrf<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* potrf<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* potrf<c128>(xla_ffi::CallFrame*) noexcept;

}  // namespace cyxla::lapack
