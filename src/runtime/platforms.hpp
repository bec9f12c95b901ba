// The platforms cyxla knows, in one table: its names in the order plugins are preferred,
// the older names some plugins report, XLA's names, and the client options and compile
// options each platform's plugin gets by default. Python reads them from cyxla._core.
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

/// An XLA option that a platform's programs are compiled with unless the caller's compile
/// options override it (runtime/compile_options.hpp).
struct CompileDefault {
  std::string_view name;
  std::string_view value;  // as XLA's option parser reads it
  /// The operation whose programs get it, as StableHLO names it (its bytecode and its text
  /// both hold the name); empty for every program.
  std::string_view operation;
};

struct Platform {
  std::string_view name;      // cyxla's, as program files and jax.export spell it
  std::string_view xla_name;  // XLA's, as FFI registrations use it; empty when none
  std::span<const DefaultOption> client_defaults;
  std::span<const CompileDefault> compile_defaults;
};

namespace detail {
// One device and synchronous execution: a run stays in the calling thread.
inline constexpr DefaultOption kCpuDefaults[] = {{"cpu_device_count", int64_t{1}},
                                                 {"asynchronous", false}};
// Device memory taken as programs need it, not most of it at once.
inline constexpr DefaultOption kGpuDefaults[] = {{"preallocate", false}};

// Loops vectorized 128 bits wide where a program computes an arctangent, for the numbers
// jax.jit gives. The CPU plugin's math library (XLA's C++ intrinsics, linked into each
// kernel as bitcode; atan is the one its kernels call) was built for baseline x86-64,
// whose calling convention passes a 256- or 512-bit vector in memory, while the kernels
// pass vectors in registers: at XLA's default of 256 bits, jnp.arctan of 64 or more
// elements returned other elements' values. jaxlib's build (AVX) goes wrong the same way
// at 512 bits. A 128-bit vector is passed alike on both sides. XLA reaches atan only from
// atan2 (an arctangent is atan2(x, 1)), so other programs keep 256 bits: at 128, 2 * x + 1
// on 4 MiB took 1.13x as long (benchmarks/vector_width.py).
inline constexpr CompileDefault kCpuCompileDefaults[] = {
    {"xla_cpu_prefer_vector_width", "128", "atan2"}};
}  // namespace detail

/// Every platform, in the order installed plugins are preferred when nothing else decides.
inline constexpr std::array<Platform, 4> kPlatforms = {{
    {"cpu", "Host", detail::kCpuDefaults, detail::kCpuCompileDefaults},
    {"cuda", "CUDA", detail::kGpuDefaults, {}},
    {"rocm", "ROCM", detail::kGpuDefaults, {}},
    {"tpu", "", {}, {}},
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
