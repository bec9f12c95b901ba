// libFuzzer target: the reader of a plugin record's header (src/cache/plugin_record.cpp),
// the facts that let a process run cached programs without opening the plugin. The input
// is the header's JSON text (the store's reader, fuzz_cache_entry's, checked the bytes
// around it). Damaged is the reader's refusal; anything else (a crash, a sanitizer
// report, another exception) is a finding, and so is facts that do not write back as a
// record that reads as the same facts.
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
    const cyxla::PluginFacts facts = cyxla::cache::read_plugin_facts(*header, kLibrary);
    // What was read writes back as a record that reads as the same facts.
    const cyxla::json::Object again = cyxla::cache::plugin_record(facts);
    if (cyxla::cache::read_plugin_facts(again, kLibrary) != facts) std::abort();
  } catch (const cyxla::cache::Damaged&) {
  }
  return 0;
}
