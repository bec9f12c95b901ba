// The disk cache's store, as Python's cyxla/_cache/store.py keeps it: the same directory,
// entry files and checks, so that either language reads what the other wrote.
//
// An entry is one file, <directory>/<kind>/<sha256(kind + "\0" + key)>.entry: a prefix
// (magic "CYXLA\0CE", format version, header length, SHA-256 of everything after the
// prefix), a JSON header (kind, key, payload length, cyxla's version, a digest binding
// kind, key and payload, and what the caller records) and the payload. Directories are
// private to the user (0700) and refused when someone else owns them or may write them;
// entries are written to a temporary file and renamed into place; the least recently
// used ones are evicted beyond CYXLA_CACHE_MAX_BYTES.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "program/json.hpp"

namespace cyxla::program::disk_cache {

/// Python's FORMAT_VERSION: entries of another format are foreign.
inline constexpr uint32_t kFormatVersion = 2;

/// The directory or an entry is unsafe or unusable: the cache is off for this call.
class Refused : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// An entry that is truncated, corrupted, foreign or unsafe: ignored, and replaced by
/// the next write of its key.
class Damaged : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A checked entry.
struct Entry {
  std::filesystem::path path;
  json::Object header;
  std::string payload;
};

/// cyxla's version as entries record it: cyxla.__version__.
std::string_view cyxla_version() noexcept;

/// `text` without the whitespace around it, as Python's str.strip() of ASCII text (the
/// store strips settings with it, the keys the CPU's feature flags).
std::string_view strip(std::string_view text) noexcept;

/// The cache directory (CYXLA_CACHE_DIR, else $XDG_CACHE_HOME/cyxla or ~/.cache/cyxla),
/// or nothing when the cache is off (CYXLA_CACHE_DIR "" or "0"); Refused when it cannot
/// be resolved (`~nosuchuser`).
std::optional<std::filesystem::path> configured_directory();

/// The bound on the cache's bytes: CYXLA_CACHE_MAX_BYTES (bytes, or with a K, M or G
/// suffix), else 1 GiB.
int64_t max_bytes();

/// The checked entry of `key`, or nothing when there is none or the cache is off.
/// Throws Damaged for an entry that must not be used and Refused for an unsafe directory.
std::optional<Entry> read(std::string_view kind, std::string_view key);

/// Stores an entry whose header holds `header` and the store's own fields, then evicts
/// the least recently used entries beyond the size bound. Does nothing when the cache is
/// off; throws Refused, or std::runtime_error when the entry cannot be written or alone
/// is larger than the bound.
void write(std::string_view kind, std::string_view key, json::Object header,
           std::string_view payload);

}  // namespace cyxla::program::disk_cache
