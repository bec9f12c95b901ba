// The disk cache's record of a plugin's facts (runtime/plugin_facts.hpp), one entry of
// kind "plugins" per library identity: what lets a process without Python compute the
// executables' keys, and run a cached program on the kernel runner, without loading the
// plugin. The record's bytes are read by the store's checked reader; its header by
// read_plugin_facts, which refuses anything it did not write (fuzz/plugin_record.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cache/settings.hpp"
#include "common/json.hpp"
#include "runtime/plugin_facts.hpp"

namespace cyxla::cache {

inline constexpr std::string_view kPluginKind = "plugins";

/// The record's key of `library`: its path, size and modification time, so a rebuilt or
/// moved library has no record until it is opened once.
std::string plugin_record_key(const LibraryIdentity& library);

/// The header fields that record `facts` (whose library is set).
json::Object plugin_record(const PluginFacts& facts);

/// The facts a record's `header` holds for `library`. Throws Damaged saying what is wrong
/// for anything plugin_record did not write for that library: another library, a missing
/// or mistyped field, an unknown platform, a PJRT version cyxla does not take.
PluginFacts read_plugin_facts(const json::Object& header, const LibraryIdentity& library);

/// The recorded facts of `library`, or nothing (the cache is off, there is no record, or
/// it cannot be used: `why` then says why, when given). Never throws.
std::optional<PluginFacts> recorded_plugin_facts(const LibraryIdentity& library,
                                                 std::string* why = nullptr,
                                                 Warnings* warnings = nullptr) noexcept;

/// Records `facts` (whose library is set); returns why it could not, or "". Never throws.
std::string record_plugin_facts(const PluginFacts& facts, Warnings* warnings = nullptr) noexcept;

}  // namespace cyxla::cache
