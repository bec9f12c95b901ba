// Cache keys (FNV-1a, 64 bits, over everything that decides the compiled code) and
// entry files.
#include "program/executable_cache.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string_view>
#include <system_error>

#include "runtime/runtime.hpp"

namespace cyxla::program {
namespace {

/// Changes when the entries' meaning changes.
constexpr std::string_view kCacheFormat = "cyxla-native-executable-1";

class Hash {
 public:
  Hash& add(std::string_view bytes) noexcept {
    // The length first, so that ("ab", "c") and ("a", "bc") differ.
    const uint64_t size = bytes.size();
    for (size_t i = 0; i < sizeof size; ++i) mix(static_cast<unsigned char>(size >> (8 * i)));
    for (const char c : bytes) mix(static_cast<unsigned char>(c));
    return *this;
  }
  std::string hex() const {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out(16, '0');
    for (size_t i = 0; i < 16; ++i) out[15 - i] = kDigits[(state_ >> (4 * i)) & 0xFu];
    return out;
  }

 private:
  void mix(unsigned char byte) noexcept { state_ = (state_ ^ byte) * 0x100000001b3ULL; }
  uint64_t state_ = 0xcbf29ce484222325ULL;
};

std::optional<std::filesystem::path> directory() {
  if (const char* configured = std::getenv("CYXLA_CACHE_DIR")) {
    const std::string_view value(configured);
    if (value.empty() || value == "0") return std::nullopt;
    return std::filesystem::path(value) / "native";
  }
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::filesystem::path(xdg) / "cyxla" / "native";
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') return std::nullopt;
  return std::filesystem::path(home) / ".cache" / "cyxla" / "native";
}

}  // namespace

std::optional<std::filesystem::path> cache_entry(const ProgramFile& file, const Runtime& runtime) {
  std::optional<std::filesystem::path> where = directory();
  if (!where) return std::nullopt;
  Hash hash;
  hash.add(kCacheFormat).add(file.stablehlo).add(file.compile_options);
  for (const TensorSpec& spec : file.inputs) hash.add(spec.to_string());
  // The plugin: its library (a reinstalled one differs in size or time), its version,
  // the client's platform version.
  const std::string& library = runtime.plugin().path();
  std::error_code error;
  const auto size = std::filesystem::file_size(library, error);
  const auto time = std::filesystem::last_write_time(library, error).time_since_epoch().count();
  hash.add(library).add(std::to_string(size)).add(std::to_string(time));
  hash.add(std::to_string(runtime.plugin().version().major) + "." +
           std::to_string(runtime.plugin().version().minor));
  hash.add(runtime.platform()).add(runtime.platform_version());
  return *where / (hash.hex() + ".executable");
}

std::string read_entry(const std::filesystem::path& entry) {
  std::ifstream in(entry, std::ios::binary);
  if (!in) return {};
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return in.bad() ? std::string() : bytes;
}

void store_entry(const std::filesystem::path& entry, const std::string& bytes) noexcept {
  try {
    std::error_code error;
    std::filesystem::create_directories(entry.parent_path(), error);
    std::filesystem::path partial = entry;
    partial += ".partial-" + std::to_string(::getpid());
    {
      std::ofstream out(partial, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!out) {
        std::filesystem::remove(partial, error);
        return;
      }
    }
    std::filesystem::rename(partial, entry, error);
    if (error) std::filesystem::remove(partial, error);
  } catch (...) {  // GCOVR_EXCL_LINE: out of memory while building a path
  }
}

}  // namespace cyxla::program
