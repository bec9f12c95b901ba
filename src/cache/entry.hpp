// The bytes of one disk-cache entry, written and checked: a prefix (magic "CYXLA\0CE",
// format version, header length, SHA-256 of everything after the prefix), a JSON header
// (kind, key, payload length, cyxla's version, a digest binding kind, key and payload,
// and what the caller records) and the payload. Every integer is little-endian.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "common/json.hpp"

namespace cyxla::cache {

/// Bumped whenever the layout of an entry changes; entries of another format are foreign.
/// 2 (2026-12): headers bind key and payload (`binding`), executables record the key's
/// source document, and specs are written with element types as numbers.
inline constexpr uint32_t kFormatVersion = 2;
/// Magic, format version, header length, SHA-256.
inline constexpr size_t kPrefixSize = 8 + 4 + 4 + 32;
/// How deep a header may nest: far beyond what cyxla writes, far below the stack's limit.
inline constexpr int kHeaderDepth = 256;

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

/// The file name of `key`'s entry: a hash, so any key makes a safe name.
std::string file_name(std::string_view kind, std::string_view key);

/// A digest of kind, key and payload together, kept in the checksummed header. The
/// checksum alone proves an entry whole, not that it is the entry of its key: an entry
/// whose key field (and checksum) was rewritten would pass it. Nothing without a secret
/// stops a writer who knows this format; the directory's ownership check does.
std::string binding(std::string_view kind, std::string_view key, std::string_view payload);

/// The entry of `header` (holding the store's fields already) and `payload`.
std::string encode(const json::Object& header, std::string_view payload);

/// Checks `data`, read from `path`, as the entry of `key` written by cyxla `version`, and
/// splits it; Damaged says what is wrong. The checksum is checked before anything is parsed.
Entry decode(const std::filesystem::path& path, std::string&& data, std::string_view kind,
             std::string_view key, std::string_view version);

/// The length of the header that follows the entry prefix `prefix`, unchecked; nothing
/// when `prefix` is shorter than a prefix or not one.
std::optional<uint32_t> header_length(std::string_view prefix) noexcept;

/// `text` read as a header: a JSON object within kHeaderDepth; nothing otherwise.
std::optional<json::Object> parse_header(std::string_view text);

}  // namespace cyxla::cache
