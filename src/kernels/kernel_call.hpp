// XLA's CPU kernel calling convention (xla/backends/cpu/runtime/kernel_c_api.h), declared
// once: the frame a compiled kernel takes, and one kernel called over its workgroups.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/helper_threads.hpp"

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

/// One kernel call over its workgroups: the context of its pieces.
struct WorkgroupCall {
  KernelFunction kernel;
  KernelDims workgroups;
  const KernelArg* args;
  size_t num_args;
};

/// Calls the kernel for workgroup `index`, counted x fastest, then y, then z.
inline bool call_workgroup(const void* context, uint64_t index) noexcept {
  const WorkgroupCall& c = *static_cast<const WorkgroupCall*>(context);
  const KernelDims id{index % c.workgroups.x, index / c.workgroups.x % c.workgroups.y,
                      index / c.workgroups.x / c.workgroups.y};
  const KernelCallFrame frame{&c.workgroups, &id, c.num_args, c.args};
  return c.kernel(&frame) == nullptr;
}

/// Calls `kernel` over `args` once per workgroup of `workgroups` (whose product the
/// verdict bounds by kMaxPieces); false when a call reports an error. Several workgroups
/// are shared with the helper threads, as XLA's runtime spreads them over its thread pool
/// (each is independent of the others); one is called here.
inline bool call_over_workgroups(KernelFunction kernel, const KernelDims& workgroups,
                                 const KernelArg* args, size_t num_args) noexcept {
  const WorkgroupCall call{kernel, workgroups, args, num_args};
  const uint64_t count = workgroups.x * workgroups.y * workgroups.z;
  if (count == 1) return call_workgroup(&call, 0);
  return share_pieces(call_workgroup, &call, count);
}

}  // namespace cyxla::kernels
