// cyxla's LAPACK handlers as Python sees them (src/lapack/): which targets they cover,
// which library they call, and where SciPy's OpenBLAS is, for the registry and the
// command line.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "common/error.hpp"
#include "lapack/handlers.hpp"
#include "lapack/library.hpp"
#include "pjrt/ffi.hpp"
#include "python/bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cyxla::python {

void bind_lapack(nb::module_& m) {
  m.def(
      "lapack_targets",
      [] {
        std::vector<std::string> names;
        for (const lapack::Target& t : lapack::targets()) names.emplace_back(t.name);
        return names;
      },
      "The custom-call targets cyxla's own LAPACK handlers cover (registered with every CPU "
      "plugin as its runtime is created).");
  m.def(
      "lapack_library",
      [] {
        std::string why;
        const lapack::Library* library = lapack::library(&why);
        if (library == nullptr) throw Error(ErrorKind::UnsupportedProgram, why);
        return library->path;
      },
      "The file of the LAPACK library cyxla's handlers call, found on first use; raises "
      "UnsupportedProgramError naming what was tried when there is none.");
  m.def("lapack_candidates", &lapack::candidates,
        "The LAPACK libraries cyxla would try, in order (CYXLA_LAPACK alone when set).");
  m.def("prefer_lapack_library", &lapack::prefer_library, "path"_a,
        "Tries `path` first after CYXLA_LAPACK (before any library is found).");
  m.def("has_ffi_handler", &pjrt::has_ffi_handler, "plugin"_a, "name"_a,
        "Whether a handler was registered as the target `name` with `plugin` in this process.");
}

}  // namespace cyxla::python
