// An entry's encoding and its checks, in the order that lets nothing unchecked be parsed.
#include "cache/entry.hpp"

#include <array>
#include <cstring>
#include <limits>

#include "common/little_endian.hpp"
#include "common/sha256.hpp"

namespace cyxla::cache {
namespace {

constexpr std::string_view kMagic("CYXLA\0CE", 8);
constexpr std::string_view kNul("\0", 1);
/// The most characters of a hostile header's text that a message quotes.
constexpr size_t kQuoted = 40;

template <class T>
const T* member(const json::Object& object, std::string_view name) {
  const auto found = object.find(name);
  return found == object.end() ? nullptr : found->second.as<T>();
}

}  // namespace

std::string file_name(std::string_view kind, std::string_view key) {
  return Sha256().update(kind).update(kNul).update(key).hexdigest() + ".entry";
}

std::string binding(std::string_view kind, std::string_view key, std::string_view payload) {
  return Sha256().update(kind).update(kNul).update(key).update(kNul).update(payload).hexdigest();
}

std::string encode(const json::Object& header, std::string_view payload) {
  const std::string header_text = json::dump(header);
  if (header_text.size() > std::numeric_limits<uint32_t>::max()) {
    throw std::length_error("the entry's header is too long");
  }
  const std::array<uint8_t, 32> sum = Sha256().update(header_text).update(payload).digest();
  std::string out;
  out.reserve(kPrefixSize + header_text.size() + payload.size());
  out += kMagic;
  append_little_endian<uint32_t>(out, kFormatVersion);
  append_little_endian<uint32_t>(out, static_cast<uint32_t>(header_text.size()));
  out.append(reinterpret_cast<const char*>(sum.data()), sum.size());
  out += header_text;
  out += payload;
  return out;
}

Entry decode(const std::filesystem::path& path, std::string&& data, std::string_view kind,
             std::string_view key, std::string_view version) {
  const std::string where = path.string();
  if (data.size() < kPrefixSize) {
    throw Damaged(where + " is truncated (" + std::to_string(data.size()) +
                  " bytes, no complete prefix)");
  }
  const std::string_view bytes(data);
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    throw Damaged(where + " is not a cyxla cache entry (bad magic number)");
  }
  if (const uint32_t format = read_little_endian<uint32_t>(bytes, 8); format != kFormatVersion) {
    throw Damaged(where + " was written in cache format " + std::to_string(format) +
                  "; this cyxla reads format " + std::to_string(kFormatVersion));
  }
  const size_t length = read_little_endian<uint32_t>(bytes, 12);
  const std::string_view body = bytes.substr(kPrefixSize);
  if (length > body.size()) throw Damaged(where + " is truncated (its header is incomplete)");
  // Before parsing anything: a truncated payload fails here too.
  const std::array<uint8_t, 32> sum = Sha256().update(body).digest();
  if (std::memcmp(sum.data(), bytes.data() + 16, sum.size()) != 0) {
    throw Damaged(where + " is corrupted or truncated (its SHA-256 does not match)");
  }
  std::optional<json::Value> parsed = json::parse(body.substr(0, length), kHeaderDepth);
  if (!parsed) {
    throw Damaged(where + " has an unreadable header (not strict JSON, or nested more than " +
                  std::to_string(kHeaderDepth) + " deep)");
  }
  json::Object* header = std::get_if<json::Object>(&parsed->data);
  if (header == nullptr) throw Damaged(where + " has a header that does not describe its payload");
  const std::string_view payload = body.substr(length);
  const auto* declared = member<int64_t>(*header, "payload_length");
  const auto* written_kind = member<std::string>(*header, "kind");
  const auto* written_key = member<std::string>(*header, "key");
  const auto* written_binding = member<std::string>(*header, "binding");
  const auto* written_version = member<std::string>(*header, "cyxla_version");
  const auto undescribed = [&where](std::string_view field) {
    return Damaged(where + " has a header that does not describe its payload (" +
                   std::string(field) + ")");
  };
  if (written_kind == nullptr) throw undescribed("kind");
  if (written_key == nullptr) throw undescribed("key");
  if (written_binding == nullptr) throw undescribed("binding");
  if (written_version == nullptr) throw undescribed("cyxla_version");
  if (declared == nullptr || *declared < 0 || static_cast<uint64_t>(*declared) != payload.size()) {
    throw undescribed("payload_length");
  }
  if (*written_kind != kind || *written_key != key) {
    throw Damaged(where + " holds the " + written_kind->substr(0, kQuoted) +
                  " entry for another key; it is not this " + std::string(kind) + " entry");
  }
  if (*written_binding != binding(kind, key, payload)) {
    throw Damaged(where + " was moved from another key (its binding does not match)");
  }
  if (*written_version != version) {
    throw Damaged(where + " was written by cyxla " + written_version->substr(0, kQuoted) +
                  ", not by this cyxla " + std::string(version));
  }
  data.erase(0, kPrefixSize + length);  // the payload, without a second copy of it
  return Entry{path, std::move(*header), std::move(data)};
}

std::optional<uint32_t> header_length(std::string_view prefix) noexcept {
  if (prefix.size() < kPrefixSize || prefix.substr(0, kMagic.size()) != kMagic) {
    return std::nullopt;
  }
  return read_little_endian<uint32_t>(prefix, 12);
}

std::optional<json::Object> parse_header(std::string_view text) {
  std::optional<json::Value> parsed = json::parse(text, kHeaderDepth);
  json::Object* header = parsed ? std::get_if<json::Object>(&parsed->data) : nullptr;
  if (header == nullptr) return std::nullopt;
  return std::move(*header);
}

}  // namespace cyxla::cache
