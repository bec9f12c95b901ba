// libFuzzer target: the disk cache's entry reader (src/cache/entry.cpp), with a mutator
// that keeps an entry's SHA-256 and header length right after it changes the header or
// the payload, so that inputs get past the checksum to the JSON header and its fields.
// Damaged is the reader's refusal; anything else (a crash, a sanitizer report, another
// exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "cache/entry.hpp"
#include "common/little_endian.hpp"
#include "common/sha256.hpp"

namespace {

using cyxla::cache::kPrefixSize;

// The entry the harness asks for; the seeds (tests/fuzz/cache_entry) hold such entries.
constexpr std::string_view kKind = "program";
constexpr std::string_view kKey = "fuzz";
constexpr std::string_view kVersion = "0.0.0";

/// Rewrites the header length and the SHA-256 of an entry whose header is `header_size`
/// bytes long, as the writer would.
void reseal(std::string& entry, size_t header_size) {
  if (entry.size() < kPrefixSize) return;
  std::string length;
  cyxla::append_little_endian<uint32_t>(length, static_cast<uint32_t>(header_size));
  entry.replace(12, 4, length);
  const auto sum =
      cyxla::Sha256().update(std::string_view(entry).substr(kPrefixSize)).digest();
  std::memcpy(entry.data() + 16, sum.data(), sum.size());
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto length = cyxla::cache::header_length(input);
  // Not an entry, or an odd turn: libFuzzer's own byte-level mutations, prefix included.
  if (!length || *length > size - kPrefixSize || seed % 8 == 0) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  std::string header(input.substr(kPrefixSize, *length));
  std::string payload(input.substr(kPrefixSize + *length));
  std::string& part = seed % 3 == 0 ? payload : header;
  const size_t room = max_size > size ? max_size - size : 0;
  const size_t old_size = part.size();
  part.resize(old_size + room);
  part.resize(
      LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(part.data()), old_size, old_size + room));
  // Half the time, a header that still parses gets the binding of the harness's key and
  // the payload, as the writer would give it, so that the checks after the binding run.
  if (seed % 2 == 0) {
    if (auto fields = cyxla::cache::parse_header(header)) {
      (*fields)["binding"] = cyxla::cache::binding(kKind, kKey, payload);
      header = cyxla::json::dump(*fields);
    }
  }
  std::string entry(input.substr(0, kPrefixSize));
  entry += header;
  entry += payload;
  reseal(entry, header.size());
  if (entry.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, entry.data(), entry.size());
  return entry.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string entry(reinterpret_cast<const char*>(data), size);
  try {
    (void)cyxla::cache::decode("fuzz.entry", std::move(entry), kKind, kKey, kVersion);
  } catch (const cyxla::cache::Damaged&) {
  }
  return 0;
}
