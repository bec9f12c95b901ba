// load_or_compile, step by step; the checks that make an executable trustworthy are the
// same for an entry of the disk cache and for a fresh compile.
#include "loading/load_or_compile.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>

#include "cache/executable_key.hpp"
#include "cache/settings.hpp"
#include "cache/store.hpp"
#include "common/sha256.hpp"
#include "common/utf8.hpp"
#include "compiled/runner_verdict.hpp"
#include "lapack/handlers.hpp"
#include "lapack/library.hpp"
#include "pjrt/ffi.hpp"
#include "runtime/executable.hpp"
#include "runtime/hlo_signature.hpp"
#include "runtime/platforms.hpp"
#include "runtime/runtime.hpp"

namespace cyxla::loading {
namespace {

using cache::ExecutableKey;
using program::ProgramFile;

constexpr std::string_view kKind = "executables";

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string text(const std::vector<TensorSpec>& specs) {
  std::string out;
  for (const TensorSpec& s : specs) out += (out.empty() ? "" : ", ") + s.to_string();
  return "(" + out + ")";
}

std::string text(const std::vector<size_t>& indices) {
  std::string out;
  for (const size_t i : indices) out += (out.empty() ? "" : ", ") + std::to_string(i);
  return "(" + out + ")";
}

[[noreturn]] void refuse(const Origin& origin, const std::string& why) {
  throw Error(origin.refusal, origin.source + ": " + why);
}

void check_platform(const Runtime& runtime, const ProgramFile& program, const Origin& origin) {
  const std::string& platform = runtime.platform();  // cyxla's name of it
  if (normalize_platform(program.platform) == platform) return;
  throw Error(ErrorKind::InvalidArgument,
              origin.source + " holds a program for '" + program.platform +
                  "', but this process runs the '" + platform + "' plugin " +
                  runtime.plugin_path() + "; export it for '" + platform + "'");
}

/// Every custom-call target of `program` is XLA's own or has a handler in the plugin: the
/// one answer for every door (a program file's claims were held against its program by
/// the reader). A program that calls back into Python has its handler only in the Python
/// process that lowered it; one that calls cyxla's LAPACK handlers needs a LAPACK
/// library, looked for now so that its absence is said before the compile.
void check_custom_calls(const Runtime& runtime, const ProgramFile& program, const Origin& origin) {
  for (const std::string& target : program.custom_calls) {
    if (std::ranges::find(pjrt::kXlaBuiltinTargets, target) != pjrt::kXlaBuiltinTargets.end()) {
      continue;
    }
    const bool ours = lapack::handler_of(target) != nullptr;
    if (pjrt::has_ffi_handler(runtime.plugin(), target)) {
      std::string why;
      if (ours && lapack::library(&why) == nullptr) {
        throw Error(ErrorKind::UnsupportedProgram,
                    origin.source + " calls the LAPACK target '" + target +
                        "', whose handler (cyxla's) needs a LAPACK library: " + why);
      }
      continue;
    }
    if (target == pjrt::kPythonCallbackTarget) {
      throw Error(ErrorKind::UnsupportedProgram,
                  origin.source + " calls back into Python (the custom-call target '" + target +
                      "'), which only the Python process that lowered it can run");
    }
    const bool lapack = target.starts_with("lapack_");
    throw Error(ErrorKind::UnsupportedProgram,
                origin.source + " calls the custom-call target '" + target +
                    "', which no handler in this process provides: register an XLA FFI "
                    "handler for it before loading (cyxla.register_ffi_target from Python, "
                    "cyxla_register_ffi_handler from C)" +
                    (ours ? "; cyxla's own LAPACK handler of it is registered with CPU "
                            "plugins only, and this one did not take it"
                     : lapack ? "; this is one of jaxlib's LAPACK targets that cyxla's own "
                                "handlers do not cover yet, registered only in a Python "
                                "process that imported cyxla: without Python, register a "
                                "handler of your own, or avoid the linear-algebra call"
                              : ""));
  }
}

/// Per parameter after the inputs, the output it aliases (the outputs written in place),
/// once every parameter is checked against the specs `program` claims.
std::vector<size_t> checked_donations(const HloSignature& signature, const ProgramFile& program,
                                      const Origin& origin) {
  const std::vector<TensorSpec>& parameters = signature.parameters;
  const size_t inputs = program.inputs.size();
  const std::string mismatch = "the input specs are not those of the compiled program: ";
  if (parameters.size() < inputs) {
    refuse(origin, mismatch + "it takes " + std::to_string(parameters.size()) + " parameters " +
                       text(parameters) + ", the specs name " + std::to_string(inputs) +
                       " inputs " + text(program.inputs));
  }
  for (size_t i = 0; i < inputs; ++i) {
    if (parameters[i] != program.inputs[i]) {
      refuse(origin, mismatch + "input " + std::to_string(i) + " is " +
                         program.inputs[i].to_string() + ", but the program takes " +
                         parameters[i].to_string());
    }
  }
  std::vector<size_t> donated;
  for (size_t p = inputs; p < parameters.size(); ++p) {
    const auto alias = std::ranges::find(signature.aliases, p, &std::pair<size_t, size_t>::second);
    if (alias == signature.aliases.end() || alias->first >= program.outputs.size() ||
        program.outputs[alias->first] != parameters[p]) {
      refuse(origin, mismatch + "it takes " + std::to_string(parameters.size()) +
                         " parameters " + text(parameters) + ", the specs name " +
                         std::to_string(inputs) + " inputs " + text(program.inputs) +
                         ", and parameter " + std::to_string(p) +
                         " is no output written in place");
    }
    donated.push_back(alias->first);
  }
  if (donated != program.donated_outputs) {
    refuse(origin, "the outputs written in place are listed as " +
                       text(program.donated_outputs) +
                       " (a program file's donated_output lines, Program.donated_outputs), "
                       "but the compiled program writes " + text(donated) + " in place");
  }
  return donated;
}

/// `loaded` as the executable of `program`, once `signature` (what the plugin compiled:
/// read from it after a compile, recorded in the entry on a hit) is checked against every
/// spec the program claims: anything else would read or write the caller's memory as
/// another type or size. Without a signature (a plugin that cannot tell), the claims stand.
std::shared_ptr<Executable> checked(const Runtime& runtime, pjrt::LoadedExecutable loaded,
                                    const std::optional<HloSignature>& signature,
                                    const ProgramFile& program, const Origin& origin) {
  std::vector<size_t> donated =
      signature ? checked_donations(*signature, program, origin) : program.donated_outputs;
  auto executable = std::make_shared<Executable>(runtime.shared_from_this(), std::move(loaded),
                                                 program.inputs, std::move(donated));
  if (executable->outputs() != program.outputs) {
    refuse(origin, "the output specs are " + text(program.outputs) +
                       ", but the compiled program returns " + text(executable->outputs()));
  }
  return executable;
}

/// Which runner an executable of `runtime` would take, and its compiled form, read from
/// `serialized`: the plugin's serialized form of it as it came from the compiler (one the
/// plugin deserialized may serialize without its objects). Read only on the CPU.
compiled::Judged judged(const Runtime& runtime, std::string_view serialized) {
  if (runtime.platform() != "cpu") {
    return {{compiled::Runner::Pjrt, "it runs on the " + runtime.platform() +
                                         " platform; cyxla runs the CPU plugin's kernels only"},
            nullptr};
  }
  return compiled::judge(serialized);
}

/// Why PJRT is asked for in place of the kernel runner: `asked` when the caller chose
/// ("pjrt"), else the environment variable CYXLA_RUNNER set to "pjrt"; "" when the choice
/// is "auto" or none was made. The variable is read at each load, so that a process may
/// change it between loads.
std::string forced_pjrt(std::string_view asked) {
  std::string_view runner = asked;
  std::string_view named = "runner";
  if (runner.empty()) {
    const char* value = std::getenv("CYXLA_RUNNER");
    runner = value != nullptr ? value : "";
    named = "CYXLA_RUNNER";
  }
  if (runner.empty() || runner == "auto") return "";
  if (runner == "pjrt") {
    return asked.empty() ? "CYXLA_RUNNER=pjrt asks for PJRT" : "runner='pjrt' asks for PJRT";
  }
  throw Error(ErrorKind::InvalidArgument,
              std::string(named) + " is '" + with_bytes_escaped(runner) +
                  "'; it takes 'auto' (the kernel runner where a program qualifies, the "
                  "default) or 'pjrt'");
}

/// `specs` as an entry records them: [[element type, [dims]], ...].
json::Array record_specs(const std::vector<TensorSpec>& specs) {
  json::Array out;
  for (const TensorSpec& spec : specs) {
    json::Array dims(spec.dims.begin(), spec.dims.end());
    out.emplace_back(json::Array{static_cast<int64_t>(spec.type), std::move(dims)});
  }
  return out;
}

/// `signature` as its entry records it: [[element type, [dims]], ...] and [[output,
/// parameter], ...], or null.
json::Value record(const std::optional<HloSignature>& signature) {
  if (!signature) return nullptr;
  json::Array parameters = record_specs(signature->parameters), aliases;
  for (const auto& [output, parameter] : signature->aliases) {
    aliases.emplace_back(
        json::Array{static_cast<int64_t>(output), static_cast<int64_t>(parameter)});
  }
  return json::Object{{"parameters", std::move(parameters)}, {"aliases", std::move(aliases)}};
}

/// The items of a recorded list; throws std::runtime_error for anything else.
const json::Array& items(const json::Value* value) {
  const json::Array* array = value != nullptr ? value->as<json::Array>() : nullptr;
  if (array == nullptr) throw std::runtime_error("not a list");
  return *array;
}

/// A recorded count; throws std::runtime_error for anything else.
int64_t count(const json::Value& value) {
  const int64_t* number = value.as<int64_t>();
  if (number == nullptr || *number < 0) throw std::runtime_error("not a count");
  return *number;
}

/// The specs record_specs wrote; throws std::runtime_error for anything else.
std::vector<TensorSpec> recorded_specs(const json::Value* recorded) {
  std::vector<TensorSpec> specs;
  for (const json::Value& item : items(recorded)) {
    const json::Array& pair = items(&item);
    if (pair.size() != 2) throw std::runtime_error("not a spec");
    TensorSpec spec{static_cast<PJRT_Buffer_Type>(count(pair[0])), {}};
    for (const json::Value& d : items(&pair[1])) spec.dims.push_back(count(d));
    specs.push_back(std::move(spec));
  }
  return specs;
}

/// The signature an entry records, or nothing for null; throws std::runtime_error for
/// anything record() does not write.
std::optional<HloSignature> recorded_signature(const json::Value* recorded) {
  if (recorded != nullptr && recorded->as<std::nullptr_t>() != nullptr) return std::nullopt;
  const auto* fields = recorded != nullptr ? recorded->as<json::Object>() : nullptr;
  if (fields == nullptr) throw std::runtime_error("not an object");
  const auto member = [&](std::string_view name) -> const json::Value* {
    const auto it = fields->find(name);
    return it != fields->end() ? &it->second : nullptr;
  };
  HloSignature signature;
  signature.parameters = recorded_specs(member("parameters"));
  for (const json::Value& alias : items(member("aliases"))) {
    const json::Array& pair = items(&alias);
    if (pair.size() != 2) throw std::runtime_error("not an alias");
    signature.aliases.emplace_back(count(pair[0]), count(pair[1]));
  }
  return signature;
}

/// The executable of `entry` on the kernel runner, made without PJRT from its payload
/// (`payload`, judged `judgement`) and what it records: the signature the compile read
/// and checked, and the outputs the plugin reported. Null where it does not qualify, or
/// where anything of it is not as today's path would have it (which then decides): PJRT
/// deserializes it only when something asks for its handle.
std::shared_ptr<Executable> on_kernels(const Runtime& runtime, const ProgramFile& program,
                                       const Origin& origin, const cache::Entry& entry,
                                       const std::shared_ptr<const std::string>& payload,
                                       const compiled::Judged& judgement,
                                       const HloSignature& signature) {
  if (judgement.verdict.runner != compiled::Runner::Kernels || judgement.form == nullptr) {
    return nullptr;
  }
  const auto field = entry.header.find("outputs");
  if (field == entry.header.end()) return nullptr;  // an entry of an older cyxla
  try {
    std::vector<TensorSpec> outputs = recorded_specs(&field->second);
    if (outputs != program.outputs) return nullptr;
    std::vector<size_t> donated = checked_donations(signature, program, origin);
    if (signature.parameters.size() != program.inputs.size() + donated.size()) return nullptr;
    auto executable = std::make_shared<Executable>(runtime.shared_from_this(), payload,
                                                   program.inputs, std::move(outputs),
                                                   std::move(donated));
    executable->set_judged(judgement);
    if (executable->runner() != compiled::Runner::Kernels) return nullptr;
    return executable;
  } catch (const std::exception&) {
    return nullptr;
  }
}

/// The cached executable of `key`, or null with `compiled.cache_error` saying why not.
std::shared_ptr<Executable> lookup(const Runtime& runtime, const ProgramFile& program,
                                   const Origin& origin, const ExecutableKey& key,
                                   Compiled& compiled, cache::Warnings* warnings,
                                   const std::string& forced) {
  std::optional<cache::Entry> entry;
  try {
    entry = cache::read(kKind, key.key, warnings);
  } catch (const std::exception& e) {  // damaged, foreign or unsafe: compiled and replaced
    compiled.cache_error = e.what();
    return nullptr;
  }
  if (!entry) return nullptr;
  const auto recorded = entry->header.find("program");
  if (recorded == entry->header.end() || recorded->second != json::Value(key.program)) {
    compiled.cache_error =
        entry->path.string() + " was compiled from another program or with other options";
    return nullptr;
  }
  // The signature the compile read from the plugin and checked: asking the plugin again
  // would cost a serialization of the whole module (0.9 ms for a 20-layer MLP).
  std::optional<HloSignature> signature;
  try {
    const auto field = entry->header.find("signature");
    signature = recorded_signature(field != entry->header.end() ? &field->second : nullptr);
  } catch (const std::exception&) {
    compiled.cache_error = entry->path.string() + " records no signature this cyxla reads";
    return nullptr;
  }
  const auto payload = std::make_shared<const std::string>(std::move(entry->payload));
  const compiled::Judged judgement = judged(runtime, *payload);
  if (forced.empty() && signature) {
    auto executable =
        on_kernels(runtime, program, origin, *entry, payload, judgement, *signature);
    if (executable) return executable;
  }
  try {
    pjrt::LoadedExecutable loaded = runtime.deserialize_loaded(*payload);
    const std::optional<size_t> parameters = parameter_count(runtime.plugin(), loaded.get());
    if (signature && parameters && *parameters != signature->parameters.size()) {
      throw std::runtime_error("it takes " + std::to_string(*parameters) +
                               " parameters, its entry records " +
                               std::to_string(signature->parameters.size()));
    }
    auto executable = checked(runtime, std::move(loaded), signature, program, origin);
    executable->set_judged(judgement, forced);
    return executable;
  } catch (const std::exception& e) {  // whatever went wrong, compiling is the way out
    compiled.cache_error = "the plugin could not use " + entry->path.string() + ": " + e.what();
    return nullptr;
  }
}

/// Why `executable`, whose plugin reported `signature` and serialized it as `serialized`,
/// could not be stored under `key`, or "" once it is.
std::string store(const ProgramFile& program, const ExecutableKey& key,
                  const Executable& executable, std::string_view serialized,
                  const std::optional<HloSignature>& signature,
                  cache::Warnings* warnings) noexcept {
  try {
    json::Object header{
        {"name", program.name},
        {"platform", program.platform},
        {"program", key.program},
        {"signature", record(signature)},
        // What on_kernels makes an executable with, without the plugin.
        {"outputs", record_specs(executable.outputs())},
        {"fingerprint", hex(executable.fingerprint())},
    };
    cache::write(kKind, key.key, std::move(header), serialized, warnings);
    return "";
  } catch (const std::exception& e) {  // the program runs anyway; the next load compiles
    return std::string("could not store the executable: ") + e.what();
  }
}

}  // namespace

Compiled load_or_compile(const Runtime& runtime, const ProgramFile& program,
                         const Origin& origin, cache::Warnings* warnings,
                         std::string_view runner) {
  check_platform(runtime, program, origin);
  check_custom_calls(runtime, program, origin);
  const std::string forced = forced_pjrt(runner);
  Compiled compiled;
  const Clock::time_point start = Clock::now();
  std::optional<ExecutableKey> key;
  // A program that calls back into Python is neither looked up nor stored: its callback
  // ids number functions of this process only, so an entry would hand another process an
  // executable whose ids mean whatever that process numbered so.
  const bool calls_python =
      std::ranges::find(program.custom_calls, pjrt::kPythonCallbackTarget) !=
      program.custom_calls.end();
  try {
    if (!calls_python && cache::configured_directory(warnings)) {
      key = cache::executable_key(program, runtime);
    }
  } catch (const std::exception& e) {  // no key to trust: compiled, not stored
    compiled.cache_error = e.what();
  }
  if (key) compiled.executable = lookup(runtime, program, origin, *key, compiled, warnings, forced);
  compiled.load_seconds = seconds_since(start);
  if (compiled.executable) {
    compiled.cache_hit = true;
    return compiled;
  }
  const Clock::time_point compile_start = Clock::now();
  pjrt::LoadedExecutable loaded = runtime.compile_loaded(program.stablehlo, program.compile_options);
  compiled.compile_seconds = seconds_since(compile_start);
  const std::optional<HloSignature> signature = signature_of(runtime.plugin(), loaded.get());
  compiled.executable = checked(runtime, std::move(loaded), signature, program, origin);
  // Serialized once, for the verdict and the store: the compiler's own form, objects and all.
  std::string serialized;
  std::string serialize_error;
  if (key || runtime.platform() == "cpu") {
    try {
      serialized = compiled.executable->serialize();
    } catch (const std::exception& e) {
      serialize_error = e.what();
    }
  }
  compiled.executable->set_judged(
      serialize_error.empty()
          ? judged(runtime, serialized)
          : compiled::Judged{{compiled::Runner::Pjrt,
                              "the plugin could not serialize it: " + serialize_error},
                             nullptr},
      forced);
  if (key && !serialize_error.empty()) {
    compiled.cache_error += (compiled.cache_error.empty() ? "" : "; ") +
                            ("could not store the executable: " + serialize_error);
  } else if (key) {
    // A bad entry is replaced by the fresh one; both problems are reported.
    const std::string failure =
        store(program, *key, *compiled.executable, serialized, signature, warnings);
    if (!failure.empty()) {
      compiled.cache_error += (compiled.cache_error.empty() ? "" : "; ") + failure;
    }
  }
  return compiled;
}

}  // namespace cyxla::loading
