// The native loader's executables in the disk cache, as Python's
// cyxla/_cache/executables.py and keys.py keep them: the same keys, headers and checks,
// so that a program compiled in Python is a cache hit for cyxla_load_program and the
// other way round.
//
// The key is the SHA-256 of a JSON document (the "source", kept in the entry) naming
// everything that decides the compiled code: the program's StableHLO and compile options
// (their SHA-256), its platform, the plugin library (canonical path, size, modification
// time, PJRT version, `xla_version` attribute), the client's options, cyxla's version
// and the host (machine, CPU features). A cache problem never fails a load: an entry
// that cannot be used is a miss, compiled afresh and replaced.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "program/json.hpp"
#include "program/program_file.hpp"

namespace cyxla {
class Executable;
class Runtime;
}  // namespace cyxla

namespace cyxla::program {

/// The cache's key of a program file compiled by a runtime.
struct ExecutableKey {
  json::Object source;  // keys.py's executable_source
  std::string key;      // the SHA-256 of `source` as Python's json.dumps writes it
};

/// The key of `file` compiled by `runtime`, or nothing when the cache is off or cannot be
/// used (its directory cannot be resolved, the plugin's library cannot be identified).
std::optional<ExecutableKey> executable_key(const ProgramFile& file,
                                            const Runtime& runtime) noexcept;

/// The cached executable of `file`, or null on a miss: no entry, or one that is
/// damaged, foreign, unsafe, of another program, plugin or inputs, or that the plugin
/// cannot load.
std::shared_ptr<Executable> load_cached(const ProgramFile& file, const Runtime& runtime,
                                        const ExecutableKey& key) noexcept;

/// Stores `executable` compiled from `file` under `key`, replacing any entry there;
/// failures (an unsafe directory, a full disk, an entry beyond the size bound) are
/// ignored: the next load compiles again.
void store_executable(const ProgramFile& file, const ExecutableKey& key,
                      const Executable& executable) noexcept;

}  // namespace cyxla::program
