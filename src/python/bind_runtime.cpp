// The runtime as Python sees it: a client of one plugin (Runtime), its compiled programs
// (Executable, BatchedExecutable), and load_or_compile, the one way a program becomes an
// executable (from the disk cache or the compiler).
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "loading/load_or_compile.hpp"
#include "pjrt/plugin.hpp"
#include "program/program_file.hpp"
#include "python/batch_buffers.hpp"
#include "python/bindings.hpp"
#include "python/cache.hpp"
#include "python/specs.hpp"
#include "runtime/batched_executable.hpp"
#include "runtime/executable.hpp"
#include "runtime/runtime.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cyxla::python {
namespace {

/// Client options from Python: bool, int, float, str or a sequence of ints. Dispatched
/// on the Python type, since bool is also an int.
std::vector<pjrt::NamedValue> to_named_values(const nb::dict& options) {
  std::vector<pjrt::NamedValue> values;
  for (auto [key, value] : options) {
    std::string name = nb::cast<std::string>(key);
    if (PyBool_Check(value.ptr())) {
      values.push_back({name, nb::cast<bool>(value)});
    } else if (PyLong_Check(value.ptr())) {
      values.push_back({name, nb::cast<int64_t>(value)});
    } else if (PyFloat_Check(value.ptr())) {
      values.push_back({name, nb::cast<double>(value)});
    } else if (PyUnicode_Check(value.ptr())) {
      values.push_back({name, nb::cast<std::string>(value)});
    } else {
      std::vector<int64_t> list;
      if (!nb::try_cast(value, list)) {
        throw Error(ErrorKind::InvalidArgument,
                    "client option '" + name + "' must be a bool, int, float, str or a list of "
                    "ints, not " + nb::cast<std::string>(nb::str(value.type().attr("__name__"))));
      }
      values.push_back({name, std::move(list)});
    }
  }
  return values;
}

}  // namespace

// Coverage: gcov maps only the unwinding path of a multi-line binding statement to the
// line it starts on; that path runs only if the import fails, so those lines carry
// GCOVR_EXCL_LINE.
void bind_runtime(nb::module_& m) {
  nb::class_<Runtime>(m, "Runtime", "A client of one plugin, bound to its first device.")
      .def_static(
          "create",
          // GCOVR_EXCL_START (the unwinding path of the statement)
          [](std::shared_ptr<const pjrt::Plugin> plugin, const nb::dict& options) {
            // GCOVR_EXCL_STOP
            auto values = to_named_values(options);
            nb::gil_scoped_release release;
            return Runtime::create(std::move(plugin), values);
          },
          "plugin"_a, "options"_a)
      // cyxla.initialize's runtime is the process's, which the C API's loader uses too.
      .def("_make_current", &Runtime::make_current)
      .def_prop_ro("platform", &Runtime::platform)
      .def_prop_ro("platform_version", &Runtime::platform_version)
      .def_prop_ro("device_count", &Runtime::device_count)
      .def_prop_ro("host_is_device", &Runtime::host_is_device)
      .def(
          "compile",
          [](const Runtime& r, nb::bytes code, nb::bytes options,  // GCOVR_EXCL_LINE
             const std::vector<SpecTuple>& inputs, std::vector<size_t> donated_outputs) {
            std::string_view c(code.c_str(), code.size());
            std::string_view o(options.c_str(), options.size());
            auto specs = to_specs(inputs);
            nb::gil_scoped_release release;
            return r.compile(c, o, std::move(specs), std::move(donated_outputs));
          },
          "code"_a, "options"_a, "inputs"_a, "donated_outputs"_a = std::vector<size_t>{})
      .def(
          "deserialize",
          [](const Runtime& r, nb::bytes serialized, const std::vector<SpecTuple>& inputs,
             std::vector<size_t> donated_outputs) {
            std::string_view s(serialized.c_str(), serialized.size());
            auto specs = to_specs(inputs);
            nb::gil_scoped_release release;
            return r.deserialize(s, std::move(specs), std::move(donated_outputs));
          },
          "serialized"_a, "inputs"_a, "donated_outputs"_a = std::vector<size_t>{});

  nb::class_<Executable>(m, "Executable", "A compiled program on the runtime's device.")
      .def_prop_ro("inputs", [](const Executable& e) { return from_specs(e.inputs()); })
      // GCOVR_EXCL_START (the unwinding path of the statement)
      .def_prop_ro("outputs", [](const Executable& e) { return from_specs(e.outputs()); })
      // GCOVR_EXCL_STOP
      .def_prop_ro("output_bytes", &Executable::output_bytes)
      .def_prop_ro("donated_outputs", &Executable::donated_outputs)
      .def(
          "_pjrt_pointers",
          [](const Executable& e) {  // GCOVR_EXCL_LINE
            // For the raw-PJRT floor of `cyxla bench`: (api, client, device, executable).
            const Runtime& r = e.runtime();
            return std::make_tuple(reinterpret_cast<uintptr_t>(r.plugin().api()),
                                   reinterpret_cast<uintptr_t>(r.client()),
                                   reinterpret_cast<uintptr_t>(r.device()),
                                   reinterpret_cast<uintptr_t>(e.loaded()));
          })
      .def("serialize",
           [](const Executable& e) {
             std::string s = e.serialize();
             return nb::bytes(s.data(), s.size());
           })
      .def("fingerprint", [](const Executable& e) {
        std::string s = e.fingerprint();
        return nb::bytes(s.data(), s.size());
      });

  nb::class_<BatchedExecutable>(m, "BatchedExecutable",  // GCOVR_EXCL_LINE
                                "A program compiled at a few batch sizes, run on any number "
                                "of points.")
      .def_static(
          "create",
          [](const std::vector<std::shared_ptr<Executable>>& executables,  // GCOVR_EXCL_LINE
             const std::vector<size_t>& sizes) {
            std::vector<std::shared_ptr<const Executable>> held(executables.begin(),
                                                                executables.end());
            return std::make_shared<BatchedExecutable>(std::move(held), sizes);
          },
          "executables"_a, "sizes"_a,
          "`executables[k]` evaluates `sizes[k]` points at once (a leading batch dimension "
          "on every input and output).")
      .def_prop_ro("inputs", [](const BatchedExecutable& b) { return from_specs(b.inputs()); })
      // GCOVR_EXCL_START (the unwinding path of the statement)
      .def_prop_ro("outputs", [](const BatchedExecutable& b) { return from_specs(b.outputs()); })
      // GCOVR_EXCL_STOP
      .def_prop_ro("batch_sizes", &BatchedExecutable::batch_sizes)
      // Internal (BatchedExecutable.run, which checks shapes and dtypes first).
      .def("_execute", &run_batch_on_buffers, "n"_a, "inputs"_a, "outputs"_a,
           "Evaluates `n` points: reads the C-contiguous buffers `inputs`, writes `outputs`.");

  m.def(
      "load_or_compile",
      // GCOVR_EXCL_START (the unwinding path of the statement)
      [](const Runtime& runtime, const std::string& source, std::string name,
         std::string platform, nb::bytes stablehlo, nb::bytes compile_options,
         const std::vector<SpecTuple>& inputs, const std::vector<SpecTuple>& outputs,
         std::vector<std::string> custom_calls, std::vector<size_t> donated_outputs,
         const std::string& runner) {
        // GCOVR_EXCL_STOP
        program::ProgramFile program;
        program.name = std::move(name);
        program.platform = std::move(platform);
        program.stablehlo.assign(stablehlo.c_str(), stablehlo.size());
        program.compile_options.assign(compile_options.c_str(), compile_options.size());
        program.inputs = to_specs(inputs);
        program.outputs = to_specs(outputs);
        program.custom_calls = std::move(custom_calls);
        program.donated_outputs = std::move(donated_outputs);
        const loading::Origin origin{source, ErrorKind::InvalidArgument};
        loading::Compiled compiled;
        cache::Warnings warnings;
        try {
          nb::gil_scoped_release release;
          compiled = loading::load_or_compile(runtime, program, origin, &warnings, runner);
        } catch (...) {
          give_cache_warnings(warnings);
          throw;
        }
        give_cache_warnings(warnings);
        return nb::make_tuple(compiled.executable, compiled.cache_hit, compiled.compile_seconds,
                              compiled.load_seconds, compiled.cache_error);
      },
      "runtime"_a, "source"_a, "name"_a, "platform"_a, "stablehlo"_a, "compile_options"_a,
      "inputs"_a, "outputs"_a, "custom_calls"_a, "donated_outputs"_a, "runner"_a = "",
      "The program's executable, from the disk cache or compiled (loading/load_or_compile.hpp): "
      "(executable, cache_hit, compile_seconds, load_seconds, cache_error). `source` starts "
      "every refusal; every spec and the outputs written in place are checked against the "
      "executable. `runner`: 'auto', 'pjrt', or '' for CYXLA_RUNNER's choice.");
}

}  // namespace cyxla::python
