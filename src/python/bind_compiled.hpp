// cyxla._core's reading of a plugin's compiled form (src/compiled/): the runner verdict
// and a summary for Executable.runner and `python -m cyxla info`, and the readers' test
// hooks.
#pragma once

#include <nanobind/nanobind.h>

namespace cyxla::python {

/// Adds runner_verdict, compiled_summary and the test hooks _compiled_details,
/// _elf_object and _wire_fields to `module`.
void bind_compiled(nanobind::module_& module);

}  // namespace cyxla::python
