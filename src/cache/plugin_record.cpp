// A plugin's facts written to the disk cache and read back, field by checked field.
#include "cache/plugin_record.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <limits>

#include "cache/entry.hpp"
#include "cache/store.hpp"
#include "common/sha256.hpp"
#include "runtime/platforms.hpp"

namespace cyxla::cache {
namespace {

/// A named value's type, as a record tags it.
constexpr std::string_view kTags[] = {"str", "int", "ints", "float", "bool"};

json::Value tagged(const pjrt::NamedValue::Value& value) {
  json::Value recorded = std::visit(
      []<class T>(const T& v) -> json::Value {
        if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return json::Array(v.begin(), v.end());
        } else {
          return v;
        }
      },
      value);
  return json::Object{{"type", std::string(kTags[value.index()])}, {"value", std::move(recorded)}};
}

[[noreturn]] void refuse(std::string_view why) {
  throw Damaged("the plugin record " + std::string(why));
}

const json::Value& member(const json::Object& object, std::string_view name) {
  const auto it = object.find(name);
  if (it == object.end()) refuse("has no '" + std::string(name) + "'");
  return it->second;
}

template <class T>
const T& typed(const json::Object& object, std::string_view name) {
  const T* value = member(object, name).as<T>();
  if (value == nullptr) refuse("has a '" + std::string(name) + "' of the wrong type");
  return *value;
}

int version_part(const json::Value& value) {
  const int64_t* part = value.as<int64_t>();
  if (part == nullptr || *part < 0 || *part > std::numeric_limits<int>::max()) {
    refuse("has a PJRT version that is not two counts");
  }
  return static_cast<int>(*part);
}

pjrt::NamedValue::Value untagged(const json::Value& recorded, std::string_view what) {
  const auto* fields = recorded.as<json::Object>();
  if (fields == nullptr) refuse("has " + std::string(what) + " that is not an object");
  const std::string& tag = typed<std::string>(*fields, "type");
  const json::Value& value = member(*fields, "value");
  const auto as = [&]<class T>(const T*) -> T {
    const T* v = value.as<T>();
    if (v == nullptr) refuse("has " + std::string(what) + " whose value is not its type");
    return *v;
  };
  if (tag == "str") return as(static_cast<const std::string*>(nullptr));
  if (tag == "int") return as(static_cast<const int64_t*>(nullptr));
  if (tag == "float") return as(static_cast<const double*>(nullptr));
  if (tag == "bool") return as(static_cast<const bool*>(nullptr));
  if (tag == "ints") {
    std::vector<int64_t> items;
    for (const json::Value& item : as(static_cast<const json::Array*>(nullptr))) {
      const int64_t* i = item.as<int64_t>();
      if (i == nullptr) refuse("has " + std::string(what) + " whose list holds a non-integer");
      items.push_back(*i);
    }
    return items;
  }
  refuse("has " + std::string(what) + " of an unknown type");
}

/// `options` by name; nothing when a name comes twice.
std::optional<std::map<std::string_view, const pjrt::NamedValue::Value*>> by_name(
    const std::vector<pjrt::NamedValue>& options) {
  std::map<std::string_view, const pjrt::NamedValue::Value*> named;
  for (const pjrt::NamedValue& option : options) {
    if (!named.emplace(option.name, &option.value).second) return std::nullopt;
  }
  return named;
}

}  // namespace

bool same_options(const std::vector<pjrt::NamedValue>& a, const std::vector<pjrt::NamedValue>& b) {
  const auto named_a = by_name(a), named_b = by_name(b);
  if (!named_a || !named_b || named_a->size() != named_b->size()) return false;
  return std::ranges::equal(*named_a, *named_b, [](const auto& x, const auto& y) {
    return x.first == y.first && *x.second == *y.second;
  });
}

std::string plugin_record_key(const LibraryIdentity& library) {
  return Sha256()
      .update(library.path)
      .update(std::string_view("\0", 1))
      .update(std::to_string(library.size))
      .update(std::string_view("\0", 1))
      .update(std::to_string(library.mtime_ns))
      .hexdigest();
}

json::Object plugin_record(const PluginRecord& record) {
  const PluginFacts& facts = record.facts;
  const LibraryIdentity& library = facts.library.value();
  json::Array options;
  for (const pjrt::NamedValue& option : record.client_options) {
    json::Value value = tagged(option.value);
    std::get<json::Object>(value.data)["name"] = option.name;
    options.push_back(std::move(value));
  }
  return json::Object{
      {"name", std::filesystem::path(library.path).filename().string()},
      {"library", library.path},
      {"size", library.size},
      {"mtime_ns", library.mtime_ns},
      {"pjrt_version", json::Array{int64_t{facts.version.major}, int64_t{facts.version.minor}}},
      {"xla_version", facts.xla_version ? tagged(*facts.xla_version) : json::Value(nullptr)},
      {"platform", facts.platform},
      {"platform_version", facts.platform_version},
      {"client_options", std::move(options)},
  };
}

PluginRecord read_plugin_record(const json::Object& header, const LibraryIdentity& library) {
  PluginRecord record;
  PluginFacts& facts = record.facts;
  const LibraryIdentity recorded{typed<std::string>(header, "library"),
                                 typed<int64_t>(header, "size"),
                                 typed<int64_t>(header, "mtime_ns")};
  if (recorded != library) refuse("is of another library, or of another build of it");
  facts.library = recorded;
  const json::Array& version = typed<json::Array>(header, "pjrt_version");
  if (version.size() != 2) refuse("has a PJRT version that is not two counts");
  facts.version = {version_part(version[0]), version_part(version[1])};
  // What Plugin::load would refuse is left to it, to say so.
  if (facts.version.major != CYXLA_PJRT_API_MAJOR || facts.version.minor < pjrt::kOldestMinor) {
    refuse("has a PJRT version cyxla does not take");
  }
  const json::Value& xla_version = member(header, "xla_version");
  if (xla_version.as<std::nullptr_t>() == nullptr) {
    facts.xla_version = untagged(xla_version, "an 'xla_version'");
  }
  facts.platform = typed<std::string>(header, "platform");
  if (find_platform(facts.platform) == nullptr) refuse("names a platform cyxla does not know");
  facts.platform_version = typed<std::string>(header, "platform_version");
  for (const json::Value& option : typed<json::Array>(header, "client_options")) {
    const auto* fields = option.as<json::Object>();
    if (fields == nullptr) refuse("has a client option that is not an object");
    record.client_options.push_back(
        {typed<std::string>(*fields, "name"), untagged(option, "a client option")});
  }
  if (!by_name(record.client_options)) refuse("names a client option twice");
  return record;
}

std::optional<PluginRecord> recorded_plugin(const LibraryIdentity& library, std::string* why,
                                            Warnings* warnings) noexcept {
  try {
    const std::optional<Entry> entry = read(kPluginKind, plugin_record_key(library), warnings);
    if (!entry) return std::nullopt;
    return read_plugin_record(entry->header, library);
  } catch (const std::exception& e) {
    if (why != nullptr) *why = e.what();
    return std::nullopt;
  }
}

std::string record_plugin(const PluginRecord& record, Warnings* warnings) noexcept {
  try {
    write(kPluginKind, plugin_record_key(record.facts.library.value()), plugin_record(record),
          "", warnings);
    return "";
  } catch (const std::exception& e) {
    return std::string("could not record the plugin's facts: ") + e.what();
  }
}

}  // namespace cyxla::cache
