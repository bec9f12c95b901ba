// libFuzzer target: the reader of a plugin record's header (src/cache/plugin_record.cpp),
// the facts that let a process run cached programs without opening the plugin. The input
// is the header's JSON text (the store's reader, fuzz_cache_entry's, checked the bytes
// around it). Damaged is the reader's refusal; anything else (a crash, a sanitizer
// report, another exception) is a finding, and so is a record that does not write back as
// one that reads as the same facts and client options.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cache/entry.hpp"
#include "cache/plugin_record.hpp"

namespace {

// The library the harness asks for; the seeds (tests/fuzz/plugin_record) record it.
const cyxla::LibraryIdentity kLibrary{"/fuzz/pjrt_c_api_cpu_plugin.so", 201000000, 1700000000};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto header = cyxla::cache::parse_header(text);
  if (!header) return 0;
  try {
    const cyxla::cache::PluginRecord record = cyxla::cache::read_plugin_record(*header, kLibrary);
    // What was read writes back as a record that reads as the same facts and options.
    const cyxla::cache::PluginRecord again =
        cyxla::cache::read_plugin_record(cyxla::cache::plugin_record(record), kLibrary);
    if (again.facts != record.facts ||
        !cyxla::cache::same_options(again.client_options, record.client_options)) {
      std::abort();
    }
  } catch (const cyxla::cache::Damaged&) {
  }
  return 0;
}
