// cyxla._core._testing, in a test build only (CMake's CYXLA_TESTING): what the tests reach
// that no caller should. A wheel carries none of it (tests/test_package.py checks).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>

#include "cache/store.hpp"
#include "python/bindings.hpp"
#include "python/cache.hpp"
#include "python/host_buffers.hpp"
#include "python/specs.hpp"
#include "runtime/executable.hpp"
#include "runtime/hlo_signature.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cyxla::python {

void bind_testing(nb::module_& m) {
  nb::module_ t = m.def_submodule("_testing", "Test hooks of a test build; not in a wheel.");

  // tests/test_hlo_signature.py checks the reader against jaxlib's compiled modules.
  t.def(
      "hlo_signature",
      [](const std::string& format, nb::bytes data) -> nb::object {
        const std::optional<HloSignature> signature =
            read_hlo_signature(format, std::string_view(data.c_str(), data.size()));
        if (!signature) return nb::none();
        return nb::make_tuple(from_specs(signature->parameters), signature->aliases);
      },
      "format"_a, "data"_a,
      "(parameters, (output, parameter) aliases) of an optimized HLO module, or None for "
      "another format.");

  t.def("writes_in_place", &writes_in_place, "executable"_a, "inputs"_a, "outputs"_a,
        "Runs the program once on arrays that are exactly its inputs and outputs; returns "
        "per output whether the plugin wrote the result in place (no copy).");

  // Executable::execute itself (the C API's path) on host arrays, without the kept
  // buffers of run's _CachedRun, for the tests of its refusals and leaks.
  t.def("execute_exact", &run_on_buffers, "executable"_a, "inputs"_a, "outputs"_a,
        "converted"_a = false,
        "Runs the program on host arrays: reads `inputs`, writes `outputs`. Returns False, "
        "running nothing, when the arguments are not exactly the program's (a list, a "
        "strided or misaligned array, another dtype). `converted` inputs may carry bfloat16 "
        "as uint16.");

  // The compiled-form readers (tests/test_compiled_form.py, tests/test_fuzz_corpus.py).
  bind_compiled_testing(t);

  // The store's seams (tests/support.py's cache_seams): a user id to own the cache as,
  // and a hook called at the store's stages. The hook is held without a reference count
  // of its own kept past exit, so no Python object is released after the interpreter is
  // gone.
  t.def(
      "set_store_seams",
      [](std::optional<uint32_t> user, nb::object hook) {
        cache::testing::Seams& seams = cache::testing::seams();
        seams.user = user;
        if (seams.hook) seams.hook = nullptr;
        static nb::handle held;
        held.dec_ref();
        held = hook.is_none() ? nb::handle() : hook.release();
        if (!held) return;
        seams.hook = [](std::string_view stage, const std::filesystem::path& path, int fd) {
          nb::gil_scoped_acquire acquire;
          held(nb::str(stage.data(), stage.size()), path_text(path), fd);
        };
      },
      "user"_a.none(), "hook"_a.none());
}

}  // namespace cyxla::python
