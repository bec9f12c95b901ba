// The contract that gesdd and gesvd share (jnp.linalg.svd and its QR variant): operand x
// (batch..., m, n); attribute mode ('A': full U and V^H, 'S': the first min(m, n) columns,
// 'N': values only; 'O' is refused, as jaxlib refuses it); results x_out (x's dims), s
// (batch..., min(m, n), real), u, vt and info (batch...). Checked once, here.
#pragma once

#include <algorithm>

#include "lapack/call.hpp"

namespace cyxla::lapack {

struct SvdArrays {
  Array x, out, s, u, vt, info;
  Matrices m, mu, mvt;
  char mode;
  lapack_int k;  // min(m, n)
};

template <typename T>
SvdArrays svd_arrays(const Call& call) {
  using R = typename Element<T>::Real;
  call.expect_counts(1, 5);
  const Array x = call.operand(0, Element<T>::dtype, "x");
  SvdArrays a{x,
              call.result(0, Element<T>::dtype, "x_out"),
              call.result(1, Element<R>::dtype, "s"),
              call.result(2, Element<T>::dtype, "u"),
              call.result(3, Element<T>::dtype, "vt"),
              call.result(4, xla_ffi::kDataTypeS32, "info"),
              call.matrices(x),
              {},
              {},
              call.char_attribute("mode", "ASNO"),
              0};
  if (a.mode == 'O') {
    call.refuse("the mode 'O' (U or V^H overwriting x) is not supported, as in jaxlib",
                xla_ffi::kErrorUnimplemented);
  }
  a.k = std::min(a.m.rows, a.m.cols);
  call.expect_dims(a.out, a.m.batch_dims, {a.m.rows, a.m.cols});
  call.expect_dims(a.s, a.m.batch_dims, {a.k});
  call.expect_dims(a.info, a.m.batch_dims, {});
  a.mu = call.matrices(a.u);
  a.mvt = call.matrices(a.vt);
  if (a.mode == 'N') {  // U and V^H are not referenced
    call.expect_dims(a.u, a.m.batch_dims, {a.mu.rows, a.mu.cols});
    call.expect_dims(a.vt, a.m.batch_dims, {a.mvt.rows, a.mvt.cols});
  } else {
    call.expect_dims(a.u, a.m.batch_dims, {a.m.rows, a.mode == 'A' ? a.m.rows : a.k});
    call.expect_dims(a.vt, a.m.batch_dims, {a.mode == 'A' ? a.m.cols : a.k, a.m.cols});
  }
  return a;
}

}  // namespace cyxla::lapack
