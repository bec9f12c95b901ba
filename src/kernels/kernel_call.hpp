// XLA's CPU kernel calling convention (xla/backends/cpu/runtime/kernel_c_api.h), declared
// once: the frame a compiled kernel takes, and one kernel called over its workgroups.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cyxla::kernels {

struct KernelDims {
  uint64_t x, y, z;
};
struct KernelArg {
  void* data;
  size_t size;
};
struct KernelCallFrame {
  const KernelDims* num_workgroups;
  const KernelDims* workgroup_id;
  size_t num_args;
  const KernelArg* args;
};
/// Returns null on success, or the kernel's error (opaque).
using KernelFunction = const void* (*)(const KernelCallFrame*);

/// Calls `kernel` over `args` once per workgroup of `workgroups`, in XLA's serial order (z
/// outermost, then y, then x); false at the first call that reports an error.
inline bool call_over_workgroups(KernelFunction kernel, const KernelDims& workgroups,
                                 const KernelArg* args, size_t num_args) noexcept {
  KernelDims id{0, 0, 0};
  const KernelCallFrame frame{&workgroups, &id, num_args, args};
  for (id.z = 0; id.z < workgroups.z; ++id.z) {
    for (id.y = 0; id.y < workgroups.y; ++id.y) {
      for (id.x = 0; id.x < workgroups.x; ++id.x) {
        if (kernel(&frame) != nullptr) return false;
      }
    }
  }
  return true;
}

}  // namespace cyxla::kernels
