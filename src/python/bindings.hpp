// cyxla._core by area: module.cpp's NB_MODULE calls one bind_* per area, each in its own
// bind_<area>.cpp, in the order below (later areas use the classes of earlier ones).
#pragma once

#include <nanobind/nanobind.h>

namespace cyxla::python {

/// The error kinds' table and the translation of cyxla::Error into cyxla._errors' classes.
void bind_errors(nanobind::module_& m);
/// The PJRT API versions cyxla speaks and the table of platforms (runtime/platforms.hpp).
void bind_platforms(nanobind::module_& m);
/// Plugin, custom-call handlers, host callbacks and the plugin's FFI version.
void bind_plugins(nanobind::module_& m);
/// cyxla's LAPACK handlers: their targets and library (src/lapack/).
void bind_lapack(nanobind::module_& m);
/// Reading and writing program files (program/program_file.hpp).
void bind_program_file(nanobind::module_& m);
/// The submodule `_cache`: the disk cache's store (bind_cache.cpp).
void bind_cache(nanobind::module_& m);
/// Runtime, Executable, BatchedExecutable and load_or_compile.
void bind_runtime(nanobind::module_& m);
/// What cyxla reads of a plugin's compiled form (src/compiled/): the runner verdict and
/// the summary of an Executable, for Executable.runner and `python -m cyxla info`.
void bind_compiled(nanobind::module_& m);
/// The per-call objects of run and bind: _CachedRun, BoundCall and run's output memory.
void bind_calls(nanobind::module_& m);
/// SciPy's C callbacks over a bound call, for Executable.low_level_callable.
void bind_low_level(nanobind::module_& m);
/// The C API's function table, its versions and NativeHandle (include/cyxla/cyxla.h).
void bind_native_api(nanobind::module_& m);

#ifdef CYXLA_TESTING
/// The submodule `_testing` of a test build (CMake's CYXLA_TESTING): entries that only the
/// tests call, and the store's seams. A wheel has neither.
void bind_testing(nanobind::module_& m);
/// The compiled-form readers' whole output in `_testing`, for the tests' oracles
/// (bind_compiled.cpp).
void bind_compiled_testing(nanobind::module_& testing);
#endif

}  // namespace cyxla::python
