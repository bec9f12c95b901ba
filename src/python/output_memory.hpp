// Memory for the arrays that Executable.run returns: aligned, and recycled across calls.
#pragma once

#include <nanobind/nanobind.h>

#include <cstddef>

namespace cyxla::python {

/// A writable 1-D uint8 NumPy array of `bytes` bytes at a 64-byte aligned address, which
/// CPU buffers can alias. Its memory is kept when the last array over it is freed, and
/// the next call for the same size reuses it: freshly mapped memory costs a page fault per
/// 4 KiB page when first written, which glibc's malloc would pay on every call for large
/// outputs (it unmaps or trims them when they are freed). At most kKeptBlocks blocks and
/// kKeptBytes bytes are kept: a block handed back takes the place of the oldest ones.
nanobind::object recycled_bytes(size_t bytes);

inline constexpr size_t kKeptBlocks = 8;
inline constexpr size_t kKeptBytes = size_t{256} << 20;

}  // namespace cyxla::python
