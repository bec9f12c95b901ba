// Running an executable on Python objects that export C-contiguous buffers (NumPy arrays).
#pragma once

#include <nanobind/nanobind.h>

#include "runtime/executable.hpp"

namespace cyxla::python {

/// Runs `executable` with the buffers of `inputs` and writes its results into the buffers
/// of `outputs`. Returns false, running nothing, when the inputs are not exactly what the
/// program takes (count, element type, shape, C-contiguity): the caller converts them and
/// calls again with `converted`, which lets bfloat16 inputs arrive as uint16 arrays.
/// Outputs (bfloat16 ones as uint16) of the wrong count or size raise InvalidArgument.
/// The GIL is released while the plugin runs.
bool run_on_buffers(const Executable& executable, nanobind::handle inputs,
                    nanobind::handle outputs, bool converted);

}  // namespace cyxla::python
