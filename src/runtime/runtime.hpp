// The runtime of a process: one plugin, its client and the device programs run on. A
// runtime made from a plugin's recorded facts opens the plugin only when something first
// needs PJRT (Runtime::create_deferred).
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt/handles.hpp"
#include "pjrt/plugin.hpp"
#include "runtime/plugin_facts.hpp"
#include "runtime/tensor_spec.hpp"

namespace cyxla {

class Executable;

class Runtime : public std::enable_shared_from_this<Runtime> {
 public:
  /// Creates a client of `plugin` with `options` and picks its first addressable device.
  static std::shared_ptr<Runtime> create(std::shared_ptr<const pjrt::Plugin> plugin,
                                         const std::vector<pjrt::NamedValue>& options);
  /// Called once a deferred runtime has opened its plugin, with the facts it told: the
  /// owner of the record the runtime was made from refreshes it. What it throws is ignored.
  using OnOpen = std::function<void(const PluginFacts&)>;
  /// A runtime of the plugin at `path`, whose `facts` were recorded earlier, with client
  /// `options`: the plugin is opened (once, by whichever thread first needs it) when
  /// something first needs PJRT: plugin(), client(), device() and what uses them. Until
  /// then a program whose cache entry qualifies for the kernel runner runs without it.
  /// Throws nothing of the plugin's; its errors come where it is first needed.
  static std::shared_ptr<Runtime> create_deferred(std::string path, PluginFacts facts,
                                                  std::vector<pjrt::NamedValue> options,
                                                  OnOpen on_open = {});
  /// The process's runtime while it lives, or null: the one that Python's
  /// cyxla.initialize or C's cyxla_open_runtime made current. Other runtimes (a test's
  /// second client) never are.
  static std::shared_ptr<Runtime> current();
  /// Makes `runtime` the process's runtime (not owned: it stays current while it lives).
  static void make_current(const std::shared_ptr<Runtime>& runtime);

  /// The plugin, opened now if it was deferred. Throws cyxla::Error when opening it fails
  /// (the first try's error, at that call and every later one).
  const pjrt::Plugin& plugin() const { return *opened().plugin; }
  PJRT_Client* client() const { return opened().client.get(); }
  PJRT_Device* device() const { return opened().device; }
  /// Whether the plugin is open (a deferred runtime's may not be yet).
  bool is_open() const noexcept { return opened_.load(std::memory_order_acquire) != nullptr; }
  /// The path the plugin is (or will be) loaded from, as given.
  const std::string& plugin_path() const noexcept { return path_; }
  /// The plugin's facts (recorded, or told by the opened plugin): the cache key's.
  const PluginFacts& facts() const noexcept { return facts_; }
  /// cyxla's name of the client's platform ("cpu", "cuda", ...; a plugin that reports an
  /// older name, "host" or "gpu", gets cyxla's: runtime/platforms.hpp).
  const std::string& platform() const noexcept { return facts_.platform; }
  const std::string& platform_version() const noexcept { return facts_.platform_version; }
  /// The options the client was created with, as given (the disk cache's key holds them).
  const std::vector<pjrt::NamedValue>& options() const noexcept { return options_; }
  /// How many devices the client addresses (opens the plugin if deferred).
  size_t device_count() const { return opened().device_count; }
  /// Whether device buffers live in host memory, so inputs can alias it (the CPU).
  bool host_is_device() const noexcept { return host_is_device_; }

  /// `compile_options` (a serialized CompileOptionsProto) as this runtime compiles the
  /// StableHLO `code` with them: after the compile defaults of its platform that apply to
  /// the program, which they may override.
  std::string effective_compile_options(std::string_view code,
                                        std::string_view compile_options) const;
  /// Compiles StableHLO bytecode (`format` "mlir") with serialized CompileOptionsProto, and
  /// the platform's compile defaults (effective_compile_options).
  pjrt::LoadedExecutable compile_loaded(std::string_view code,
                                        std::string_view compile_options) const;
  /// Loads an executable that Executable::serialize produced with the same plugin.
  pjrt::LoadedExecutable deserialize_loaded(std::string_view serialized) const;

  /// compile_loaded, as an Executable taking `inputs`; `donated_outputs` as Executable's.
  std::shared_ptr<Executable> compile(std::string_view code, std::string_view compile_options,
                                      std::vector<TensorSpec> inputs,
                                      std::vector<size_t> donated_outputs = {}) const;
  /// deserialize_loaded, as an Executable taking `inputs`.
  std::shared_ptr<Executable> deserialize(std::string_view serialized,
                                          std::vector<TensorSpec> inputs,
                                          std::vector<size_t> donated_outputs = {}) const;

 private:
  struct Key {};

 public:
  Runtime(Key, std::string path, std::vector<pjrt::NamedValue> options, PluginFacts facts)
      : path_(std::move(path)),
        options_(std::move(options)),
        facts_(std::move(facts)),
        host_is_device_(facts_.platform == "cpu") {}
  // Shared through shared_ptr only (and so never moved by the bindings).
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

 private:
  /// What an open plugin gives: the plugin, its client and the device.
  struct Opened {
    std::shared_ptr<const pjrt::Plugin> plugin;
    pjrt::Client client;
    PJRT_Device* device = nullptr;
    size_t device_count = 0;
  };
  /// The plugin's client and the facts it tells, made from `plugin` with `options`.
  static std::pair<std::unique_ptr<Opened>, PluginFacts> open_client(
      std::shared_ptr<const pjrt::Plugin> plugin, const std::vector<pjrt::NamedValue>& options);
  const Opened& opened() const {
    // Acquire: pairs with open_deferred's release, so the fields it wrote are seen.
    const Opened* open = opened_.load(std::memory_order_acquire);
    return open != nullptr ? *open : open_deferred();
  }
  /// Opens a deferred runtime's plugin, once; called without the lock held.
  const Opened& open_deferred() const;
  /// open_deferred's work, with open_mutex_ held.
  const Opened& open_now() const;

  std::string path_;
  std::vector<pjrt::NamedValue> options_;
  const PluginFacts facts_;
  const bool host_is_device_;  // asked on every call: kept, not compared each time
  OnOpen on_open_;
  // Written once, under open_mutex_, before opened_ is published; then only read.
  mutable std::mutex open_mutex_;
  mutable std::unique_ptr<const Opened> open_;
  mutable std::exception_ptr open_failure_;  // guarded by open_mutex_
  mutable std::atomic<const Opened*> opened_{nullptr};
};

}  // namespace cyxla
