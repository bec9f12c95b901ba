// The C API (include/cyxla/cyxla.h) as Python hands it out: the function table that
// extension modules import through cyxla_import(), its versions, and NativeHandle, one
// reference to an executable for native callers.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>

#include <memory>

#include "abi/registry.hpp"
#include "abi/table.hpp"
#include "python/bindings.hpp"
#include "runtime/batched_executable.hpp"
#include "runtime/executable.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cyxla::python {

void bind_native_api(nb::module_& m) {
  m.attr("ABI_VERSION") = CYXLA_ABI_VERSION;
  m.attr("ABI_OLDEST_COMPATIBLE") = CYXLA_ABI_OLDEST_COMPATIBLE;
  m.attr("_C_API") = nb::capsule(static_cast<const void*>(&abi::table()), CYXLA_CAPSULE_NAME);

  nb::class_<abi::Handle>(m, "NativeHandle",  // GCOVR_EXCL_LINE
                          "One reference to an executable for native callers (cyxla.h).")
      .def(nb::init<std::shared_ptr<Executable>>(), "executable"_a)
      .def(nb::init<std::shared_ptr<BatchedExecutable>>(), "executable"_a)
      .def_prop_ro("value", &abi::Handle::value);
}

}  // namespace cyxla::python
