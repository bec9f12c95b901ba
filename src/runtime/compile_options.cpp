// The defaults are written in protobuf's wire format by hand, there being no protobuf
// library in the core: CompileOptionsProto's field 7 is `map<string, OptionOverrideProto>
// env_option_overrides`, each entry a message of key (1) and value (2), the value's
// `string_field` being its field 1 (xla/pjrt/proto/compile_options.proto).
#include "runtime/compile_options.hpp"

#include <cstdint>

#include "runtime/platforms.hpp"

namespace cyxla {
namespace {

constexpr uint32_t kEnvOptionOverrides = 7;
constexpr uint32_t kMapKey = 1;
constexpr uint32_t kMapValue = 2;
constexpr uint32_t kStringField = 1;
constexpr uint32_t kLengthDelimited = 2;  // the wire type of strings and messages

void append_varint(std::string& out, uint64_t value) {
  for (; value >= 0x80; value >>= 7) out += static_cast<char>((value & 0x7f) | 0x80);
  out += static_cast<char>(value);
}

/// Field `number` holding `bytes` (a string or an embedded message).
std::string length_delimited(uint32_t number, std::string_view bytes) {
  std::string out;
  append_varint(out, (uint64_t{number} << 3) | kLengthDelimited);
  append_varint(out, bytes.size());
  out += bytes;
  return out;
}

}  // namespace

std::string with_default_compile_options(std::string_view platform, std::string_view code,
                                         std::string_view compile_options) {
  const Platform* known = find_platform(normalize_platform(platform));
  std::string out;
  if (known != nullptr) {
    for (const CompileDefault& option : known->compile_defaults) {
      // A name found elsewhere (a constant's bytes, a location) only applies it needlessly.
      if (!option.operation.empty() && code.find(option.operation) == code.npos) continue;
      const std::string value = length_delimited(kStringField, option.value);
      out += length_delimited(kEnvOptionOverrides, length_delimited(kMapKey, option.name) +
                                                       length_delimited(kMapValue, value));
    }
  }
  out += compile_options;
  return out;
}

}  // namespace cyxla
