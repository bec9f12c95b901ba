// Loading a plugin and checking it, and turning PJRT errors into cyxla::Error.
#include "pjrt/plugin.hpp"

#include <dlfcn.h>

#include <exception>
#include <mutex>
#include <unordered_map>

#include "common/utf8.hpp"

namespace cyxla::pjrt {

std::vector<PJRT_NamedValue> to_pjrt(const std::vector<NamedValue>& values) {
  std::vector<PJRT_NamedValue> out;
  out.reserve(values.size());
  for (const NamedValue& v : values) {
    PJRT_NamedValue nv{};
    nv.struct_size = PJRT_NamedValue_STRUCT_SIZE;
    nv.name = v.name.c_str();
    nv.name_size = v.name.size();
    nv.value_size = 1;
    if (const auto* s = std::get_if<std::string>(&v.value)) {
      nv.type = PJRT_NamedValue_kString;
      nv.string_value = s->c_str();
      nv.value_size = s->size();
    } else if (const auto* i = std::get_if<int64_t>(&v.value)) {
      nv.type = PJRT_NamedValue_kInt64;
      nv.int64_value = *i;
    } else if (const auto* l = std::get_if<std::vector<int64_t>>(&v.value)) {
      nv.type = PJRT_NamedValue_kInt64List;
      nv.int64_array_value = l->data();
      nv.value_size = l->size();
    } else if (const auto* f = std::get_if<double>(&v.value)) {
      nv.type = PJRT_NamedValue_kFloat;
      nv.float_value = static_cast<float>(*f);
    } else {
      nv.type = PJRT_NamedValue_kBool;
      nv.bool_value = std::get<bool>(v.value);
    }
    out.push_back(nv);
  }
  return out;
}

std::string error_message(const PJRT_Api* api, const PJRT_Error* error) {
  auto args = make_args<PJRT_Error_Message_Args>();
  args.error = error;
  api->PJRT_Error_Message(&args);
  return with_bytes_escaped(std::string_view(args.message, args.message_size));
}

void check(OwnedError error, std::string_view function, ErrorKind kind) {
  if (!error) return;
  const PJRT_Api* api = error.api();
  std::string message = std::string(function) + " failed: " + error_message(api, error.get());
  throw Error(kind, message);
}

void missing_function(const Plugin& plugin, std::string_view function) {
  throw Error(ErrorKind::PluginVersion,
              std::string(function) + " is missing from the plugin " + plugin.path() + " (PJRT " +
                  std::to_string(plugin.version().major) + "." +
                  std::to_string(plugin.version().minor) + "); install a newer plugin");
}

OwnedError invoke(const PJRT_Api* api, PJRT_Error* (*thunk)(const PJRT_Api*, void*),
                  void* args, std::string_view function, ErrorKind kind) {
  try {
    return OwnedError(api, thunk(api, args));
  } catch (const std::exception& e) {
    // A C++ plugin may let an exception escape its C functions (seen for an invalid
    // client option); report it like any other failure of the call.
    throw Error(kind, std::string(function) + " failed inside the plugin: " + e.what());
  }
}

namespace {

NamedValue copy_attribute(const PJRT_NamedValue& v) {
  NamedValue out{std::string(v.name, v.name_size), {}};
  switch (v.type) {
    case PJRT_NamedValue_kString:
      out.value = std::string(v.string_value, v.value_size);
      break;
    case PJRT_NamedValue_kInt64:
      out.value = v.int64_value;
      break;
    case PJRT_NamedValue_kInt64List:
      out.value = std::vector<int64_t>(v.int64_array_value, v.int64_array_value + v.value_size);
      break;
    case PJRT_NamedValue_kFloat:
      out.value = static_cast<double>(v.float_value);
      break;
    case PJRT_NamedValue_kBool:
      out.value = v.bool_value;
      break;
  }
  return out;
}

std::string version_text(int major, int minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace

Plugin::Plugin(Key, std::string path, const PJRT_Api* api)
    : path_(std::move(path)),
      api_(api),
      version_{api->pjrt_api_version.major_version, api->pjrt_api_version.minor_version} {}

std::shared_ptr<const Plugin> Plugin::load(const std::string& path) {
  // dlopen returns the same handle for the same library; so must we, since a plugin
  // may be initialized only once per process.
  static std::mutex mutex;
  static std::unordered_map<const PJRT_Api*, std::shared_ptr<const Plugin>> loaded;
  std::lock_guard lock(mutex);

  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* reason = dlerror();
    throw Error(ErrorKind::PluginLoad, "cannot load the PJRT plugin " + path + ": " +
                                           (reason != nullptr ? reason : "unknown reason"));
  }
  auto get_api = reinterpret_cast<PJRT_GetPjrtApi>(dlsym(library, "GetPjrtApi"));
  if (get_api == nullptr) {
    throw Error(ErrorKind::PluginLoad,
                path + " is not a PJRT plugin: it does not export GetPjrtApi");
  }
  const PJRT_Api* api = get_api();
  if (api == nullptr) {
    throw Error(ErrorKind::PluginLoad, path + " returned no PJRT_Api from GetPjrtApi");
  }
  if (auto it = loaded.find(api); it != loaded.end()) return it->second;

  const int major = api->pjrt_api_version.major_version;
  const int minor = api->pjrt_api_version.minor_version;
  if (major != CYXLA_PJRT_API_MAJOR || minor < kOldestMinor) {
    throw Error(ErrorKind::PluginVersion,
                "the PJRT plugin " + path + " implements PJRT API " + version_text(major, minor) +
                    ", but cyxla needs " + std::to_string(CYXLA_PJRT_API_MAJOR) + ".x with x >= " +
                    std::to_string(kOldestMinor) + " (it was written against " +
                    version_text(CYXLA_PJRT_API_MAJOR, CYXLA_PJRT_API_MINOR) +
                    "); install a plugin built from a matching XLA");
  }
  if (api->struct_size < offsetof(PJRT_Api, PJRT_Plugin_Attributes) + sizeof(void*)) {
    throw Error(ErrorKind::PluginLoad, path + " has a truncated PJRT_Api table");
  }

  auto plugin = std::make_shared<Plugin>(Key{}, path, api);
  // Every failed call is read and freed through these two, Initialize's first: without
  // them a plugin's error could be neither reported nor destroyed. (A table that lacks
  // Initialize too is named by that first missing call, as for any other slot.)
  if (!plugin->has<&PJRT_Api::PJRT_Plugin_Initialize>()) {
    missing_function(*plugin, "PJRT_Plugin_Initialize");
  }
  if (!plugin->has<&PJRT_Api::PJRT_Error_Message>() ||
      !plugin->has<&PJRT_Api::PJRT_Error_Destroy>()) {
    throw Error(ErrorKind::PluginLoad,
                path + " lacks PJRT_Error_Message or PJRT_Error_Destroy in its PJRT_Api table: "
                       "cyxla could not report its errors; install a complete plugin");
  }
  auto init = make_args<PJRT_Plugin_Initialize_Args>();
  CYXLA_PJRT_CALL(*plugin, PJRT_Plugin_Initialize, init, ErrorKind::PluginLoad);
  auto attrs = make_args<PJRT_Plugin_Attributes_Args>();
  CYXLA_PJRT_CALL(*plugin, PJRT_Plugin_Attributes, attrs);
  for (size_t i = 0; i < attrs.num_attributes; ++i) {
    plugin->attributes_.push_back(copy_attribute(attrs.attributes[i]));
  }
  loaded.emplace(api, plugin);
  return plugin;
}

const PJRT_Extension_Base* Plugin::extension(PJRT_Extension_Type type) const noexcept {
  for (const PJRT_Extension_Base* e = api_->extension_start; e != nullptr; e = e->next) {
    if (e->type == type) return e;
  }
  return nullptr;
}

Executable executable_of(const Plugin& plugin, PJRT_LoadedExecutable* loaded) {
  auto args = make_args<PJRT_LoadedExecutable_GetExecutable_Args>();
  args.loaded_executable = loaded;
  CYXLA_PJRT_CALL(plugin, PJRT_LoadedExecutable_GetExecutable, args);
  return Executable(plugin.api(), args.executable);
}

}  // namespace cyxla::pjrt
