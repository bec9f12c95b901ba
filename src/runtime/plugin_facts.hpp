// What the disk cache's key and a runtime's checks need to know of a plugin without
// opening it: the library's identity, its PJRT version, its XLA version and its platform.
// An opened plugin tells them; a record of them (cache/plugin_record.hpp) lets a runtime
// run cached programs without loading the plugin at all.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pjrt/plugin.hpp"

namespace cyxla {

/// What identifies a plugin library: a rebuilt or reinstalled one differs in one of these.
struct LibraryIdentity {
  std::string path;  // canonical
  int64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const LibraryIdentity&) const = default;
};

/// The identity of the regular file at `path` as it is now, or nothing when there is no
/// such file (a name that only dlopen's search finds, say).
std::optional<LibraryIdentity> identify_library(const std::string& path);

struct PluginFacts {
  /// The library's identity, as the record that told the facts holds it; nothing for a
  /// runtime made from an opened plugin (the cache's key identifies it then).
  std::optional<LibraryIdentity> library;
  pjrt::Version version;
  /// The plugin's "xla_version" attribute, when it has one.
  std::optional<pjrt::NamedValue::Value> xla_version;
  /// cyxla's name of its client's platform (runtime/platforms.hpp) and that client's
  /// platform version.
  std::string platform;
  std::string platform_version;
  bool operator==(const PluginFacts&) const = default;
};

}  // namespace cyxla
