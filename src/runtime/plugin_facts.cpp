// Identifying a plugin library on disk.
#include "runtime/plugin_facts.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <system_error>

namespace cyxla {

std::optional<LibraryIdentity> identify_library(const std::string& path) {
  std::error_code error;
  const std::string canonical = std::filesystem::canonical(path, error).string();
  struct stat info{};
  if (error || ::stat(canonical.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
    return std::nullopt;
  }
  const int64_t mtime_ns =
      static_cast<int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
  return LibraryIdentity{canonical, static_cast<int64_t>(info.st_size), mtime_ns};
}

}  // namespace cyxla
