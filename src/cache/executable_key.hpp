// The disk cache's key of an executable: one SHA-256 over every field that decides the
// compiled code, each fed in with its name and length, so no two sets of fields share a
// key and no canonical text has to be agreed on.
#pragma once

#include <cstdint>
#include <string>

#include "program/program_file.hpp"
#include "runtime/plugin_facts.hpp"

namespace cyxla {
class Runtime;
namespace pjrt {
class Plugin;
}
}  // namespace cyxla

namespace cyxla::cache {

using cyxla::LibraryIdentity;

/// The identity of the library `plugin` was loaded from, as it was when this process
/// first asked (a reinstall meanwhile does not change what is loaded). Throws
/// cyxla::Error when the library cannot be found.
LibraryIdentity library_identity(const pjrt::Plugin& plugin);

/// The disk cache's key of a program compiled by a runtime, as 64 hex digits each.
struct ExecutableKey {
  /// The digest of the program's StableHLO and compile options (with the platform's
  /// defaults, Runtime::effective_compile_options), which its entry records:
  /// an entry stored under the wrong key by a faulty writer is caught by it.
  std::string program;
  /// The digest of `program` and of everything else that decides the compiled code: the
  /// platform, the plugin (library identity, PJRT version, XLA version), the client's
  /// options, cyxla's version and the host (machine, CPU features).
  std::string key;
};

/// The key of `program` compiled by `runtime` on this host. Throws cyxla::Error when the
/// plugin library cannot be identified.
ExecutableKey executable_key(const program::ProgramFile& program, const Runtime& runtime);

}  // namespace cyxla::cache
