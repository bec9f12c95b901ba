// The key's document (keys.py's executable_source), the header an executable's entry
// holds (executables.py's store) and the checks a hit passes (executables.py's _use).
#include "program/executable_cache.hpp"

#include <sys/stat.h>
#include <sys/utsname.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <utility>
#include <variant>

#include "program/disk_cache.hpp"
#include "program/sha256.hpp"
#include "runtime/executable.hpp"
#include "runtime/runtime.hpp"

namespace cyxla::program {
namespace {

constexpr std::string_view kKind = "executables";

/// A JSON array of `items`, moved in (an initializer list would copy them).
template <class... Items>
json::Array array_of(Items&&... items) {
  json::Array array;
  array.reserve(sizeof...(items));
  (array.emplace_back(std::forward<Items>(items)), ...);
  return array;
}

/// A client option as keys.py's _tagged writes it: [type, text], floats by repr.
json::Value tagged(const pjrt::NamedValue::Value& value) {
  return std::visit(
      []<class T>(const T& v) -> json::Value {
        if constexpr (std::is_same_v<T, std::string>) {
          return array_of("str", v);
        } else if constexpr (std::is_same_v<T, bool>) {
          return array_of("bool", v);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return array_of("int", std::to_string(v));
        } else if constexpr (std::is_same_v<T, double>) {
          return array_of("float", json::float_repr(v));
        } else {
          // Python holds a list of ints as a list (a tuple would be tagged "tuple").
          json::Array items;
          for (const int64_t i : v) items.emplace_back(array_of("int", std::to_string(i)));
          return array_of("list", std::move(items));
        }
      },
      value);
}

/// A plugin attribute as JSON, as Python holds it (a list of ints is a list).
json::Value attribute(const pjrt::NamedValue::Value& value) {
  return std::visit(
      []<class T>(const T& v) -> json::Value {
        if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          json::Array items;
          for (const int64_t i : v) items.emplace_back(i);
          return items;
        } else {
          return json::Value(v);
        }
      },
      value);
}

/// keys.py's host_identity: the architecture and a digest of the CPU's feature flags,
/// which a CPU executable may use.
const json::Object& host_identity() {
  static const json::Object identity = [] {
    std::string features;
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
      if (!line.starts_with("flags") && !line.starts_with("Features")) continue;
      const size_t colon = line.find(':');
      if (colon == std::string::npos) break;
      features = disk_cache::strip(std::string_view(line).substr(colon + 1));
      break;
    }
    utsname names{};
    ::uname(&names);
    return json::Object{{"machine", std::string(names.machine)},
                        {"features", sha256_hex(features)}};
  }();
  return identity;
}

/// (size, mtime_ns) of `path` when this process first asked: the library it loaded,
/// even if a reinstall replaces the file meanwhile. Throws when it cannot be read.
std::pair<int64_t, int64_t> file_identity(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::pair<int64_t, int64_t>> known;  // guarded by mutex
  std::lock_guard lock(mutex);
  if (auto it = known.find(path); it != known.end()) return it->second;
  struct stat info{};
  if (::stat(path.c_str(), &info) != 0) {
    throw std::runtime_error("cannot identify the plugin " + path);
  }
  const int64_t mtime_ns =
      static_cast<int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
  return known[path] = {static_cast<int64_t>(info.st_size), mtime_ns};
}

/// keys.py's library_identity.
json::Object library_identity(const pjrt::Plugin& plugin) {
  // Python records the path it loaded the library from, which it resolved.
  const std::string path = std::filesystem::canonical(plugin.path()).string();
  const auto [size, mtime_ns] = file_identity(path);
  json::Value xla_version;  // null when the plugin does not say
  for (const pjrt::NamedValue& a : plugin.attributes()) {
    if (a.name == "xla_version") xla_version = attribute(a.value);
  }
  return json::Object{
      {"path", path},
      {"size", size},
      {"mtime_ns", mtime_ns},
      {"pjrt_version", array_of(plugin.version().major, plugin.version().minor)},
      {"xla_version", std::move(xla_version)},
  };
}

/// Input specs as entries record them: [[element type number, [dims]], ...].
json::Array spec_records(const std::vector<TensorSpec>& specs) {
  json::Array records;
  for (const TensorSpec& spec : specs) {
    json::Array dims;
    for (const int64_t d : spec.dims) dims.emplace_back(d);
    records.emplace_back(array_of(static_cast<int64_t>(spec.type), std::move(dims)));
  }
  return records;
}

/// The outputs a program writes in place, as entries record them: [index, ...].
json::Array donated_record(const std::vector<size_t>& donated) {
  json::Array record;
  for (const size_t index : donated) record.emplace_back(static_cast<int64_t>(index));
  return record;
}

/// An entry's recorded outputs written in place, used as recorded (as Python does: a hit
/// reads no StableHLO), or nothing unless they are distinct indices of `file`'s outputs.
std::optional<std::vector<size_t>> donated_outputs(const json::Value* recorded,
                                                   const ProgramFile& file) {
  const json::Array* items = recorded != nullptr ? recorded->as<json::Array>() : nullptr;
  if (items == nullptr) return std::nullopt;
  std::vector<size_t> donated;
  for (const json::Value& item : *items) {
    const int64_t* index = item.as<int64_t>();
    if (index == nullptr || *index < 0 || static_cast<size_t>(*index) >= file.outputs.size() ||
        std::ranges::find(donated, static_cast<size_t>(*index)) != donated.end()) {
      return std::nullopt;
    }
    donated.push_back(static_cast<size_t>(*index));
  }
  return donated;
}

/// The entry's executable, or null when it is not the one `key` names (executables.py's
/// _use, in its order).
std::shared_ptr<Executable> use(const disk_cache::Entry& entry, const ProgramFile& file,
                                const Runtime& runtime, const ExecutableKey& key) {
  const auto field = [&](std::string_view name) -> const json::Value* {
    const auto it = entry.header.find(name);
    return it != entry.header.end() ? &it->second : nullptr;
  };
  const json::Value* plugin = field("plugin");
  if (plugin == nullptr || *plugin != key.source.at("plugin")) return nullptr;
  const json::Value* source = field("source");
  if (source == nullptr || *source != json::Value(key.source)) return nullptr;
  const json::Value* inputs = field("inputs");
  if (inputs == nullptr || *inputs != json::Value(spec_records(file.inputs))) return nullptr;
  std::optional<std::vector<size_t>> donated = donated_outputs(field("donated"), file);
  if (!donated) return nullptr;
  std::shared_ptr<Executable> executable =
      runtime.deserialize(entry.payload, file.inputs, std::move(*donated));
  if (executable->outputs() != file.outputs) return nullptr;
  return executable;
}

}  // namespace

std::optional<ExecutableKey> executable_key(const ProgramFile& file,
                                            const Runtime& runtime) noexcept {
  try {
    if (!disk_cache::configured_directory()) return std::nullopt;
    json::Object options;
    for (const pjrt::NamedValue& option : runtime.options()) {
      options.insert_or_assign(option.name, tagged(option.value));
    }
    ExecutableKey key;
    key.source = json::Object{
        {"stablehlo", sha256_hex(file.stablehlo)},
        {"compile_options", sha256_hex(file.compile_options)},
        {"platform", file.platform},
        {"plugin", library_identity(runtime.plugin())},
        {"client_options", std::move(options)},
        {"cyxla", std::string(disk_cache::cyxla_version())},
        {"host", host_identity()},
    };
    key.key = sha256_hex(json::dump(key.source));
    return key;
  } catch (...) {  // no key to trust: compiled, not stored
    return std::nullopt;
  }
}

std::shared_ptr<Executable> load_cached(const ProgramFile& file, const Runtime& runtime,
                                        const ExecutableKey& key) noexcept {
  try {
    std::optional<disk_cache::Entry> entry = disk_cache::read(kKind, key.key);
    return entry ? use(*entry, file, runtime, key) : nullptr;
  } catch (...) {  // damaged, foreign or unsafe, or the plugin refused it: compiled instead
    return nullptr;
  }
}

void store_executable(const ProgramFile& file, const ExecutableKey& key,
                      const Executable& executable) noexcept {
  try {
    json::Object header{
        {"name", file.name},
        {"platform", file.platform},
        {"plugin", key.source.at("plugin")},
        {"source", key.source},
        {"inputs", spec_records(file.inputs)},
        {"donated", donated_record(file.donated_outputs)},
        {"fingerprint", hex(executable.fingerprint())},
    };
    disk_cache::write(kKind, key.key, std::move(header), executable.serialize());
  } catch (...) {  // the program runs anyway; the next load compiles again
  }
}

}  // namespace cyxla::program
