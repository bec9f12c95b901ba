// The disk cache's store: one file per entry, <directory>/<kind>/<sha256(kind\0key)>.entry
// (cache/entry.hpp), in directories private to the user (0700) that are refused when
// someone else owns them or may write them. Entries are written to a temporary file and
// renamed into place, read without following links or waiting on pipes, and checked
// before anything hands them on; the least recently used are evicted beyond the size
// bound. A hostile or damaged entry is a miss (Damaged), never a crash.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cache/entry.hpp"
#include "cache/settings.hpp"

namespace cyxla::cache {

/// The kinds of entry, each in a directory of its own; eviction weighs them all.
inline constexpr std::array<std::string_view, 5> kKinds = {"executables", "programs", "probes",
                                                           "scans", "plugins"};

/// An entry alone is larger than the cache's size bound, so it is not stored.
class TooLarge : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The file system refused a write (the error code says why): nothing was stored.
class WriteFailed : public std::system_error {
  using std::system_error::system_error;
};

/// cyxla's version as entries record it: cyxla.__version__.
std::string_view cyxla_version() noexcept;

/// The checked directory of `kind`'s entries; nothing when the cache is off, or when the
/// directory does not exist and `create` is false. std::invalid_argument for a kind not
/// in kKinds; Refused (after a warning) when a directory is unsafe or cannot be made.
std::optional<std::filesystem::path> open_store(std::string_view kind, bool create,
                                                Warnings* warnings = nullptr);

/// The checked entry of `key`, or nothing when there is none or the cache is off; its
/// use is recorded for eviction. Throws Damaged for an entry that must not be used (left
/// for write to replace; one that someone else owns or may write also warns) and Refused
/// for an unsafe directory.
std::optional<Entry> read(std::string_view kind, std::string_view key,
                          Warnings* warnings = nullptr);

/// Stores an entry whose header holds `header` and the store's own fields (kind, key,
/// payload_length, binding, cyxla_version, created), then evicts the least recently used
/// entries beyond the size bound and temporary files that dead writers left. Returns the
/// entry's path, or nothing when the cache is off. Throws Refused, TooLarge, or
/// WriteFailed.
std::optional<std::filesystem::path> write(std::string_view kind, std::string_view key,
                                           json::Object header, std::string_view payload,
                                           Warnings* warnings = nullptr);

/// One file in the cache, as `entries` finds it.
struct Listing {
  std::string_view kind;
  std::filesystem::path path;
  int64_t size;
  double last_used;  // seconds since the epoch: the modification time
};

/// Every entry file and leftover temporary file in the cache, unchecked; nothing when the
/// cache is off or cannot be resolved (which warns).
std::vector<Listing> entries(Warnings* warnings = nullptr);

/// The header of the file at `path` for display, unchecked (no checksum, no binding);
/// nothing when it is no entry or cannot be read. Never waits on a pipe.
std::optional<json::Object> peek(const std::filesystem::path& path);

/// What `clear` did.
struct Cleared {
  int64_t removed = 0;
  int64_t freed = 0;  // bytes
  /// The files it could not remove, and why (a directory named like an entry, say).
  std::vector<std::pair<std::filesystem::path, std::error_code>> failures;
};

/// Removes every entry and temporary file; one that cannot be removed is skipped, with a
/// warning, and the others are removed all the same.
Cleared clear(Warnings* warnings = nullptr);

#ifdef CYXLA_TESTING
// A test build only (CMake's CYXLA_TESTING): a wheel's store has no seams.
namespace testing {

/// What the tests replace to reach what a real process cannot arrange at will.
struct Seams {
  /// The effective user id that owns the cache, instead of geteuid().
  std::optional<uint32_t> user;
  /// Called at `stage`: "checked" (a read has checked the path, not yet opened it),
  /// "opened" (a read has opened `fd`, not yet checked it) and "listed" (clear has
  /// listed the files, not yet removed them).
  std::function<void(std::string_view stage, const std::filesystem::path& path, int fd)> hook;
};

/// The process's seams: none unless a test sets them.
Seams& seams() noexcept;

}  // namespace testing
#endif
}  // namespace cyxla::cache
