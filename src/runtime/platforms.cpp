// Looking names up in the table of platforms.
#include "runtime/platforms.hpp"

#include <algorithm>

namespace cyxla {

std::string normalize_platform(std::string_view name) {
  const auto blank = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  while (!name.empty() && blank(name.front())) name.remove_prefix(1);
  while (!name.empty() && blank(name.back())) name.remove_suffix(1);
  std::string lower(name);
  std::ranges::transform(lower, lower.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  for (const auto& [alias, platform] : kPlatformAliases) {
    if (lower == alias) return std::string(platform);
  }
  return lower;
}

const Platform* find_platform(std::string_view name) noexcept {
  const auto found = std::ranges::find(kPlatforms, name, &Platform::name);
  return found != kPlatforms.end() ? &*found : nullptr;
}

}  // namespace cyxla
