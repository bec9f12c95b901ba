// Creating the client and turning programs into executables.
#include "runtime/runtime.hpp"

#include <exception>
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

std::pair<std::unique_ptr<Runtime::Opened>, PluginFacts> Runtime::open_client(
    std::shared_ptr<const pjrt::Plugin> plugin, const std::vector<pjrt::NamedValue>& options) {
  auto open = std::make_unique<Opened>();
  open->plugin = std::move(plugin);
  const pjrt::Plugin& p = *open->plugin;
  PluginFacts facts;
  facts.version = p.version();
  for (const pjrt::NamedValue& attribute : p.attributes()) {
    if (attribute.name == "xla_version") facts.xla_version = attribute.value;
  }

  std::vector<PJRT_NamedValue> pjrt_options = pjrt::to_pjrt(options);
  auto create = pjrt::make_args<PJRT_Client_Create_Args>();
  create.create_options = pjrt_options.data();
  create.num_options = pjrt_options.size();
  CYXLA_PJRT_CALL(p, PJRT_Client_Create, create);
  open->client = pjrt::Client(p.api(), create.client);

  auto name = pjrt::make_args<PJRT_Client_PlatformName_Args>();
  name.client = create.client;
  CYXLA_PJRT_CALL(p, PJRT_Client_PlatformName, name);
  facts.platform =
      normalize_platform(std::string_view(name.platform_name, name.platform_name_size));

  auto version = pjrt::make_args<PJRT_Client_PlatformVersion_Args>();
  version.client = create.client;
  CYXLA_PJRT_CALL(p, PJRT_Client_PlatformVersion, version);
  facts.platform_version.assign(version.platform_version, version.platform_version_size);

  auto devices = pjrt::make_args<PJRT_Client_AddressableDevices_Args>();
  devices.client = create.client;
  CYXLA_PJRT_CALL(p, PJRT_Client_AddressableDevices, devices);
  if (devices.num_addressable_devices == 0) {
    throw Error(ErrorKind::Pjrt, "the " + facts.platform + " client of " + p.path() +
                                     " has no addressable device");
  }
  open->device = devices.addressable_devices[0];
  open->device_count = devices.num_addressable_devices;
  // jnp.linalg's custom calls, in every process that runs the CPU plugin.
  if (facts.platform == "cpu") lapack::register_handlers(p);
  return {std::move(open), std::move(facts)};
}

std::shared_ptr<Runtime> Runtime::create(std::shared_ptr<const pjrt::Plugin> plugin,
                                         const std::vector<pjrt::NamedValue>& options) {
  std::string path = plugin->path();
  auto [open, facts] = open_client(std::move(plugin), options);
  auto runtime = std::make_shared<Runtime>(Key{}, std::move(path), options, std::move(facts));
  runtime->open_ = std::move(open);
  runtime->opened_.store(runtime->open_.get(), std::memory_order_release);
  return runtime;
}

std::shared_ptr<Runtime> Runtime::create_deferred(std::string path, PluginFacts facts,
                                                  std::vector<pjrt::NamedValue> options,
                                                  OnOpen on_open) {
  auto runtime = std::make_shared<Runtime>(Key{}, std::move(path), std::move(options),
                                           std::move(facts));
  runtime->on_open_ = std::move(on_open);
  return runtime;
}

const Runtime::Opened& Runtime::open_deferred() const {
  std::lock_guard lock(open_mutex_);
  if (open_) return *open_;  // another thread opened it meanwhile
  // One try: a failure is every later caller's too, rather than a client made per call.
  if (open_failure_) std::rethrow_exception(open_failure_);
  try {
    return open_now();
  } catch (...) {
    open_failure_ = std::current_exception();
    throw;
  }
}

const Runtime::Opened& Runtime::open_now() const {
  auto [open, told] = open_client(pjrt::Plugin::load(path_), options_);
  if (on_open_) {
    try {
      on_open_(told);
    } catch (...) {  // a record not refreshed costs the next process a dlopen, no more
    }
  }
  // The programs loaded so far were keyed and checked with the recorded facts: a plugin
  // that tells others (a record rewritten by hand) cannot serve them.
  told.library = facts_.library;  // the record's, which the caller matched
  if (told != facts_) {
    throw Error(ErrorKind::PluginLoad,
                "the plugin " + path_ + " is not what its record in the disk cache says (" +
                    "platform '" + facts_.platform + "', PJRT " +
                    std::to_string(facts_.version.major) + "." +
                    std::to_string(facts_.version.minor) + "): it tells platform '" +
                    told.platform + "', PJRT " + std::to_string(told.version.major) + "." +
                    std::to_string(told.version.minor) +
                    "; the record is replaced, open the runtime again");
  }
  open_ = std::move(open);
  opened_.store(open_.get(), std::memory_order_release);
  return *open_;
}

std::string Runtime::effective_compile_options(std::string_view code,
                                               std::string_view compile_options) const {
  return with_default_compile_options(platform(), code, compile_options);
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
  const pjrt::Plugin& plugin = this->plugin();
  auto args = pjrt::make_args<PJRT_Client_Compile_Args>();
  args.client = client();
  args.program = &program;
  args.compile_options = options.data();
  args.compile_options_size = options.size();
  CYXLA_PJRT_CALL(plugin, PJRT_Client_Compile, args, ErrorKind::Compile);
  return pjrt::LoadedExecutable(plugin.api(), args.executable);
}

pjrt::LoadedExecutable Runtime::deserialize_loaded(std::string_view serialized) const {
  const pjrt::Plugin& plugin = this->plugin();
  auto args = pjrt::make_args<PJRT_Executable_DeserializeAndLoad_Args>();
  args.client = client();
  args.serialized_executable = serialized.data();
  args.serialized_executable_size = serialized.size();
  CYXLA_PJRT_CALL(plugin, PJRT_Executable_DeserializeAndLoad, args);
  return pjrt::LoadedExecutable(plugin.api(), args.loaded_executable);
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
