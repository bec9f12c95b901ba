// The platforms cyxla knows, in one table: its names in the order plugins are preferred,
// the older names some plugins report, XLA's names and the client options each
// platform's plugin gets by default. Python reads them from cyxla._core.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace cyxla {

/// A client option that a platform's plugin is created with unless the caller names it.
struct DefaultOption {
  std::string_view name;
  std::variant<int64_t, bool> value;
};

struct Platform {
  std::string_view name;      // cyxla's, as program files and jax.export spell it
  std::string_view xla_name;  // XLA's, as FFI registrations use it; empty when none
  std::span<const DefaultOption> client_defaults;
};

namespace detail {
// One device and synchronous execution: a run stays in the calling thread.
inline constexpr DefaultOption kCpuDefaults[] = {{"cpu_device_count", int64_t{1}},
                                                 {"asynchronous", false}};
// Device memory taken as programs need it, not most of it at once.
inline constexpr DefaultOption kGpuDefaults[] = {{"preallocate", false}};
}  // namespace detail

/// Every platform, in the order installed plugins are preferred when nothing else decides.
inline constexpr std::array<Platform, 4> kPlatforms = {{
    {"cpu", "Host", detail::kCpuDefaults},
    {"cuda", "CUDA", detail::kGpuDefaults},
    {"rocm", "ROCM", detail::kGpuDefaults},
    {"tpu", "", {}},
}};

/// Older names that some plugins and JAX report, and cyxla's name of each.
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kPlatformAliases =
    {{{"host", "cpu"}, {"gpu", "cuda"}}};

/// `name` as cyxla spells platforms: lower case, without surrounding blanks, an alias
/// replaced by cyxla's name ("Host" -> "cpu"); any other name is kept, lower case.
std::string normalize_platform(std::string_view name);

/// The platform that cyxla spells exactly `name`, or null.
const Platform* find_platform(std::string_view name) noexcept;

}  // namespace cyxla
