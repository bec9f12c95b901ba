// Plugins as Python sees them: Plugin, typed XLA FFI handlers registered with a plugin
// (pjrt/ffi.hpp), the Python callbacks' handler, and what the disk cache's key records of
// a plugin's library.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>

#include "cache/executable_key.hpp"
#include "pjrt/ffi.hpp"
#include "pjrt/plugin.hpp"
#include "python/bindings.hpp"
#include "python/host_callback.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cyxla::python {
namespace {

/// An XLA FFI version as (major, minor), or None where the plugin did not tell.
nb::object ffi_version_tuple(const std::optional<pjrt::FfiVersion>& v) {
  if (!v) return nb::none();
  return nb::make_tuple(v->major, v->minor);
}

}  // namespace

// Coverage: gcov maps only the unwinding path of a multi-line binding statement to the
// line it starts on; that path runs only if the import fails, so those lines carry
// GCOVR_EXCL_LINE.
void bind_plugins(nb::module_& m) {
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

  m.def(
      "register_ffi_handler",
      // GCOVR_EXCL_START (the unwinding path of the statement)
      [](const pjrt::Plugin& plugin, const std::string& name, uintptr_t handler,
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
      [] { return reinterpret_cast<uintptr_t>(python_callback_handler()); },
      "The XLA_FFI_Handler* of PYTHON_CALLBACK_TARGET (src/python/host_callback.cpp).");
  m.def("set_python_callback_dispatcher", &set_python_callback_dispatcher, "dispatcher"_a,
        "Sets dispatch(callback_id, operands, results) -> str | None, which a firing Python "
        "callback calls with the GIL held (cyxla._ffi.callbacks.dispatch).");
  // The plugin's side of the FFI version check (cyxla._run.compat compares it with
  // jaxlib's; the custom-call tests check the probe with it). The underscore keeps it out
  // of the generated stubs.
  m.def(
      "_ffi_version",
      [](const pjrt::Plugin& plugin) { return ffi_version_tuple(pjrt::ffi_version(plugin)); },
      "plugin"_a, "The XLA FFI API version of the plugin's XLA.");
  m.def(
      "library_identity",
      [](const pjrt::Plugin& plugin) {  // GCOVR_EXCL_LINE
        const cache::LibraryIdentity identity = cache::library_identity(plugin);
        return nb::make_tuple(identity.path, identity.size, identity.mtime_ns);
      },
      "plugin"_a,
      "(canonical path, size, mtime_ns) of the plugin's library, as the disk cache's key "
      "holds them.");
}

}  // namespace cyxla::python
