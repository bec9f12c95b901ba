// gtsv: the solve of a tridiagonal system (jax.lax.linalg.tridiagonal_solve). Operands dl,
// d, du (batch..., m): the sub-, main and super-diagonals, dl[0] and du[m-1] unused; b
// (batch..., m, nrhs); results dl, d, du (overwritten by the factorisation) and b (the
// solution), with the operands' dims, and info (batch...), LAPACK's own.
#include <algorithm>

#include "lapack/call.hpp"
#include "lapack/handlers.hpp"

namespace cyxla::lapack {

template <typename T>
xla_ffi::Error* gtsv(xla_ffi::CallFrame* frame) noexcept {
  return run_handler(frame, "gtsv", Element<T>::letter, [&](const Call& call) {
    call.expect_counts(4, 5);
    const Array b = call.operand(3, Element<T>::dtype, "b");
    const Matrices m = call.matrices(b);
    const char* const names[] = {"dl", "d", "du", "b"};
    const char* const out_names[] = {"dl_out", "d_out", "du_out", "b_out"};
    Array in[4];
    Array out[4];
    for (int i = 0; i < 4; ++i) {
      in[i] = call.operand(i, Element<T>::dtype, names[i]);
      out[i] = call.result(i, Element<T>::dtype, out_names[i]);
      if (i < 3) {
        call.expect_dims(in[i], m.batch_dims, {m.rows});
        call.expect_dims(out[i], m.batch_dims, {m.rows});
      } else {
        call.expect_dims(out[i], m.batch_dims, {m.rows, m.cols});
      }
    }
    const Array info = call.result(4, xla_ffi::kDataTypeS32, "info");
    call.expect_dims(info, m.batch_dims, {});
    auto* fn = routines_of<T>(call.library()).gtsv;

    for (int i = 0; i < 3; ++i) {
      copy_unless_same(static_cast<const T*>(in[i].data), static_cast<T*>(out[i].data),
                       m.batch * m.rows);
    }
    copy_unless_same(static_cast<const T*>(b.data), static_cast<T*>(out[3].data),
                     m.batch * m.size());
    auto* infos = static_cast<lapack_int*>(info.data);
    if (m.rows == 0) {  // nothing to solve (and dl + 1 would be past the end)
      std::fill_n(infos, m.batch, 0);
      return;
    }
    auto* dl = static_cast<T*>(out[0].data);
    auto* d = static_cast<T*>(out[1].data);
    auto* du = static_cast<T*>(out[2].data);
    auto* x = static_cast<T*>(out[3].data);
    const lapack_int ldb = std::max(1, m.rows);
    for (int64_t i = 0; i < m.batch; ++i) {
      // LAPACK's dl has m - 1 elements: the operand's, after its unused first one.
      fn(&m.rows, &m.cols, dl + i * m.rows + 1, d + i * m.rows, du + i * m.rows,
         x + i * m.size(), &ldb, infos + i);
    }
  });
}

template xla_ffi::Error* gtsv<float>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gtsv<double>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gtsv<c64>(xla_ffi::CallFrame*) noexcept;
template xla_ffi::Error* gtsv<c128>(xla_ffi::CallFrame*) noexcept;

}  // namespace cyxla::lapack
