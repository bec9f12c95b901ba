// The disk cache's record of a plugin's facts (runtime/plugin_facts.hpp), one entry of
// kind "plugins" per library identity: what lets a process without Python compute the
// executables' keys, and run a cached program on the kernel runner, without loading the
// plugin. The record's bytes are read by the store's checked reader; its header by
// read_plugin_facts, which refuses anything it did not write (fuzz/plugin_record.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/settings.hpp"
#include "common/json.hpp"
#include "runtime/plugin_facts.hpp"

namespace cyxla::cache {

inline constexpr std::string_view kPluginKind = "plugins";

/// What a record holds: the plugin's facts, and the client options a client of it was
/// created with from that very file. A process that asks for other options loads the
/// plugin, which alone can check them.
struct PluginRecord {
  PluginFacts facts;
  std::vector<pjrt::NamedValue> client_options;
};

/// Whether `a` and `b` name the same options with the same values, in any order.
bool same_options(const std::vector<pjrt::NamedValue>& a, const std::vector<pjrt::NamedValue>& b);

/// The record's key of `library`: its path, size and modification time, so a rebuilt or
/// moved library has no record until it is opened once.
std::string plugin_record_key(const LibraryIdentity& library);

/// The header fields that record `record` (whose facts' library is set).
json::Object plugin_record(const PluginRecord& record);

/// The record a `header` holds for `library`. Throws Damaged saying what is wrong for
/// anything plugin_record did not write for that library: another library, a missing or
/// mistyped field, an unknown platform, a PJRT version cyxla does not take, an option
/// named twice.
PluginRecord read_plugin_record(const json::Object& header, const LibraryIdentity& library);

/// The record of `library`, or nothing (the cache is off, there is no record, or it cannot
/// be used: `why` then says why, when given). Never throws.
std::optional<PluginRecord> recorded_plugin(const LibraryIdentity& library,
                                            std::string* why = nullptr,
                                            Warnings* warnings = nullptr) noexcept;

/// Stores `record` (whose facts' library is set); returns why it could not, or "". Never
/// throws.
std::string record_plugin(const PluginRecord& record, Warnings* warnings = nullptr) noexcept;

}  // namespace cyxla::cache
