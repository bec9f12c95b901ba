// Registering XLA FFI handlers through the PJRT FFI extension.
//
// The extension's PJRT_FFI_Register_Handler_Args has had three layouts, and the
// extension's own struct_size is the same (48 bytes) for all of them:
//
//   2025-08, first release:   struct_size, name, name_size, int api_version, handler,
//                             platform, platform_size                         (40 bytes*)
//   soon after:               ... as above, then traits                       (60 bytes*)
//   later (PJRT 0.114 here):  struct_size, name, name_size, handler, platform,
//                             platform_size, traits; typed handlers only      (52 bytes*)
//
// (*: the STRUCT_SIZE that the plugin insists on.) The plugin checks struct_size before
// it reads anything else, and its error says what size it expected, so a call with
// struct_size 0 tells the layouts apart without registering anything.
#include "pjrt/ffi.hpp"

#include <charconv>
#include <exception>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "pjrt/xla_ffi.hpp"

namespace cyxla::pjrt {
namespace {

/// The args of the first two layouts; the first is a prefix of the second, and its
/// plugins read no further than `platform_name_size`.
struct RegisterArgsWithApiVersion {
  size_t struct_size;
  const char* target_name;
  size_t target_name_size;
  int api_version;  // 1: a typed FFI handler
  void* handler;
  const char* platform_name;
  size_t platform_name_size;
  PJRT_FFI_Handler_TraitsBits traits;
};

enum class Layout { WithApiVersion, Typed };

constexpr size_t kFirstLayoutSize =
    offsetof(RegisterArgsWithApiVersion, handler) + sizeof(void*);
constexpr size_t kSecondLayoutSize =
    offsetof(RegisterArgsWithApiVersion, traits) + sizeof(PJRT_FFI_Handler_TraitsBits);
constexpr size_t kTypedLayoutSize = PJRT_FFI_Register_Handler_Args_STRUCT_SIZE;

/// make_args() sets the second layout's size: its plugins expect exactly that, and the
/// first layout's plugins read a prefix of it.
constexpr size_t cyxla_pjrt_struct_size(const RegisterArgsWithApiVersion*) noexcept {
  return kSecondLayoutSize;
}

constexpr std::string_view kProbeTarget = "cyxla_ffi_version_probe";

/// What cyxla knows of one plugin's FFI: how to call it, and its XLA_FFI_Api.
struct PluginFfi {
  PJRT_FFI_Register_Handler* register_handler = nullptr;
  Layout layout = Layout::Typed;
  const xla_ffi::Api* api = nullptr;  // null when XLA never made a metadata call
};

std::mutex mutex;  // guards `known`, `registered` and the probe's report below
std::unordered_map<const PJRT_Api*, PluginFfi> known;
std::unordered_map<const PJRT_Api*, std::unordered_set<std::string>> registered;
const xla_ffi::Api* probed_api = nullptr;  // set by the probe handler, under `mutex`

bool has_version(const xla_ffi::Api* api) {
  return api != nullptr &&
         api->struct_size >= offsetof(xla_ffi::Api, api_version) + xla_ffi::kApiVersionSize;
}

/// The probe handler: XLA's metadata call at registration passes the plugin's
/// XLA_FFI_Api, whose version it reports back and claims as its own, which XLA always
/// accepts. It is never part of a program; called as one, it fails.
xla_ffi::Error* version_probe(xla_ffi::CallFrame* frame) {
  if (is_metadata_call(frame)) {
    probed_api = frame->api;
    answer_metadata_call(frame);
    return nullptr;
  }
  xla_ffi::ErrorCreateArgs args{sizeof(xla_ffi::ErrorCreateArgs), nullptr,
                                "cyxla_ffi_version_probe is not a custom call",
                                xla_ffi::kErrorInvalidArgument};
  return frame->api->error_create(&args);
}

std::string version_text(const FfiVersion& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor);
}

/// The message of a PJRT error ("" for none).
std::string message_of(const OwnedError& error) {
  return error ? error_message(error.api(), error.get()) : std::string();
}

/// The size the plugin expects of PJRT_FFI_Register_Handler_Args, from its refusal of
/// a call with struct_size 0 ("Unexpected ... size: expected N, got 0...").
Layout detect_layout(const Plugin& plugin, PJRT_FFI_Register_Handler* register_handler) {
  PJRT_FFI_Register_Handler_Args empty{};
  const std::string message = message_of(OwnedError(plugin.api(), register_handler(&empty)));
  constexpr std::string_view marker = "size: expected ";
  const size_t at = message.find(marker);
  size_t expected = 0;
  if (at != std::string::npos) {
    const char* first = message.data() + at + marker.size();
    std::from_chars(first, message.data() + message.size(), expected);
  }
  if (expected == kTypedLayoutSize) return Layout::Typed;
  if (expected == kFirstLayoutSize || expected == kSecondLayoutSize) {
    return Layout::WithApiVersion;
  }
  throw Error(ErrorKind::PluginVersion,
              "cannot tell the layout of PJRT_FFI_Register_Handler_Args that the plugin " +
                  plugin.path() + " (PJRT " + std::to_string(plugin.version().major) + "." +
                  std::to_string(plugin.version().minor) + ") expects: cyxla knows the " +
                  std::to_string(kFirstLayoutSize) + ", " + std::to_string(kSecondLayoutSize) +
                  " and " + std::to_string(kTypedLayoutSize) +
                  "-byte layouts, and the plugin answered a probe with: " +
                  (message.empty() ? "no error" : message));
}

void call_register(const Plugin& plugin, const PluginFfi& ffi, std::string_view name,
                   const void* handler, std::string_view platform, uint32_t traits) {
  const auto bits = static_cast<PJRT_FFI_Handler_TraitsBits>(traits);
  OwnedError error;
  if (ffi.layout == Layout::Typed) {
    auto args = make_args<PJRT_FFI_Register_Handler_Args>();
    args.target_name = name.data();
    args.target_name_size = name.size();
    args.handler = const_cast<void*>(handler);
    args.platform_name = platform.data();
    args.platform_name_size = platform.size();
    args.traits = bits;
    error = OwnedError(plugin.api(), ffi.register_handler(&args));
  } else {
    auto args = make_args<RegisterArgsWithApiVersion>();
    args.target_name = name.data();
    args.target_name_size = name.size();
    args.api_version = 1;
    args.handler = const_cast<void*>(handler);
    args.platform_name = platform.data();
    args.platform_name_size = platform.size();
    args.traits = bits;
    auto* as_typed = reinterpret_cast<PJRT_FFI_Register_Handler_Args*>(&args);
    error = OwnedError(plugin.api(), ffi.register_handler(as_typed));
  }
  check(std::move(error), "PJRT_FFI_Register_Handler");
}

/// The plugin's FFI, found and probed on first use. Called with `mutex` held.
const PluginFfi& plugin_ffi(const Plugin& plugin) {
  if (auto it = known.find(plugin.api()); it != known.end()) return it->second;
  const auto* extension = reinterpret_cast<const PJRT_FFI_Extension*>(
      plugin.extension(PJRT_Extension_Type_FFI));
  if (extension == nullptr) {
    throw Error(ErrorKind::PluginVersion,
                "the plugin " + plugin.path() +
                    " has no PJRT FFI extension, so it cannot run custom calls");
  }
  if (extension->base.struct_size <
          offsetof(PJRT_FFI_Extension, register_handler) + sizeof(void*) ||
      extension->register_handler == nullptr) {
    throw Error(ErrorKind::PluginVersion,
                "the PJRT FFI extension of " + plugin.path() +
                    " cannot register handlers (it predates register_handler, added to XLA "
                    "in 2025-08); install a newer plugin");
  }
  PluginFfi ffi;
  ffi.register_handler = extension->register_handler;
  ffi.layout = detect_layout(plugin, ffi.register_handler);
  probed_api = nullptr;
  call_register(plugin, ffi, kProbeTarget, reinterpret_cast<const void*>(&version_probe),
                "Host", 0);
  ffi.api = probed_api;
  registered[plugin.api()].emplace(kProbeTarget);  // a handler like any other to the plugin
  return known.emplace(plugin.api(), ffi).first->second;
}

std::optional<FfiVersion> version_of(const xla_ffi::Api* api) {
  if (!has_version(api)) return std::nullopt;
  return FfiVersion{api->api_version.major_version, api->api_version.minor_version};
}

/// Asks `handler` for its metadata the way XLA does, with the plugin's XLA_FFI_Api.
FfiVersion handler_version(const xla_ffi::Api* api, const void* handler, std::string_view name,
                           const std::optional<FfiVersion>& plugin_version) {
  xla_ffi::Metadata metadata{};
  metadata.struct_size = xla_ffi::kMetadataSize;
  metadata.api_version.struct_size = xla_ffi::kApiVersionSize;
  xla_ffi::MetadataExtension extension{
      {xla_ffi::kMetadataExtensionSize, xla_ffi::kExtensionMetadata, nullptr}, &metadata};
  xla_ffi::CallFrame frame{};
  frame.struct_size = xla_ffi::kCallFrameSize;
  frame.extension_start = &extension.extension_base;
  frame.api = api;
  frame.stage = xla_ffi::kStageExecute;
  frame.args.struct_size = xla_ffi::kValuesSize;
  frame.rets.struct_size = xla_ffi::kValuesSize;
  frame.attrs.struct_size = xla_ffi::kAttrsSize;

  auto* function = reinterpret_cast<xla_ffi::Handler*>(const_cast<void*>(handler));
  std::string refusal;
  try {
    if (xla_ffi::Error* error = function(&frame)) {
      xla_ffi::ErrorGetMessageArgs get{sizeof(xla_ffi::ErrorGetMessageArgs), nullptr, error,
                                       nullptr, 0};
      api->error_get_message(&get);
      refusal = get.message != nullptr ? get.message : "an error without a message";
      xla_ffi::ErrorDestroyArgs destroy{sizeof(xla_ffi::ErrorDestroyArgs), nullptr, error};
      api->error_destroy(&destroy);
    }
  } catch (const std::exception& e) {
    refusal = std::string("an exception: ") + e.what();
  }
  if (!refusal.empty()) {
    throw Error(ErrorKind::InvalidArgument,
                "the XLA FFI handler of '" + std::string(name) +
                    "' refused XLA's metadata call (" + refusal +
                    "), so the plugin would reject it; the plugin's XLA FFI API is " +
                    (plugin_version ? version_text(*plugin_version) : "of unknown version") +
                    ": build the handler against FFI headers of that version or older");
  }
  return FfiVersion{metadata.api_version.major_version, metadata.api_version.minor_version};
}

}  // namespace

bool is_metadata_call(const xla_ffi::CallFrame* frame) {
  return frame->extension_start != nullptr &&
         frame->extension_start->type == xla_ffi::kExtensionMetadata;
}

void answer_metadata_call(xla_ffi::CallFrame* frame) {
  auto* extension = reinterpret_cast<xla_ffi::MetadataExtension*>(frame->extension_start);
  if (has_version(frame->api)) {
    xla_ffi::ApiVersion& version = extension->metadata->api_version;
    version.struct_size = xla_ffi::kApiVersionSize;
    version.extension_start = nullptr;
    version.major_version = frame->api->api_version.major_version;
    version.minor_version = frame->api->api_version.minor_version;
  }
  extension->metadata->traits = 0;
}

std::optional<FfiVersion> ffi_version(const Plugin& plugin) {
  std::lock_guard lock(mutex);
  return version_of(plugin_ffi(plugin).api);
}

FfiRegistration register_ffi_handler(const Plugin& plugin, std::string_view name,
                                     const void* handler, std::string_view platform,
                                     uint32_t traits) {
  if (handler == nullptr) {
    throw Error(ErrorKind::InvalidArgument,
                "the XLA FFI handler of '" + std::string(name) + "' is a null pointer");
  }
  if (name.empty()) throw Error(ErrorKind::InvalidArgument, "a custom-call target needs a name");
  std::lock_guard lock(mutex);
  const PluginFfi& ffi = plugin_ffi(plugin);
  FfiRegistration registration;
  registration.plugin = version_of(ffi.api);
  if (ffi.api != nullptr) {
    registration.handler = handler_version(ffi.api, handler, name, registration.plugin);
  }
  call_register(plugin, ffi, name, handler, platform, traits);
  registered[plugin.api()].emplace(name);
  return registration;
}

bool has_ffi_handler(const Plugin& plugin, std::string_view name) {
  std::lock_guard lock(mutex);
  const auto it = registered.find(plugin.api());
  return it != registered.end() && it->second.contains(std::string(name));
}

}  // namespace cyxla::pjrt
