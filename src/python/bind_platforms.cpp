// The PJRT API versions cyxla speaks and the table of platforms (runtime/platforms.hpp),
// which cyxla._platforms reads.
#include <nanobind/nanobind.h>

#include <variant>

#include "pjrt/plugin.hpp"
#include "python/bindings.hpp"
#include "runtime/host_memory.hpp"
#include "runtime/platforms.hpp"

namespace nb = nanobind;

namespace cyxla::python {
namespace {

nb::str text(std::string_view s) { return nb::str(s.data(), s.size()); }

}  // namespace

void bind_platforms(nb::module_& m) {
  m.attr("PJRT_API_MAJOR") = CYXLA_PJRT_API_MAJOR;
  m.attr("PJRT_API_MINOR") = CYXLA_PJRT_API_MINOR;
  m.attr("OLDEST_PJRT_API_MINOR") = pjrt::kOldestMinor;
  m.attr("HOST_ALIGNMENT") = kHostAlignment;

  nb::list platforms;
  nb::dict xla_platforms;
  nb::dict client_defaults;
  nb::dict compile_defaults;
  for (const Platform& p : kPlatforms) {
    const nb::str name = text(p.name);
    platforms.append(name);
    if (!p.xla_name.empty()) xla_platforms[name] = text(p.xla_name);
    nb::dict defaults;
    for (const DefaultOption& o : p.client_defaults) {
      defaults[text(o.name)] = std::visit([](auto v) { return nb::cast(v); }, o.value);
    }
    client_defaults[name] = defaults;
    nb::list compile;  // (option, value, the operation whose programs get it, or "")
    for (const CompileDefault& o : p.compile_defaults) {
      compile.append(nb::make_tuple(text(o.name), text(o.value), text(o.operation)));
    }
    compile_defaults[name] = nb::tuple(compile);
  }
  m.attr("PLATFORMS") = nb::tuple(platforms);
  m.attr("XLA_PLATFORMS") = xla_platforms;
  m.attr("CLIENT_DEFAULTS") = client_defaults;
  m.attr("COMPILE_DEFAULTS") = compile_defaults;
  nb::dict aliases;
  for (const auto& [alias, platform] : kPlatformAliases) aliases[text(alias)] = text(platform);
  m.attr("PLATFORM_ALIASES") = aliases;
}

}  // namespace cyxla::python
