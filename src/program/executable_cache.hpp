// The native loader's disk cache: the plugin's serialized executable of each program file,
// so that a process's second start loads in milliseconds instead of compiling.
//
// Entries live in the directory of Python's cache (CYXLA_CACHE_DIR, else
// $XDG_CACHE_HOME/cyxla or ~/.cache/cyxla), under native/, keyed by a hash of the file's
// program and the plugin's identity; they are not Python's entries (its keys need JAX).
// A cache that cannot be read or written is skipped: it never fails a load.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "program/program_file.hpp"

namespace cyxla {
class Runtime;
}

namespace cyxla::program {

/// Where the executable of `file` compiled by `runtime` is cached, or nothing when the
/// cache is off (CYXLA_CACHE_DIR set to "" or "0") or there is no home directory.
std::optional<std::filesystem::path> cache_entry(const ProgramFile& file, const Runtime& runtime);

/// The entry's bytes, or "" when there is none or it cannot be read.
std::string read_entry(const std::filesystem::path& entry);

/// Writes the entry through a temporary file and a rename, so that readers never see a
/// partial one; failures are ignored.
void store_entry(const std::filesystem::path& entry, const std::string& bytes) noexcept;

}  // namespace cyxla::program
