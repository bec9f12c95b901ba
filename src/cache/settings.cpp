// The cache's place and size bound, resolved from the environment on every call (a test
// or a long-running service may change them), and the warning that refuses the cache.
#include "cache/settings.hpp"

#include <pwd.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <limits>
#include <system_error>

namespace cyxla::cache {
namespace fs = std::filesystem;
namespace {

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

/// `text` in single quotes, escaped, as the warnings show a setting.
std::string repr(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

/// The home directory of `user` ("" for this one: $HOME, else the password database).
std::optional<std::string> home_of(const std::string& user) {
  if (user.empty()) {
    if (std::optional<std::string> home = environment("HOME")) return home;
  }
  std::array<char, 4096> buffer{};
  passwd entry{};
  passwd* found = nullptr;
  const int status = user.empty()
                         ? ::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found)
                         : ::getpwnam_r(user.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (status != 0 || found == nullptr || found->pw_dir == nullptr) return std::nullopt;
  return std::string(found->pw_dir);
}

/// Thrown inside resolution, turned into a refusal that names the setting.
struct Unresolved {
  std::string why;
};

std::string home() {
  std::optional<std::string> found = home_of("");
  if (!found) throw Unresolved{"this user has no home directory"};
  return *found;
}

/// `text` with a leading `~` or `~user` replaced by that home directory, made absolute
/// against the working directory.
fs::path expand(const std::string& text) {
  std::string expanded = text;
  if (!text.empty() && text[0] == '~') {
    const size_t slash = text.find('/');
    const std::string user = text.substr(1, slash == std::string::npos ? slash : slash - 1);
    std::optional<std::string> found = home_of(user);
    if (!found) throw Unresolved{"there is no user named " + repr(user)};
    expanded = *found + (slash == std::string::npos ? "" : text.substr(slash));
  }
  // Path drops a trailing slash: the directory's parent is then the one above it.
  while (expanded.size() > 1 && expanded.back() == '/') expanded.pop_back();
  std::error_code error;
  fs::path absolute = fs::absolute(expanded, error);
  if (error) throw Unresolved{error.message()};
  return absolute;
}

fs::path default_directory(Platform platform) {
  switch (platform) {
    case Platform::windows: {
      std::string base = environment("LOCALAPPDATA").value_or("");
      if (!base.empty()) return fs::path(base) / "cyxla" / "Cache";
      std::string profile = environment("USERPROFILE").value_or("");
      return fs::path(profile.empty() ? home() : profile) / "AppData" / "Local" / "cyxla" /
             "Cache";
    }
    case Platform::macos:
      return fs::path(home()) / "Library" / "Caches" / "cyxla";
    case Platform::unix_like:
      break;
  }
  // The XDG spec says to ignore a relative path.
  const std::string xdg = environment("XDG_CACHE_HOME").value_or("");
  if (!xdg.empty() && xdg[0] == '/') return fs::path(xdg) / "cyxla";
  return fs::path(home()) / ".cache" / "cyxla";
}

/// The digits of a size: an optional sign, then digits with single underscores between
/// them (what CYXLA_CACHE_MAX_BYTES has always accepted), saturating at the largest int64; nothing when they are not a number >= 0.
std::optional<int64_t> parse_count(std::string_view text) {
  text = strip(text);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || text.front() == '_' || text.back() == '_') return std::nullopt;
  int64_t value = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '_' && text[i - 1] != '_') continue;
    if (c < '0' || c > '9') return std::nullopt;
    const int64_t digit = c - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
      value = std::numeric_limits<int64_t>::max();  // so large it bounds nothing
    } else {
      value = value * 10 + digit;
    }
  }
  if (negative && value != 0) return std::nullopt;
  return value;
}

}  // namespace

void refuse(Warnings* warnings, std::string problem) {
  // A warning as well as the error: a cache that is quietly off is a slow start.
  if (warnings != nullptr) warnings->push_back(problem + "; the cache is not used");
  throw Refused(problem);
}

Platform host_platform() noexcept {
#if defined(_WIN32)
  return Platform::windows;
#elif defined(__APPLE__)
  return Platform::macos;
#else
  return Platform::unix_like;
#endif
}

std::string_view strip(std::string_view text) noexcept {
  // ASCII whitespace, the information separators 0x1c-0x1f included.
  constexpr std::string_view kWhitespace = " \t\n\r\v\f\x1c\x1d\x1e\x1f";
  const size_t first = text.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kWhitespace) - first + 1);
}

std::optional<fs::path> configured_directory(Platform platform, Warnings* warnings) {
  const std::optional<std::string> configured = environment(kDirectoryVariable);
  if (configured) {
    const std::string_view value = strip(*configured);
    if (value.empty() || value == "0") return std::nullopt;
  }
  try {
    return configured ? expand(*configured) : default_directory(platform);
  } catch (const Unresolved& error) {
    const std::string setting =
        configured ? std::string(kDirectoryVariable) + "=" + repr(*configured) : "the default";
    refuse(warnings, "cannot resolve the cache directory (" + setting + "): " + error.why);
  }
}

std::optional<fs::path> configured_directory(Warnings* warnings) {
  return configured_directory(host_platform(), warnings);
}

int64_t max_bytes(Warnings* warnings) {
  const std::string setting = environment(kMaxBytesVariable).value_or("");
  std::string_view text = strip(setting);
  if (text.empty()) return kDefaultMaxBytes;
  int64_t scale = 1;
  switch (text.back()) {
    case 'K': case 'k': scale = int64_t{1} << 10; break;
    case 'M': case 'm': scale = int64_t{1} << 20; break;
    case 'G': case 'g': scale = int64_t{1} << 30; break;
    default: break;
  }
  if (scale > 1) text.remove_suffix(1);
  if (const std::optional<int64_t> count = parse_count(text)) {
    if (*count > std::numeric_limits<int64_t>::max() / scale) {
      return std::numeric_limits<int64_t>::max();
    }
    return *count * scale;
  }
  if (warnings != nullptr) {
    warnings->push_back(std::string(kMaxBytesVariable) + "=" + repr(strip(setting)) +
                        " is not a size such as 1073741824 or 512M; using " +
                        std::to_string(kDefaultMaxBytes) + " bytes");
  }
  return kDefaultMaxBytes;
}

}  // namespace cyxla::cache
