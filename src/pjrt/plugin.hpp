// A loaded PJRT plugin: the library, its function table, its version and attributes,
// and the one helper through which every PJRT call is made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/error.hpp"
#include "pjrt/handles.hpp"
#include "pjrt/pjrt_c_api.h"

namespace cyxla::pjrt {

/// The oldest PJRT minor version cyxla accepts: the oldest plugin it has been run against
/// (fastatomstruct-xla-cpu 2026.6.23, PJRT 0.106). Newer minors read our structs as a
/// prefix of theirs; slots an older table lacks are checked before each call.
inline constexpr int kOldestMinor = 106;

struct Version {
  int major = 0;
  int minor = 0;
  bool operator==(const Version&) const = default;
};

/// A named value as PJRT uses it for client options and plugin attributes. A float is
/// kept as the caller gave it (PJRT takes a float): the disk cache's key records it.
struct NamedValue {
  using Value = std::variant<std::string, int64_t, std::vector<int64_t>, double, bool>;
  std::string name;
  Value value;
};

/// Builds the PJRT view of `values`; it points into `values`, which must outlive it.
std::vector<PJRT_NamedValue> to_pjrt(const std::vector<NamedValue>& values);

/// Throws cyxla::Error for a non-null `error`, naming `function`; `error` is destroyed
/// either way.
void check(OwnedError error, std::string_view function, ErrorKind kind = ErrorKind::Pjrt);

/// The message of `error`, which stays owned by the caller.
std::string error_message(const PJRT_Api* api, const PJRT_Error* error);

class Plugin {
 public:
  /// Loads the library at `path`, checks its PJRT version and its error functions
  /// (PJRT_Error_Message and PJRT_Error_Destroy; PluginLoad error without them) and
  /// initializes it. The library is never unloaded: handlers registered with it must
  /// stay valid.
  static std::shared_ptr<const Plugin> load(const std::string& path);

  const PJRT_Api* api() const noexcept { return api_; }
  const std::string& path() const noexcept { return path_; }
  Version version() const noexcept { return version_; }
  const std::vector<NamedValue>& attributes() const noexcept { return attributes_; }

  /// Whether the plugin's table is long enough to hold `slot`.
  template <auto Slot>
  bool has() const noexcept {
    const auto* base = reinterpret_cast<const char*>(api_);
    const auto* field = reinterpret_cast<const char*>(&(api_->*Slot));
    return static_cast<size_t>(field - base) + sizeof(api_->*Slot) <= api_->struct_size &&
           (api_->*Slot) != nullptr;
  }

  /// The first extension of `type` in the plugin's chain, or null when it has none.
  const PJRT_Extension_Base* extension(PJRT_Extension_Type type) const noexcept;

 private:
  struct Key {};  // only load() constructs a Plugin

 public:
  Plugin(Key, std::string path, const PJRT_Api* api);

 private:
  std::string path_;
  const PJRT_Api* api_;
  Version version_;
  std::vector<NamedValue> attributes_;
};

/// Throws the PluginVersion error for a `function` missing from the plugin's table.
[[noreturn, gnu::cold]] void missing_function(const Plugin& plugin, std::string_view function);

/// Calls `thunk(api, args)` and returns its error, owned; a C++ exception that escapes the
/// plugin becomes cyxla::Error of `kind` naming `function`.
OwnedError invoke(const PJRT_Api* api, PJRT_Error* (*thunk)(const PJRT_Api*, void*),
                  void* args, std::string_view function, ErrorKind kind);

/// Calls `slot` of the plugin's table with `args`, after checking that the slot exists;
/// a PJRT error becomes cyxla::Error of `kind` naming the function.
template <auto Slot, class Args>
void call(const Plugin& plugin, Args& args, std::string_view function,
          ErrorKind kind = ErrorKind::Pjrt) {
  if (!plugin.has<Slot>()) missing_function(plugin, function);
  constexpr auto thunk = [](const PJRT_Api* api, void* a) {
    return (api->*Slot)(static_cast<Args*>(a));
  };
  check(invoke(plugin.api(), thunk, &args, function, kind), function, kind);
}

/// Zero-initialized PJRT argument struct with its struct_size set (the header's
/// Args_STRUCT_SIZE, found through cyxla_pjrt_struct_size).
template <class Args>
Args make_args() noexcept {
  Args args{};
  args.struct_size = cyxla_pjrt_struct_size(&args);
  return args;
}

/// The PJRT_Executable behind `loaded`, owned by the caller.
Executable executable_of(const Plugin& plugin, PJRT_LoadedExecutable* loaded);

}  // namespace cyxla::pjrt

#define CYXLA_PJRT_CALL(plugin, function, args, ...) \
  ::cyxla::pjrt::call<&PJRT_Api::function>((plugin), (args), #function __VA_OPT__(, ) __VA_ARGS__)
