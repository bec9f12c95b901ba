// The nanobind module cyxla._core: the C++ runtime as Python sees it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "abi/registry.hpp"
#include "abi/table.hpp"
#include "cache/executable_key.hpp"
#include "common/json.hpp"
#include "common/utf8.hpp"
#include "loading/load_or_compile.hpp"
#include "pjrt/ffi.hpp"
#include "pjrt/plugin.hpp"
#include "program/program_file.hpp"
#include "python/batch_buffers.hpp"
#include "python/bind_compiled.hpp"
#include "python/cache.hpp"
#include "python/host_buffers.hpp"
#include "python/host_callback.hpp"
#include "python/output_memory.hpp"
#include "runtime/batched_executable.hpp"
#include "runtime/executable.hpp"
#include "runtime/hlo_signature.hpp"
#include "runtime/platforms.hpp"
#include "runtime/runtime.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cyxla {
namespace {

using SpecTuple = std::pair<int, std::vector<int64_t>>;

std::vector<TensorSpec> to_specs(const std::vector<SpecTuple>& tuples) {
  std::vector<TensorSpec> specs;
  specs.reserve(tuples.size());
  for (const auto& [type, dims] : tuples) {
    specs.push_back(TensorSpec{static_cast<PJRT_Buffer_Type>(type), dims});
  }
  return specs;
}

std::vector<SpecTuple> from_specs(const std::vector<TensorSpec>& specs) {
  std::vector<SpecTuple> tuples;
  tuples.reserve(specs.size());
  for (const TensorSpec& s : specs) tuples.emplace_back(static_cast<int>(s.type), s.dims);
  return tuples;
}

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

/// The Python error class of `kind`, from cyxla._errors (looked up on the cold path).
nb::object error_class(ErrorKind kind) {
  const char* name = "InvalidArgumentError";
  switch (kind) {
#define CYXLA_CLASS_CASE_(enumerator, python_class, status) \
  case ErrorKind::enumerator:                               \
    name = python_class;                                    \
    break;
    CYXLA_ERROR_KINDS(CYXLA_CLASS_CASE_)
#undef CYXLA_CLASS_CASE_
  }
  return nb::module_::import_("cyxla._errors").attr(name);
}

/// Sets the Python error of `e`: its kind's class, and for a program file the reason word
/// of ProgramFileError.
void set_python_error(const Error& e) {
  const nb::object cls = error_class(e.kind());
  // Messages quote paths and plugins' text, which need not be UTF-8.
  const std::string text = with_bytes_escaped(e.what());
  const nb::object message =
      nb::steal(PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size())));
  nb::object error;
  if (e.kind() == ErrorKind::ProgramFile) {
    // Refusals after the reader's (outputs the compiled program does not return) are
    // about what the metadata says.
    const auto* file = dynamic_cast<const program::FileError*>(&e);
    const std::string_view word =
        program::refusal_word(file != nullptr ? file->refusal() : program::Refusal::Metadata);
    error = cls(message, "reason"_a = nb::str(word.data(), word.size()));
  } else {
    error = cls(message);
  }
  PyErr_SetObject(cls.ptr(), error.ptr());
}

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
}  // namespace cyxla

// Coverage: gcov maps only the unwinding path of a multi-line binding statement to the
// line it starts on; that path runs only if the import fails, so those lines carry
// GCOVR_EXCL_LINE.
NB_MODULE(_core, m) {
  using namespace cyxla;
  m.doc() = "The C++ runtime of cyxla: plugins, clients and executables.";
  // The loaded plugin and its client live until the process exits, by design (a plugin is
  // never unloaded), so nanobind's report of objects alive at shutdown is noise here.
  nb::set_leak_warnings(false);

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      set_python_error(e);
    }
  });

  m.attr("PJRT_API_MAJOR") = CYXLA_PJRT_API_MAJOR;
  m.attr("PJRT_API_MINOR") = CYXLA_PJRT_API_MINOR;
  m.attr("OLDEST_PJRT_API_MINOR") = pjrt::kOldestMinor;
  m.attr("HOST_ALIGNMENT") = kHostAlignment;
  m.attr("ABI_VERSION") = CYXLA_ABI_VERSION;
  m.attr("ABI_OLDEST_COMPATIBLE") = CYXLA_ABI_OLDEST_COMPATIBLE;
  // The C API's function table, imported by extension modules through cyxla_import().
  m.attr("_C_API") = nb::capsule(static_cast<const void*>(&abi::table()), CYXLA_CAPSULE_NAME);

  // The table of platforms (runtime/platforms.hpp), which cyxla._platforms reads.
  nb::list platforms;
  nb::dict xla_platforms;
  nb::dict client_defaults;
  nb::dict compile_defaults;
  for (const Platform& p : kPlatforms) {
    const nb::str name(p.name.data(), p.name.size());
    platforms.append(name);
    if (!p.xla_name.empty()) xla_platforms[name] = nb::str(p.xla_name.data(), p.xla_name.size());
    nb::dict defaults;
    for (const DefaultOption& o : p.client_defaults) {
      defaults[nb::str(o.name.data(), o.name.size())] =
          std::visit([](auto v) { return nb::cast(v); }, o.value);
    }
    client_defaults[name] = defaults;
    nb::list compile;  // (option, value, the operation whose programs get it, or "")
    for (const CompileDefault& o : p.compile_defaults) {
      compile.append(nb::make_tuple(nb::str(o.name.data(), o.name.size()),
                                    nb::str(o.value.data(), o.value.size()),
                                    nb::str(o.operation.data(), o.operation.size())));
    }
    compile_defaults[name] = nb::tuple(compile);
  }
  m.attr("PLATFORMS") = nb::tuple(platforms);
  m.attr("XLA_PLATFORMS") = xla_platforms;
  m.attr("CLIENT_DEFAULTS") = client_defaults;
  m.attr("COMPILE_DEFAULTS") = compile_defaults;
  nb::dict aliases;
  for (const auto& [alias, platform] : kPlatformAliases) {
    aliases[nb::str(alias.data(), alias.size())] = nb::str(platform.data(), platform.size());
  }
  m.attr("PLATFORM_ALIASES") = aliases;
  // The table of error kinds (common/error.hpp), as (kind, cyxla._errors class, C status).
  nb::list kinds;
#define CYXLA_KIND_ROW_(enumerator, python_class, status) \
  kinds.append(nb::make_tuple(#enumerator, python_class, static_cast<int>(status)));
  CYXLA_ERROR_KINDS(CYXLA_KIND_ROW_)
#undef CYXLA_KIND_ROW_
  m.attr("_ERROR_KINDS") = nb::tuple(kinds);

  // The program file (program/program_file.hpp): Program.save, load_program and pickling
  // read and write it here (internal, hence the underscores).
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

  // Executable.run's new outputs (internal, hence the underscore).
  m.def("_recycled_bytes", &python::recycled_bytes, "bytes"_a,
        "A writable uint8 array of `bytes` bytes, 64-byte aligned, whose memory is reused "
        "by a later call once the array is freed.");

  nb::class_<pjrt::Plugin>(m, "Plugin", "A loaded PJRT plugin library.")  // GCOVR_EXCL_LINE
      .def_static("load", &pjrt::Plugin::load, "path"_a,
                  "Loads, checks and initializes the plugin at `path` (once per process).")
      .def_prop_ro("path", &pjrt::Plugin::path)
      .def_prop_ro("version",
                   [](const pjrt::Plugin& p) {
                     return std::make_tuple(p.version().major, p.version().minor);
                   })
      .def_prop_ro("attributes", [](const pjrt::Plugin& p) {
        nb::dict out;
        for (const auto& a : p.attributes()) {
          out[a.name.c_str()] = std::visit([](const auto& v) { return nb::cast(v); }, a.value);
        }
        return out;
      });

  // Custom calls: typed XLA FFI handlers registered with a plugin (pjrt/ffi.hpp).
  // Versions come back as (major, minor), or None where the plugin did not tell.
  auto ffi_version_tuple = [](const std::optional<pjrt::FfiVersion>& v) -> nb::object {
    if (!v) return nb::none();
    return nb::make_tuple(v->major, v->minor);
  };
  m.def(
      "register_ffi_handler",
      // GCOVR_EXCL_START (the unwinding path of the statement)
      [ffi_version_tuple](const pjrt::Plugin& plugin, const std::string& name, uintptr_t handler,
                          const std::string& platform, uint32_t traits) {
      // GCOVR_EXCL_STOP
        auto r = pjrt::register_ffi_handler(plugin, name, reinterpret_cast<const void*>(handler),
                                            platform, traits);
        return nb::make_tuple(ffi_version_tuple(r.handler), ffi_version_tuple(r.plugin));
      },
      "plugin"_a, "name"_a, "handler"_a, "platform"_a, "traits"_a = 0,
      "Registers the XLA_FFI_Handler* `handler` as target `name` of XLA platform `platform`; "
      "returns the XLA FFI versions (handler, plugin).");
  nb::list builtin_targets;
  for (const std::string_view target : pjrt::kXlaBuiltinTargets) {
    builtin_targets.append(nb::str(target.data(), target.size()));
  }
  m.attr("XLA_BUILTIN_TARGETS") = nb::tuple(builtin_targets);
  m.attr("PYTHON_CALLBACK_TARGET") =
      nb::str(pjrt::kPythonCallbackTarget.data(), pjrt::kPythonCallbackTarget.size());
  m.def(
      "python_callback_handler",
      [] { return reinterpret_cast<uintptr_t>(python::python_callback_handler()); },
      "The XLA_FFI_Handler* of PYTHON_CALLBACK_TARGET (src/python/host_callback.cpp).");
  m.def("set_python_callback_dispatcher", &python::set_python_callback_dispatcher,
        "dispatcher"_a,
        "Sets dispatch(callback_id, operands, results) -> str | None, which a firing Python "
        "callback calls with the GIL held (cyxla._ffi.callbacks.dispatch).");
  // The plugin's side of the FFI version check (cyxla._run.compat compares it with
  // jaxlib's; the custom-call tests check the probe with it). The underscore keeps it out
  // of the generated stubs.
  m.def(
      "_ffi_version",
      [ffi_version_tuple](const pjrt::Plugin& plugin) {  // GCOVR_EXCL_LINE
        return ffi_version_tuple(pjrt::ffi_version(plugin));
      },
      "plugin"_a, "The XLA FFI API version of the plugin's XLA.");
  m.def(
      "load_or_compile",
      // GCOVR_EXCL_START (the unwinding path of the statement)
      [](const Runtime& runtime, const std::string& source, std::string name,
         std::string platform, nb::bytes stablehlo, nb::bytes compile_options,
         const std::vector<SpecTuple>& inputs, const std::vector<SpecTuple>& outputs,
         std::vector<std::string> custom_calls, std::vector<size_t> donated_outputs) {
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
        const loading::Origin origin{source, ErrorKind::InvalidArgument, false};
        loading::Compiled compiled;
        cache::Warnings warnings;
        try {
          nb::gil_scoped_release release;
          compiled = loading::load_or_compile(runtime, program, origin, &warnings);
        } catch (...) {
          python::give_cache_warnings(warnings);
          throw;
        }
        python::give_cache_warnings(warnings);
        return nb::make_tuple(compiled.executable, compiled.cache_hit, compiled.compile_seconds,
                              compiled.load_seconds, compiled.cache_error);
      },
      "runtime"_a, "source"_a, "name"_a, "platform"_a, "stablehlo"_a, "compile_options"_a,
      "inputs"_a, "outputs"_a, "custom_calls"_a, "donated_outputs"_a,
      "The program's executable, from the disk cache or compiled (loading/load_or_compile.hpp): "
      "(executable, cache_hit, compile_seconds, load_seconds, cache_error). `source` starts "
      "every refusal; every spec and the outputs written in place are checked against the "
      "executable.");
  // A test hook (tests/test_hlo_signature.py checks it against jaxlib's compiled modules).
  m.def(
      "_hlo_signature",
      [](const std::string& format, nb::bytes data) -> nb::object {  // GCOVR_EXCL_LINE
        const std::optional<HloSignature> signature =
            read_hlo_signature(format, std::string_view(data.c_str(), data.size()));
        if (!signature) return nb::none();
        return nb::make_tuple(from_specs(signature->parameters), signature->aliases);
      },
      "format"_a, "data"_a,
      "(parameters, (output, parameter) aliases) of an optimized HLO module, or None for "
      "another format.");
  m.def(
      "library_identity",
      [](const pjrt::Plugin& plugin) {  // GCOVR_EXCL_LINE
        const cache::LibraryIdentity identity = cache::library_identity(plugin);
        return nb::make_tuple(identity.path, identity.size, identity.mtime_ns);
      },
      "plugin"_a,
      "(canonical path, size, mtime_ns) of the plugin's library, as the disk cache's key "
      "holds them.");
  // The disk cache's store, for cyxla/_cache/store.py.
  python::bind_cache(m);
  python::bind_compiled(m);

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
      // A test hook: whether the plugin writes each result straight into the caller's array.
      .def("_writes_in_place", &python::writes_in_place, "inputs"_a, "outputs"_a,
           "Runs the program once on arrays that are exactly its inputs and outputs; returns "
           "per output whether the plugin wrote the result in place (no copy).")
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
      // A test hook: Executable::execute itself (the C API's path) on host arrays, without
      // the kept buffers of run's _CachedRun, for the tests of its refusals and leaks.
      .def("_execute_exact", &python::run_on_buffers, "inputs"_a, "outputs"_a,
           "converted"_a = false,
           "Runs the program on host arrays: reads `inputs`, writes `outputs`. Returns False, "
           "running nothing, when the arguments are not exactly the program's (a list, a "
           "strided or misaligned array, another dtype); the caller converts and retries. "
           "`converted` inputs may carry bfloat16 as uint16.")
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
      .def("_execute", &python::run_batch_on_buffers, "n"_a, "inputs"_a, "outputs"_a,
           "Evaluates `n` points: reads the C-contiguous buffers `inputs`, writes `outputs`.");

  // Internal (Executable.run's per-call path), hence the underscore.
  nb::class_<python::CachedRun> cached_run(m, "_CachedRun",  // GCOVR_EXCL_LINE
                                           "Executable.run's calls, with the buffers of the "
                                           "last call's inputs kept for the next "
                                           "(runtime/cached_call.hpp).");
  // What a call returns, in one home: src/python/host_buffers.hpp.
  cached_run.attr("RAN") = int{python::CachedRun::kRan};
  cached_run.attr("INPUTS_REFUSED") = int{python::CachedRun::kInputsRefused};
  cached_run.attr("OUTPUTS_REFUSED") = int{python::CachedRun::kOutputsRefused};
  cached_run.attr("RAN_ASKING_FOR_VARIANT") = int{python::CachedRun::kRanAskingForVariant};
  cached_run.def(nb::init<std::shared_ptr<Executable>>(), "executable"_a)
      .def("__call__", &python::CachedRun::call, "inputs"_a, "outputs"_a, "converted"_a = false,
           "Runs the program on `inputs` into `outputs`: RAN, or RAN_ASKING_FOR_VARIANT when "
           "it asks for the variant that reads the unaligned inputs in place; or runs nothing "
           "and returns OUTPUTS_REFUSED when `outputs` is not a list or tuple of NumPy arrays "
           "exactly the outputs, else INPUTS_REFUSED when `inputs` are not exactly the inputs "
           "(a list, a strided or misaligned array, another dtype).")
      .def(
          "variant_inputs",
          [](const python::CachedRun& r) { return from_specs(r.variant_inputs()); },
          "The inputs of the variant the call that returned RAN_ASKING_FOR_VARIANT asked for "
          "(runtime/in_place_variant.hpp): the program's, a large unaligned one as a 1-D "
          "array 64 bytes longer, then s32[k], the offsets.")
      .def("read_in_place", &python::CachedRun::read_in_place, "variant"_a,
           "Runs `variant`, a compile of the program that takes variant_inputs(), for the "
           "calls whose unaligned inputs it reads in place.")
      .def_prop_ro("calls_read_in_place", &python::CachedRun::calls_read_in_place);

  nb::class_<python::BoundBuffers>(m, "BoundCall",  // GCOVR_EXCL_LINE
                                   "A program bound to the memory of NumPy arrays.")
      .def(nb::init<std::shared_ptr<Executable>, nb::handle, nb::handle>(), "executable"_a,
           "inputs"_a, "outputs"_a)
      .def("__call__", &python::BoundBuffers::call,
           "Runs the program on the inputs' current contents and writes the outputs; False, "
           "running nothing, while another thread is in a call of this bound call.");

  nb::class_<abi::Handle>(m, "NativeHandle",  // GCOVR_EXCL_LINE
                          "One reference to an executable for native callers (cyxla.h).")
      .def(nb::init<std::shared_ptr<Executable>>(), "executable"_a)
      .def(nb::init<std::shared_ptr<BatchedExecutable>>(), "executable"_a)
      .def_prop_ro("value", &abi::Handle::value);
}
