// The one way a program becomes an executable, for Python's compile_program and C's
// cyxla_load_program alike: the custom-call check, the disk cache's key and lookup, the
// plugin's deserialize or compile, the check of the program's specs against what the
// plugin compiled, and the store.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "cache/settings.hpp"
#include "common/error.hpp"
#include "program/program_file.hpp"

namespace cyxla {
class Executable;
class Runtime;
}  // namespace cyxla

namespace cyxla::loading {

/// Where a program comes from, for messages and for the kind of a refusal of its specs.
struct Origin {
  /// Names the program at the start of every refusal: a file's path, or
  /// "compile_program: NAME".
  std::string source;
  /// The kind of the error when the program's specs are not those of the executable
  /// (ProgramFile for a file, InvalidArgument for a caller's program).
  ErrorKind refusal = ErrorKind::InvalidArgument;
};

/// What load_or_compile made, and how.
struct Compiled {
  std::shared_ptr<Executable> executable;
  bool cache_hit = false;
  double compile_seconds = 0.0;  // in the plugin's compile; 0 on a hit
  double load_seconds = 0.0;     // on the key, the lookup and loading the entry
  /// Why the cache was not used, or why an entry was passed over and replaced; empty when
  /// nothing went wrong. A cache problem never fails the call.
  std::string cache_error;
};

/// `program` as an executable of `runtime`: from the disk cache when it holds one that
/// passes every check, compiled (and stored) otherwise. Throws cyxla::Error: a platform
/// other than the runtime's (InvalidArgument), a custom call that no handler of this
/// process provides (UnsupportedProgram), the plugin's refusal (Compile), specs that are not
/// the compiled program's (`origin.refusal`). What the store warns of (an unsafe directory,
/// an unsafe entry, a size bound it cannot read) goes to `warnings` when given. `runner`
/// is the caller's choice of runner, "auto" or "pjrt" (InvalidArgument otherwise); empty,
/// the environment variable CYXLA_RUNNER chooses, "auto" when unset.
Compiled load_or_compile(const Runtime& runtime, const program::ProgramFile& program,
                         const Origin& origin, cache::Warnings* warnings = nullptr,
                         std::string_view runner = {});

}  // namespace cyxla::loading
