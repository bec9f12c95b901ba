// Opening the process's runtime, loading program files onto it and registering custom-call
// handlers with its plugin, for callers without Python. In a Python process the runtime
// that cyxla.initialize created is the one these use (Runtime::current).
#include "abi/standalone.hpp"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "abi/c_enum.hpp"
#include "abi/registry.hpp"
#include "abi/status.hpp"
#include "cache/plugin_record.hpp"
#include "common/error.hpp"
#include "loading/load_or_compile.hpp"
#include "pjrt/ffi.hpp"
#include "program/program_file.hpp"
#include "runtime/client_options.hpp"
#include "runtime/executable.hpp"
#include "runtime/platforms.hpp"
#include "runtime/runtime.hpp"

namespace cyxla::abi {
namespace {

/// The runtime the C callers hold open, and how many opens hold it.
std::mutex open_mutex;
std::shared_ptr<Runtime> held;  // guarded by open_mutex
size_t opens = 0;               // guarded by open_mutex

std::vector<pjrt::NamedValue> client_options(const cyxla_RuntimeOptions& options) {
  if (options.num_client_options != 0 && options.client_options == nullptr) {
    throw Error(ErrorKind::InvalidArgument,
                "options->client_options is NULL, but num_client_options is " +
                    std::to_string(options.num_client_options));
  }
  std::vector<pjrt::NamedValue> values;
  for (size_t i = 0; i < options.num_client_options; ++i) {
    const cyxla_ClientOption& o = options.client_options[i];
    if (o.name == nullptr) {
      throw Error(ErrorKind::InvalidArgument, "client option " + std::to_string(i) + " has no name");
    }
    switch (raw_value(o.type)) {
      case CYXLA_OPTION_STRING:
        if (o.string_value == nullptr) {
          throw Error(ErrorKind::InvalidArgument,
                      std::string("client option '") + o.name + "' is a string, but string_value is NULL");
        }
        values.push_back({o.name, std::string(o.string_value)});
        break;
      case CYXLA_OPTION_INT64:
        values.push_back({o.name, o.int64_value});
        break;
      case CYXLA_OPTION_FLOAT:
        values.push_back({o.name, o.float_value});
        break;
      case CYXLA_OPTION_BOOL:
        values.push_back({o.name, o.int64_value != 0});
        break;
      default:
        throw Error(ErrorKind::InvalidArgument,
                    std::string("client option '") + o.name + "' has the unknown type " +
                        std::to_string(raw_value(o.type)));
    }
  }
  return values;
}

/// Whether open_runtime may defer loading the plugin: unless CYXLA_DEFER_PLUGIN is "0".
bool defers_plugin() {
  const char* value = std::getenv("CYXLA_DEFER_PLUGIN");
  return value == nullptr || std::string_view(value) != "0";
}

/// What records the facts a plugin at `library` told when its client was created with
/// `options`, for the next process that asks for the same options to defer it.
Runtime::OnOpen record_facts(const LibraryIdentity& library,
                             std::vector<pjrt::NamedValue> options) {
  return [library, options = std::move(options)](const PluginFacts& told) {
    cache::PluginRecord record{told, options};
    record.facts.library = library;
    cache::record_plugin(record);  // a failure costs the next process a dlopen only
  };
}

/// The runtime to share or to create, for open_runtime. Called with open_mutex held.
std::shared_ptr<Runtime> open(const cyxla_RuntimeOptions* options) {
  // Checked even when a runtime is shared and they go unused: bad input is refused alike.
  const std::vector<pjrt::NamedValue> values =
      options != nullptr ? client_options(*options) : std::vector<pjrt::NamedValue>{};
  const char* given = options != nullptr ? options->plugin_path : nullptr;
  if (given != nullptr && *given == '\0') given = nullptr;
  std::shared_ptr<Runtime> current = Runtime::current();
  if (current) {
    // One runtime per process: another plugin cannot join it.
    std::error_code ignored;
    if (given != nullptr && !std::filesystem::equivalent(given, current->plugin_path(), ignored)) {
      throw Error(ErrorKind::InvalidArgument,
                  "this process runs the plugin " + current->plugin_path() +
                      " already, and a process has one runtime; cannot open " + given);
    }
    return current;
  }
  const char* path = given != nullptr ? given : std::getenv("CYXLA_PJRT_PLUGIN");
  if (path == nullptr || *path == '\0') {
    throw Error(ErrorKind::InvalidArgument,
                "no PJRT plugin: set options->plugin_path or CYXLA_PJRT_PLUGIN to the plugin's "
                "library (`python -m cyxla plugins` lists the installed ones)");
  }
  // Taken before the plugin is loaded: a record never pairs a library's identity with
  // facts that a later build of it told.
  const std::optional<LibraryIdentity> library = identify_library(path);
  std::optional<cache::PluginRecord> recorded;
  if (library) recorded = cache::recorded_plugin(*library);
  if (recorded && defers_plugin()) {
    // Only options a client of this very file was created with: the plugin alone can
    // check others, and a bad one is refused here, not at some later call.
    std::vector<pjrt::NamedValue> merged = with_default_options(recorded->facts.platform, values);
    if (cache::same_options(merged, recorded->client_options)) {
      auto deferred = Runtime::create_deferred(path, std::move(recorded->facts), merged,
                                               record_facts(*library, merged));
      Runtime::make_current(deferred);
      return deferred;
    }
  }
  const auto plugin = pjrt::Plugin::load(path);
  // The platform is known once there is a client: the first gets the caller's options
  // alone and decides which platform's defaults (runtime/platforms.hpp) apply.
  std::shared_ptr<Runtime> created = Runtime::create(plugin, values);
  const std::vector<pjrt::NamedValue> merged = with_default_options(created->platform(), values);
  if (merged.size() != values.size()) {
    created.reset();  // one client at a time: the first is destroyed before the second
    created = Runtime::create(plugin, merged);
  }
  if (library) {
    PluginFacts told = created->facts();
    told.library = library;
    if (!recorded || told != recorded->facts ||
        !cache::same_options(created->options(), recorded->client_options)) {
      record_facts(*library, created->options())(created->facts());
    }
  }
  Runtime::make_current(created);
  return created;
}

/// load_program's work; may throw.
uint64_t load(const std::string& path) {
  const std::shared_ptr<Runtime> runtime = Runtime::current();
  if (!runtime) {
    throw Error(ErrorKind::InvalidArgument,
                "no runtime is open: call cyxla_open_runtime before loading " + path);
  }
  const loading::Origin origin{path, ErrorKind::ProgramFile};
  return Registry::instance().add(
      loading::load_or_compile(*runtime, program::read(path), origin).executable);
}

/// The XLA name of a platform ("Host" for the CPU), as registrations use it.
std::string xla_platform(std::string_view platform) {
  const Platform* known = find_platform(normalize_platform(platform));
  if (known != nullptr && !known->xla_name.empty()) return std::string(known->xla_name);
  std::string names;
  for (const Platform& p : kPlatforms) {
    if (p.xla_name.empty()) continue;
    names += names.empty() ? "" : ", ";
    names += '"' + std::string(p.name) + '"';
  }
  if (const size_t last = names.rfind(", "); last != std::string::npos) {
    names.replace(last, 2, " or ");
  }
  throw Error(ErrorKind::InvalidArgument, "cannot register a custom call for the platform '" +
                                              std::string(platform) + "': use " + names);
}

}  // namespace

cyxla_Status open_runtime(const cyxla_RuntimeOptions* options, cyxla_Error* error) noexcept {
  if (options != nullptr && options->struct_size < sizeof(cyxla_RuntimeOptions)) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                "open_runtime: options->struct_size is %zu, set it to "
                "sizeof(cyxla_RuntimeOptions) (at least %zu)",
                options->struct_size, sizeof(cyxla_RuntimeOptions));
  }
  try {
    std::lock_guard lock(open_mutex);
    held = open(options);
    ++opens;
    return succeed(error);
  } catch (...) {
    return fail_with_current_exception(error, "open_runtime");
  }
}

void close_runtime() noexcept {
  std::shared_ptr<Runtime> last;  // freed after the lock is dropped
  std::lock_guard lock(open_mutex);
  if (opens == 0) return;
  if (--opens == 0) last = std::move(held);
}

cyxla_Status load_program(const char* path, uint64_t* handle, cyxla_Error* error) noexcept {
  if (path == nullptr || handle == nullptr) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "load_program: path or handle is NULL");
  }
  *handle = 0;
  try {
    *handle = load(path);
    return succeed(error);
  } catch (...) {
    return fail_with_current_exception(error, "load_program");
  }
}

void release_program(uint64_t handle) noexcept { Registry::instance().release(handle); }

cyxla_Status register_ffi_handler(const char* target, void* handler, const char* platform,
                                  uint32_t traits, cyxla_Error* error) noexcept {
  if (target == nullptr || platform == nullptr) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                "register_ffi_handler: target or platform is NULL");
  }
  try {
    const std::shared_ptr<Runtime> runtime = Runtime::current();
    if (!runtime) {
      throw Error(ErrorKind::InvalidArgument,
                  std::string("no runtime is open: call cyxla_open_runtime before registering '") +
                      target + "'");
    }
    pjrt::register_ffi_handler(runtime->plugin(), target, handler, xla_platform(platform), traits);
    return succeed(error);
  } catch (...) {
    return fail_with_current_exception(error, "register_ffi_handler");
  }
}

}  // namespace cyxla::abi
