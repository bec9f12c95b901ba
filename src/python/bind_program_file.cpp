// The program file (program/program_file.hpp): Program.save, load_program and pickling
// read and write it here (internal, hence the underscores).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <utility>

#include "program/program_file.hpp"
#include "python/bindings.hpp"
#include "python/specs.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cyxla::python {
namespace {

/// What Python's load_program needs of a program file.
nb::dict file_contents(const program::ProgramFile& file) {
  const auto text = [](const std::string& s) { return nb::str(s.data(), s.size()); };
  const auto bytes = [](const std::string& s) { return nb::bytes(s.data(), s.size()); };
  nb::dict out;
  out["name"] = text(file.name);
  out["platform"] = text(file.platform);
  out["stablehlo_version"] = text(file.stablehlo_version);
  out["cyxla_version"] = text(file.cyxla_version);
  out["jax_version"] = text(file.jax_version);
  out["jaxlib_version"] = text(file.jaxlib_version);
  out["inputs"] = from_specs(file.inputs);
  out["outputs"] = from_specs(file.outputs);
  out["custom_calls"] = file.custom_calls;
  out["donated_outputs"] = file.donated_outputs;
  out["output_tree"] = file.output_tree ? nb::object(text(*file.output_tree)) : nb::none();
  out["stablehlo"] = bytes(file.stablehlo);
  out["compile_options"] = bytes(file.compile_options);
  return out;
}

}  // namespace

void bind_program_file(nb::module_& m) {
  m.attr("OUTPUT_TREE_MAX_NESTING") = program::kMaxTreeNesting;
  m.def(
      "_read_program_file",
      [](nb::bytes data, nb::bytes source) {
        program::ProgramFile file;
        {
          nb::gil_scoped_release release;  // the CRC-32 of a large program takes a while
          file = program::parse(std::string_view(data.c_str(), data.size()),
                                std::string_view(source.c_str(), source.size()));
        }
        return file_contents(file);
      },
      "data"_a, "source"_a,
      "The contents of a program file's bytes, checked; ProgramFileError, whose message "
      "starts with `source`, if it is not a file this cyxla reads.");
  m.def(
      "_pack_program_file",
      [](std::string name, std::string platform, std::string stablehlo_version,
         const std::vector<SpecTuple>& inputs, const std::vector<SpecTuple>& outputs,
         std::vector<std::string> custom_calls, std::vector<size_t> donated_outputs,
         nb::bytes stablehlo, nb::bytes compile_options, std::string cyxla_version,
         std::string jax_version, std::string jaxlib_version,
         std::optional<std::string> output_tree) {
        program::ProgramFile file;
        file.name = std::move(name);
        file.platform = std::move(platform);
        file.stablehlo_version = std::move(stablehlo_version);
        file.cyxla_version = std::move(cyxla_version);
        file.inputs = to_specs(inputs);
        file.outputs = to_specs(outputs);
        file.custom_calls = std::move(custom_calls);
        file.donated_outputs = std::move(donated_outputs);
        file.stablehlo.assign(stablehlo.c_str(), stablehlo.size());
        file.compile_options.assign(compile_options.c_str(), compile_options.size());
        file.jax_version = std::move(jax_version);
        file.jaxlib_version = std::move(jaxlib_version);
        file.output_tree = std::move(output_tree);
        const std::string packed = program::pack(file);
        return nb::bytes(packed.data(), packed.size());
      },
      "name"_a, "platform"_a, "stablehlo_version"_a, "inputs"_a, "outputs"_a, "custom_calls"_a,
      "donated_outputs"_a, "stablehlo"_a, "compile_options"_a, "cyxla_version"_a,
      "jax_version"_a, "jaxlib_version"_a, "output_tree"_a.none(),
      "The bytes of a program file; InvalidArgumentError for what the reader would refuse "
      "(a line break in a text field, an output_tree that is not one of the outputs).");
}

}  // namespace cyxla::python
