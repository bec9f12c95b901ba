// libFuzzer target: the protobuf wire-format reader of a plugin's optimized HLO module
// (src/runtime/hlo_signature.cpp), both formats. Bytes it cannot read are a cyxla::Error;
// anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/error.hpp"
#include "runtime/hlo_signature.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the format, so one corpus covers both.
  const std::string_view format = (data[0] & 1) != 0 ? "hlo_with_config" : "hlo";
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    (void)cyxla::read_hlo_signature(format, bytes);
  } catch (const cyxla::Error&) {
  }
  return 0;
}
