// Where the disk cache lives and how large it may grow, from the environment, and how a
// call says that it turned the cache off: the settings every store operation reads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cyxla::cache {

/// The cache directory; an empty value or "0" turns the cache off.
inline constexpr const char* kDirectoryVariable = "CYXLA_CACHE_DIR";
/// The most bytes the cache keeps before it evicts the least recently used entries.
inline constexpr const char* kMaxBytesVariable = "CYXLA_CACHE_MAX_BYTES";
inline constexpr int64_t kDefaultMaxBytes = int64_t{1} << 30;

/// Where a call puts the warnings it gives (a refused directory, an unsafe entry, a
/// setting it cannot read), without the "cyxla cache: " that the bindings add. A caller
/// that passes none (a process without Python) gives none.
using Warnings = std::vector<std::string>;

/// The cache directory is unsafe or unusable: the cache is off for this call.
class Refused : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Warns that the cache is not used because of `problem`, then throws Refused(problem).
[[noreturn]] void refuse(Warnings* warnings, std::string problem);

/// Whose conventions place the default directory.
enum class Platform {
  unix_like,  // $XDG_CACHE_HOME/cyxla, else ~/.cache/cyxla (Linux and the other Unixes)
  macos,      // ~/Library/Caches/cyxla
  windows,    // %LOCALAPPDATA%\cyxla\Cache, else ~\AppData\Local\cyxla\Cache
};

/// The platform this library was built for.
Platform host_platform() noexcept;

/// `text` without the ASCII whitespace around it (settings are read with it, and the
/// key the CPU's feature flags).
std::string_view strip(std::string_view text) noexcept;

/// The cache directory: CYXLA_CACHE_DIR (`~` expanded, made absolute), else the
/// `platform`'s default; nothing when the cache is off. Refused (after a warning) when it
/// cannot be resolved, such as CYXLA_CACHE_DIR=~nosuchuser/x. The directory need not exist.
std::optional<std::filesystem::path> configured_directory(Platform platform,
                                                          Warnings* warnings = nullptr);
/// configured_directory on this platform.
std::optional<std::filesystem::path> configured_directory(Warnings* warnings = nullptr);

/// The bound on the cache's bytes: CYXLA_CACHE_MAX_BYTES (bytes, or with a K, M or G
/// suffix), else 1 GiB, which is also what a value it cannot read gives, after a warning.
int64_t max_bytes(Warnings* warnings = nullptr);

}  // namespace cyxla::cache
