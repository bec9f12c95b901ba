// libFuzzer target: the strict JSON reader of the disk cache's entry headers
// (src/common/json.cpp). Whatever parses must write back as JSON that parses to the same
// value (the writer's contract), and nothing may crash or run past the nesting bound.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/json.hpp"

namespace json = cyxla::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::optional<json::Value> value = json::parse(text, 256);
  if (!value) return 0;
  // Read back what was written: a value that does not survive the round trip is a bug.
  // (Floats: dump writes the shortest text that reads back as the same double.)
  const std::optional<json::Value> again = json::parse(json::dump(*value), 256);
  if (!again || !(*again == *value)) std::abort();
  return 0;
}
