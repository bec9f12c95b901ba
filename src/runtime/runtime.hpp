// The runtime of a process: one plugin, its client and the device programs run on.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pjrt/handles.hpp"
#include "pjrt/plugin.hpp"
#include "runtime/tensor_spec.hpp"

namespace cyxla {

class Executable;

class Runtime : public std::enable_shared_from_this<Runtime> {
 public:
  /// Creates a client of `plugin` with `options` and picks its first addressable device.
  static std::shared_ptr<Runtime> create(std::shared_ptr<const pjrt::Plugin> plugin,
                                         const std::vector<pjrt::NamedValue>& options);
  /// The process's runtime while it lives, or null: the one that Python's
  /// cyxla.initialize or C's cyxla_open_runtime made current. Other runtimes (a test's
  /// second client) never are.
  static std::shared_ptr<Runtime> current();
  /// Makes `runtime` the process's runtime (not owned: it stays current while it lives).
  static void make_current(const std::shared_ptr<Runtime>& runtime);

  const pjrt::Plugin& plugin() const noexcept { return *plugin_; }
  PJRT_Client* client() const noexcept { return client_.get(); }
  PJRT_Device* device() const noexcept { return device_; }
  /// cyxla's name of the client's platform ("cpu", "cuda", ...; a plugin that reports an
  /// older name, "host" or "gpu", gets cyxla's: runtime/platforms.hpp).
  const std::string& platform() const noexcept { return platform_; }
  const std::string& platform_version() const noexcept { return platform_version_; }
  /// The options the client was created with, as given (the disk cache's key holds them).
  const std::vector<pjrt::NamedValue>& options() const noexcept { return options_; }
  size_t device_count() const noexcept { return device_count_; }
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
  Runtime(Key, std::shared_ptr<const pjrt::Plugin> plugin) : plugin_(std::move(plugin)) {}
  // Shared through shared_ptr only (and so never moved by the bindings).
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

 private:
  std::shared_ptr<const pjrt::Plugin> plugin_;
  pjrt::Client client_;
  PJRT_Device* device_ = nullptr;
  size_t device_count_ = 0;
  std::string platform_;
  std::string platform_version_;
  std::vector<pjrt::NamedValue> options_;
  bool host_is_device_ = false;
};

}  // namespace cyxla
