// The nanobind module cyxla._core: the C++ runtime as Python sees it, one area a file
// (bindings.hpp lists them).
#include <nanobind/nanobind.h>

#include "python/bindings.hpp"

namespace nb = nanobind;

NB_MODULE(_core, m) {
  using namespace cyxla::python;
  m.doc() = "The C++ runtime of cyxla: plugins, clients and executables.";
  // The loaded plugin and its client live until the process exits, by design (a plugin is
  // never unloaded), so nanobind's report of objects alive at shutdown is noise here.
  nb::set_leak_warnings(false);

  bind_errors(m);
  bind_platforms(m);
  bind_plugins(m);
  bind_lapack(m);
  bind_program_file(m);
  bind_cache(m);
  bind_runtime(m);
  bind_compiled(m);
  bind_calls(m);
  bind_low_level(m);
  bind_native_api(m);
#ifdef CYXLA_TESTING
  bind_testing(m);
#endif
}
