// Creating the client and turning programs into executables.
#include "runtime/runtime.hpp"

#include <mutex>

#include "lapack/registration.hpp"
#include "runtime/compile_options.hpp"
#include "runtime/element_type.hpp"
#include "runtime/executable.hpp"
#include "runtime/platforms.hpp"

namespace cyxla {
namespace {

std::mutex current_mutex;
std::weak_ptr<Runtime> current_runtime;  // guarded by current_mutex

}  // namespace

std::shared_ptr<Runtime> Runtime::current() {
  std::lock_guard lock(current_mutex);
  return current_runtime.lock();
}

void Runtime::make_current(const std::shared_ptr<Runtime>& runtime) {
  std::lock_guard lock(current_mutex);
  current_runtime = runtime;
}

std::shared_ptr<Runtime> Runtime::create(std::shared_ptr<const pjrt::Plugin> plugin,
                                         const std::vector<pjrt::NamedValue>& options) {
  auto runtime = std::make_shared<Runtime>(Key{}, std::move(plugin));
  const pjrt::Plugin& p = *runtime->plugin_;

  std::vector<PJRT_NamedValue> pjrt_options = pjrt::to_pjrt(options);
  auto create = pjrt::make_args<PJRT_Client_Create_Args>();
  create.create_options = pjrt_options.data();
  create.num_options = pjrt_options.size();
  CYXLA_PJRT_CALL(p, PJRT_Client_Create, create);
  runtime->client_ = pjrt::Client(p.api(), create.client);
  runtime->options_ = options;

  auto name = pjrt::make_args<PJRT_Client_PlatformName_Args>();
  name.client = create.client;
  CYXLA_PJRT_CALL(p, PJRT_Client_PlatformName, name);
  runtime->platform_ =
      normalize_platform(std::string_view(name.platform_name, name.platform_name_size));
  runtime->host_is_device_ = runtime->platform_ == "cpu";

  auto version = pjrt::make_args<PJRT_Client_PlatformVersion_Args>();
  version.client = create.client;
  CYXLA_PJRT_CALL(p, PJRT_Client_PlatformVersion, version);
  runtime->platform_version_.assign(version.platform_version, version.platform_version_size);

  auto devices = pjrt::make_args<PJRT_Client_AddressableDevices_Args>();
  devices.client = create.client;
  CYXLA_PJRT_CALL(p, PJRT_Client_AddressableDevices, devices);
  if (devices.num_addressable_devices == 0) {
    throw Error(ErrorKind::Pjrt, "the " + runtime->platform_ + " client of " + p.path() +
                                     " has no addressable device");
  }
  runtime->device_ = devices.addressable_devices[0];
  runtime->device_count_ = devices.num_addressable_devices;
  // jnp.linalg's custom calls, in every process that runs the CPU plugin.
  if (runtime->platform_ == "cpu") lapack::register_handlers(p);
  return runtime;
}

std::string Runtime::effective_compile_options(std::string_view code,
                                               std::string_view compile_options) const {
  return with_default_compile_options(platform_, code, compile_options);
}

pjrt::LoadedExecutable Runtime::compile_loaded(std::string_view code,
                                              std::string_view compile_options) const {
  const std::string options = effective_compile_options(code, compile_options);
  auto program = pjrt::make_args<PJRT_Program>();
  std::string code_copy(code);  // PJRT_Program.code is not const
  program.code = code_copy.data();
  program.code_size = code_copy.size();
  program.format = "mlir";
  program.format_size = 4;
  auto args = pjrt::make_args<PJRT_Client_Compile_Args>();
  args.client = client_.get();
  args.program = &program;
  args.compile_options = options.data();
  args.compile_options_size = options.size();
  CYXLA_PJRT_CALL(*plugin_, PJRT_Client_Compile, args, ErrorKind::Compile);
  return pjrt::LoadedExecutable(plugin_->api(), args.executable);
}

pjrt::LoadedExecutable Runtime::deserialize_loaded(std::string_view serialized) const {
  auto args = pjrt::make_args<PJRT_Executable_DeserializeAndLoad_Args>();
  args.client = client_.get();
  args.serialized_executable = serialized.data();
  args.serialized_executable_size = serialized.size();
  CYXLA_PJRT_CALL(*plugin_, PJRT_Executable_DeserializeAndLoad, args);
  return pjrt::LoadedExecutable(plugin_->api(), args.loaded_executable);
}

std::shared_ptr<Executable> Runtime::compile(std::string_view code,
                                             std::string_view compile_options,
                                             std::vector<TensorSpec> inputs,
                                             std::vector<size_t> donated_outputs) const {
  return std::make_shared<Executable>(shared_from_this(), compile_loaded(code, compile_options),
                                      std::move(inputs), std::move(donated_outputs));
}

std::shared_ptr<Executable> Runtime::deserialize(std::string_view serialized,
                                                 std::vector<TensorSpec> inputs,
                                                 std::vector<size_t> donated_outputs) const {
  return std::make_shared<Executable>(shared_from_this(), deserialize_loaded(serialized),
                                      std::move(inputs), std::move(donated_outputs));
}

}  // namespace cyxla
