// The executable key's fields, hashed one by one.
#include "cache/executable_key.hpp"

#include <sys/stat.h>
#include <sys/utsname.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <variant>

#include "cache/settings.hpp"
#include "cache/store.hpp"
#include "common/error.hpp"
#include "common/sha256.hpp"
#include "runtime/runtime.hpp"

namespace cyxla::cache {
namespace {

using program::ProgramFile;

/// Bumped when the fields or their encoding change: older entries become misses.
constexpr std::string_view kKeyVersion = "cyxla executable key 1";

/// A SHA-256 fed (name, value) fields, each prefixed by its length.
class KeyHash {
 public:
  KeyHash& field(std::string_view name, std::string_view value) {
    part(name);
    part(value);
    return *this;
  }
  KeyHash& field(std::string_view name, int64_t value) {
    return field(name, std::string_view(std::to_string(value)));
  }
  std::string hexdigest() { return sha256_.hexdigest(); }

 private:
  void part(std::string_view bytes) {
    const std::string length = std::to_string(bytes.size()) + ":";
    sha256_.update(length).update(bytes);
  }
  Sha256 sha256_;
};

/// A named value's type tag and its text; a float has its shortest round-trip text.
std::pair<std::string_view, std::string> tagged(const pjrt::NamedValue::Value& value) {
  return std::visit(
      []<class T>(const T& v) -> std::pair<std::string_view, std::string> {
        if constexpr (std::is_same_v<T, std::string>) {
          return {"str", v};
        } else if constexpr (std::is_same_v<T, bool>) {
          return {"bool", v ? "1" : "0"};
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return {"int", std::to_string(v)};
        } else if constexpr (std::is_same_v<T, double>) {
          char text[32];
          const auto end = std::to_chars(text, text + sizeof(text), v).ptr;
          return {"float", std::string(text, end)};
        } else {
          std::string items;
          for (const int64_t i : v) items += std::to_string(i) + ",";
          return {"ints", items};
        }
      },
      value);
}

/// The host's architecture and CPU feature flags, which a CPU executable may use.
const std::pair<std::string, std::string>& host_identity() {
  static const std::pair<std::string, std::string> identity = [] {
    std::string features;
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
      if (!line.starts_with("flags") && !line.starts_with("Features")) continue;
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        features = strip(std::string_view(line).substr(colon + 1));
      }
      break;
    }
    utsname names{};
    ::uname(&names);
    return std::pair{std::string(names.machine), features};
  }();
  return identity;
}

}  // namespace

LibraryIdentity library_identity(const pjrt::Plugin& plugin) {
  static std::mutex mutex;
  static std::map<std::string, LibraryIdentity> known;  // guarded by mutex
  std::error_code error;
  const std::string path = std::filesystem::canonical(plugin.path(), error).string();
  struct stat info{};
  if (error || ::stat(path.c_str(), &info) != 0) {
    throw Error(ErrorKind::InvalidArgument, "cannot identify the plugin library " + plugin.path() +
                                                ": it is no longer there");
  }
  std::lock_guard lock(mutex);
  if (auto it = known.find(path); it != known.end()) return it->second;
  const int64_t mtime_ns =
      static_cast<int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
  return known[path] = {path, static_cast<int64_t>(info.st_size), mtime_ns};
}

ExecutableKey executable_key(const program::ProgramFile& program, const Runtime& runtime) {
  // A runtime made from a plugin's record has the identity the record matched, and
  // needs no plugin for any field: a cache hit of the kernel runner opens none.
  const PluginFacts& facts = runtime.facts();
  const LibraryIdentity library =
      facts.library ? *facts.library : library_identity(runtime.plugin());
  const std::string program_digest = KeyHash()
                                         .field("stablehlo", program.stablehlo)
                                         .field("compile_options",
                                                runtime.effective_compile_options(
                                                    program.stablehlo, program.compile_options))
                                         .hexdigest();
  KeyHash key;
  key.field("key", kKeyVersion)
      .field("program", program_digest)
      .field("platform", program.platform)
      .field("plugin_path", library.path)
      .field("plugin_size", library.size)
      .field("plugin_mtime_ns", library.mtime_ns)
      .field("pjrt_major", facts.version.major)
      .field("pjrt_minor", facts.version.minor);
  if (facts.xla_version) {
    const auto [tag, text] = tagged(*facts.xla_version);
    key.field("xla_version", tag).field("value", text);
  }
  // By name: the same options given in another order make the same client.
  std::map<std::string_view, const pjrt::NamedValue::Value*> options;
  for (const pjrt::NamedValue& option : runtime.options()) options[option.name] = &option.value;
  for (const auto& [name, value] : options) {
    const auto [tag, text] = tagged(*value);
    key.field("client_option", name).field(tag, text);
  }
  const auto& [machine, features] = host_identity();
  key.field("cyxla", cyxla_version())
      .field("machine", machine)
      .field("cpu_features", features);
  return {program_digest, key.hexdigest()};
}

}  // namespace cyxla::cache
