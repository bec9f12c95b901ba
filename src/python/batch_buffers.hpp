// Running a batched executable on Python objects that export C-contiguous buffers.
#pragma once

#include <nanobind/nanobind.h>

#include "runtime/batched_executable.hpp"

namespace cyxla::python {

/// Evaluates `n` points: reads the buffers of `inputs` (n points of each input, bfloat16
/// carried as uint16), writes those of `outputs`. Python's BatchedExecutable.run checks
/// shapes and dtypes; this checks what memory safety needs (counts, C-contiguity,
/// writability, sizes) and raises InvalidArgument otherwise. The GIL is released while
/// the plugin runs.
void run_batch_on_buffers(const BatchedExecutable& executable, size_t n,
                          nanobind::handle inputs, nanobind::handle outputs);

}  // namespace cyxla::python
