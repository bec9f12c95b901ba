// gehrd: the reduction to upper Hessenberg form (jax.scipy.linalg.hessenberg). Operand x
// (batch..., n, n); int32 attributes low and high (LAPACK's ilo and ihi: 1 <= low <= high
// <= n); results x_out (x's dims: H and the reflectors), tau (batch..., n - 1) and info
// (batch...). The workspace is the size LAPACK asks for, as jaxlib's (and at least n).
#include <algorithm>

#include "lapack/call.hpp"
#include "lapack/handlers.hpp"

namespace cyxla::lapack {

template <typename T>
xla_ffi::Error* gehrd(xla_ffi::CallFrame* frame) noexcept {
  return run_handler(frame, "gehrd", Element<T>::letter, [&](const Call& call) {
    call.expect_counts(1, 3);
    const Array x = call.operand(0, Element<T>::dtype, "x");
    const Matrices m = call.matrices(x);
    if (m.rows != m.cols) call.refuse("x holds " + std::to_string(m.rows) + "x" +
                                      std::to_string(m.cols) + " matrices, expected square ones");
    const Array out = call.result(0, Element<T>::dtype, "x_out");
    const Array tau = call.result(1, Element<T>::dtype, "tau");
    const Array info = call.result(2, xla_ffi::kDataTypeS32, "info");
    const lapack_int low = call.int_attribute("low");
    const lapack_int high = call.int_attribute("high");
    const lapack_int n = m.cols;
    if (!(low >= 1 && low <= std::max(1, n) && high >= std::min(low, n) && high <= n)) {
      call.refuse("the attributes low " + std::to_string(low) + " and high " +
                  std::to_string(high) + " are not 1 <= low <= high <= " + std::to_string(n));
    }
    const lapack_int reflectors = std::max(0, n - 1);
    call.expect_dims(out, m.batch_dims, {n, n});
    call.expect_dims(tau, m.batch_dims, {reflectors});
    call.expect_dims(info, m.batch_dims, {});
    auto* fn = routines_of<T>(call.library()).gehrd;

    auto* a = static_cast<T*>(out.data);
    copy_unless_same(static_cast<const T*>(x.data), a, m.batch * m.size());
    if (m.batch == 0) return;
    const lapack_int lda = std::max(1, n);
    lapack_int status = 0;
    T query{};
    const lapack_int ask = -1;
    fn(&n, &low, &high, nullptr, &lda, nullptr, &query, &ask, &status);
    if (status != 0) call.refuse("the workspace query failed with info " + std::to_string(status));
    // Where high - low < 1 the query answers 1, yet gehrd then wants at least n (found by
    // fuzzing): the larger of the two, which is the query's wherever jaxlib's works.
    const lapack_int lwork = std::max(work_size(call, query), std::max(1, n));
    const auto work = workspace<T>(lwork);
    auto* taus = static_cast<T*>(tau.data);
    auto* infos = static_cast<lapack_int*>(info.data);
    for (int64_t i = 0; i < m.batch; ++i) {
      fn(&n, &low, &high, a + i * m.size(), &lda, taus + i * reflectors, work.get(), &lwork,
         infos + i);
    }
  });
}

template xla_ffi::Error* gehrd<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gehrd<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gehrd<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gehrd<c128>(xla_ffi::CallFrame*) noexcept;

}  // namespace cyxla::lapack
