// The store's directory resolution, entry encoding and checks, atomic writes and
// eviction, each step as store.py takes it.
#include "program/disk_cache.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <system_error>
#include <vector>

#include "program/sha256.hpp"

#ifndef CYXLA_VERSION_TEXT
#error "CYXLA_VERSION_TEXT (cyxla.__version__) comes from CMakeLists.txt"
#endif

namespace cyxla::program::disk_cache {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kMagic("CYXLA\0CE", 8);
constexpr size_t kPrefixSize = 8 + 4 + 4 + 32;  // magic, version, header length, SHA-256
constexpr std::string_view kSuffix = ".entry";
constexpr std::string_view kTemporaryPrefix = ".tmp-";
/// A temporary file this old was left by a process that died while writing it.
constexpr double kStaleTemporarySeconds = 3600.0;
constexpr int64_t kDefaultMaxBytes = int64_t{1} << 30;
/// Every kind of entry (Python's KINDS): eviction weighs them all.
constexpr std::array<std::string_view, 4> kKinds = {"executables", "programs", "probes",
                                                    "scans"};
std::string errno_text(int error) { return std::generic_category().message(error); }

/// The home directory of `user` ("" for this one), as os.path.expanduser finds it.
std::optional<std::string> home_of(const std::string& user) {
  if (user.empty()) {
    if (const char* home = std::getenv("HOME")) return std::string(home);
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

/// Path(text).expanduser().absolute().
fs::path expand(const std::string& text) {
  std::string expanded = text;
  if (!text.empty() && text[0] == '~') {
    const size_t slash = text.find('/');
    const std::string user = text.substr(1, slash == std::string::npos ? slash : slash - 1);
    std::optional<std::string> home = home_of(user);
    if (!home) throw Refused("cannot resolve the cache directory (CYXLA_CACHE_DIR=" + text + ")");
    expanded = *home + (slash == std::string::npos ? "" : text.substr(slash));
  }
  // Path drops a trailing slash: the root's parent is then the directory above it.
  while (expanded.size() > 1 && expanded.back() == '/') expanded.pop_back();
  return fs::absolute(expanded);
}

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

/// Why `info` may not be trusted: someone else owns it or others may write it.
std::optional<std::string> unsafe(const struct stat& info, std::string_view what,
                                  const fs::path& path) {
  const uid_t user = ::geteuid();
  if (info.st_uid != user) {
    return std::string(what) + " " + path.string() + " is owned by user " +
           std::to_string(info.st_uid) + ", not by this user (" + std::to_string(user) + ")";
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return std::string(what) + " " + path.string() + " can be written by other users";
  }
  return std::nullopt;
}

void make_private_directory(const fs::path& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    throw Refused("cannot make the cache directory " + path.string() + ": " + errno_text(errno));
  }
}

struct stat stat_of(const fs::path& path, bool follow) {
  struct stat info{};
  if ((follow ? ::stat(path.c_str(), &info) : ::lstat(path.c_str(), &info)) != 0) {
    throw Refused("cannot use the cache directory " + path.string() + ": " + errno_text(errno));
  }
  return info;
}

/// Whether `path` names a directory, following links (Path.is_dir).
bool names_a_directory(const fs::path& path) {
  struct stat info{};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

/// The checked directory of `kind`'s entries (store.py's open_store).
std::optional<fs::path> open_store(std::string_view kind, bool create) {
  const std::optional<fs::path> root = configured_directory();
  if (!root) return std::nullopt;
  const fs::path directory = *root / kind;
  if (create) {
    std::error_code error;
    fs::create_directories(root->parent_path(), error);
    if (error) {
      throw Refused("cannot use the cache directory " + root->string() + ": " + error.message());
    }
    make_private_directory(*root);
  } else if (!names_a_directory(directory)) {
    return std::nullopt;
  }
  if (auto problem = unsafe(stat_of(*root, true), "the cache directory", *root)) {
    throw Refused(*problem);
  }
  if (create) make_private_directory(directory);
  // lstat: the kind's directory must be a real directory, not a link elsewhere.
  const struct stat info = stat_of(directory, false);
  if (!S_ISDIR(info.st_mode)) throw Refused(directory.string() + " is not a directory");
  if (auto problem = unsafe(info, "the cache directory", directory)) throw Refused(*problem);
  return directory;
}

fs::path entry_path(const fs::path& directory, std::string_view kind, std::string_view key) {
  std::string name(kind);
  name += '\0';
  name += key;
  return directory / (sha256_hex(name) + std::string(kSuffix));
}

/// store.py's binding: a digest of kind, key and payload, kept in the checksummed header.
std::string binding(std::string_view kind, std::string_view key, std::string_view payload) {
  Sha256 digest;
  digest.update(kind).update(std::string_view("\0", 1)).update(key).update(
      std::string_view("\0", 1));
  return digest.update(payload).hexdigest();
}

void put_u32(std::string& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>(value >> (8 * i));
}

uint32_t get_u32(std::string_view bytes) noexcept {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value |= uint32_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  return value;
}

std::string encode(const json::Object& header, std::string_view payload) {
  const std::string header_text = json::dump(header);
  if (header_text.size() > std::numeric_limits<uint32_t>::max()) {
    throw std::runtime_error("the entry's header is too long");
  }
  Sha256 digest;
  const std::array<uint8_t, 32> sum = digest.update(header_text).update(payload).digest();
  std::string out(kMagic);
  put_u32(out, kFormatVersion);
  put_u32(out, static_cast<uint32_t>(header_text.size()));
  out.append(reinterpret_cast<const char*>(sum.data()), sum.size());
  out += header_text;
  out += payload;
  return out;
}

/// Checks `data` read from `path` and splits it (store.py's _decode, in its order).
Entry decode(const fs::path& path, std::string&& data, std::string_view kind,
             std::string_view key) {
  const std::string where = path.string();
  if (data.size() < kPrefixSize) throw Damaged(where + " is truncated (no complete prefix)");
  const std::string_view bytes(data);
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    throw Damaged(where + " is not a cyxla cache entry (bad magic number)");
  }
  if (get_u32(bytes.substr(8)) != kFormatVersion) {
    throw Damaged(where + " was written in another cache format");
  }
  const size_t header_length = get_u32(bytes.substr(12));
  const std::string_view body = bytes.substr(kPrefixSize);
  if (header_length > body.size()) {
    throw Damaged(where + " is truncated (its header is incomplete)");
  }
  const std::array<uint8_t, 32> sum = Sha256().update(body).digest();
  if (std::memcmp(sum.data(), bytes.data() + 16, sum.size()) != 0) {
    throw Damaged(where + " is corrupted or truncated (its SHA-256 does not match)");
  }
  std::optional<json::Value> parsed = json::parse(body.substr(0, header_length));
  json::Object* header = parsed ? std::get_if<json::Object>(&parsed->data) : nullptr;
  if (header == nullptr) throw Damaged(where + " has an unreadable header");
  const std::string_view payload = body.substr(header_length);
  const auto text = [&](std::string_view field) {
    const json::Value* value = parsed->find(field);
    return value != nullptr ? value->as<std::string>() : nullptr;
  };
  const json::Value* length = parsed->find("payload_length");
  const int64_t* length_value = length != nullptr ? length->as<int64_t>() : nullptr;
  if (text("kind") == nullptr || text("key") == nullptr || text("cyxla_version") == nullptr ||
      text("binding") == nullptr || length_value == nullptr ||
      *length_value != static_cast<int64_t>(payload.size())) {
    throw Damaged(where + " has a header that does not describe its payload");
  }
  if (*text("kind") != kind || *text("key") != key) {
    throw Damaged(where + " holds the entry of another key");
  }
  if (*text("binding") != binding(kind, key, payload)) {
    throw Damaged(where + " was moved from another key (its binding does not match)");
  }
  if (*text("cyxla_version") != cyxla_version()) {
    throw Damaged(where + " was written by another version of cyxla");
  }
  const size_t payload_offset = kPrefixSize + header_length;
  data.erase(0, payload_offset);  // the payload, without a second copy of it
  return Entry{path, std::move(*header), std::move(data)};
}

/// Closes a descriptor when it goes.
class Descriptor {
 public:
  explicit Descriptor(int fd) noexcept : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const noexcept { return fd_; }
  /// Closes now, reporting the error a delayed write may show only here.
  int close() noexcept {
    const int status = ::close(fd_);
    fd_ = -1;
    return status;
  }

 private:
  int fd_;
};

/// The bytes of the regular file at `path`, or nothing if there is none; Damaged for
/// anything else, or for a file that someone else owns or may write.
/// Never waits: a pipe or device is refused from lstat before it is opened, and opened
/// non-blocking in case it was swapped in meanwhile; fstat then checks what was opened.
std::optional<std::string> read_regular(const fs::path& path) {
  const std::string where = path.string();
  struct stat info{};
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw Damaged("cannot open " + where + ": " + errno_text(errno));
  }
  if (S_ISLNK(info.st_mode)) {
    throw Damaged("cannot open " + where + ": a symbolic link is not followed");
  }
  if (!S_ISREG(info.st_mode)) throw Damaged(where + " is not a regular file");
  Descriptor file(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (file.get() < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw Damaged("cannot open " + where + ": " + errno_text(errno));
  }
  if (::fstat(file.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    throw Damaged(where + " is not a regular file");
  }
  if (auto problem = unsafe(info, "the entry", path)) throw Damaged(*problem);
  std::string data;
  data.reserve(static_cast<size_t>(info.st_size));
  std::array<char, 1 << 16> chunk{};
  while (true) {
    const ssize_t got = ::read(file.get(), chunk.data(), chunk.size());
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Damaged("cannot read " + where + ": " + errno_text(errno));
    }
    data.append(chunk.data(), static_cast<size_t>(got));
  }
  return data;
}

double seconds_of(const timespec& t) noexcept {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double now() noexcept {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Listed {
  fs::path path;
  int64_t size;
  double last_used;
};

/// Removes the least recently used entries of every kind until the cache fits in
/// `bound` bytes (never `keep`), and temporary files left by dead writers.
void evict(const fs::path& root, int64_t bound, const fs::path& keep) {
  std::vector<Listed> live;
  const double time = now();
  for (const std::string_view kind : kKinds) {
    std::error_code error;  // a kind without a directory, or one removed meanwhile: skipped
    for (fs::directory_iterator it(root / kind, error), end; !error && it != end;
         it.increment(error)) {
      const fs::directory_entry& item = *it;
      const std::string name = item.path().filename().string();
      const bool temporary = name.starts_with(kTemporaryPrefix);
      if (!temporary && !name.ends_with(kSuffix)) continue;
      struct stat info{};
      if (::lstat(item.path().c_str(), &info) != 0) continue;  // removed meanwhile
      const double last_used = seconds_of(info.st_mtim);
      if (temporary) {
        if (time - last_used > kStaleTemporarySeconds) ::unlink(item.path().c_str());
        continue;
      }
      live.push_back({item.path(), static_cast<int64_t>(info.st_size), last_used});
    }
  }
  int64_t total = 0;
  for (const Listed& item : live) total += item.size;
  std::ranges::stable_sort(live, {}, &Listed::last_used);
  for (const Listed& item : live) {
    if (total <= bound) break;
    if (item.path == keep) continue;
    if (::unlink(item.path.c_str()) == 0 || errno == ENOENT) total -= item.size;
  }
}

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t wrote = ::write(fd, data.data(), data.size());
    if (wrote < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("could not write the entry: " + errno_text(errno));
    }
    data.remove_prefix(static_cast<size_t>(wrote));
  }
}

}  // namespace

std::string_view cyxla_version() noexcept { return CYXLA_VERSION_TEXT; }

std::string_view strip(std::string_view text) noexcept {
  // What Python's str.strip() removes from ASCII text.
  constexpr std::string_view kWhitespace = " \t\n\r\v\f\x1c\x1d\x1e\x1f";
  const size_t first = text.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kWhitespace) - first + 1);
}

std::optional<fs::path> configured_directory() {
  const char* configured = std::getenv("CYXLA_CACHE_DIR");
  if (configured != nullptr) {
    const std::string_view value = strip(configured);
    if (value.empty() || value == "0") return std::nullopt;
    return expand(configured);
  }
  const std::string xdg = environment("XDG_CACHE_HOME");
  // The XDG spec says to ignore a relative path.
  if (!xdg.empty() && xdg[0] == '/') return fs::path(xdg) / "cyxla";
  return expand("~") / ".cache" / "cyxla";
}

int64_t max_bytes() {
  const std::string setting = environment("CYXLA_CACHE_MAX_BYTES");
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
  // Python's int(): surrounding whitespace, a sign, digits with single underscores.
  text = strip(text);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || text.front() == '_' || text.back() == '_') return kDefaultMaxBytes;
  int64_t value = 0;
  bool saturated = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '_' && text[i - 1] != '_') continue;
    if (c < '0' || c > '9') return kDefaultMaxBytes;
    const int64_t digit = c - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) saturated = true;
    if (!saturated) value = value * 10 + digit;
  }
  if (negative && (value != 0 || saturated)) return kDefaultMaxBytes;
  if (saturated || value > std::numeric_limits<int64_t>::max() / scale) {
    return std::numeric_limits<int64_t>::max();  // Python's ints do not overflow: no bound
  }
  return value * scale;
}

std::optional<Entry> read(std::string_view kind, std::string_view key) {
  const std::optional<fs::path> directory = open_store(kind, false);
  if (!directory) return std::nullopt;
  const fs::path path = entry_path(*directory, kind, key);
  std::optional<std::string> data = read_regular(path);
  if (!data) return std::nullopt;
  Entry entry = decode(path, std::move(*data), kind, key);
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // the modification time is the last use
  return entry;
}

void write(std::string_view kind, std::string_view key, json::Object header,
           std::string_view payload) {
  const std::optional<fs::path> directory = open_store(kind, true);
  if (!directory) return;
  header.insert_or_assign("kind", std::string(kind));
  header.insert_or_assign("key", std::string(key));
  header.insert_or_assign("payload_length", static_cast<int64_t>(payload.size()));
  header.insert_or_assign("binding", binding(kind, key, payload));
  header.insert_or_assign("cyxla_version", std::string(cyxla_version()));
  header.insert_or_assign("created", now());
  const std::string data = encode(header, payload);
  const int64_t bound = max_bytes();
  if (static_cast<int64_t>(data.size()) > bound) {
    throw std::runtime_error("the entry (" + std::to_string(data.size()) +
                             " bytes) is larger than the cache's size bound (" +
                             std::to_string(bound) + " bytes, CYXLA_CACHE_MAX_BYTES)");
  }
  const fs::path path = entry_path(*directory, kind, key);
  std::string temporary = (*directory / (std::string(kTemporaryPrefix) + "XXXXXX")).string();
  Descriptor file(::mkostemp(temporary.data(), O_CLOEXEC));
  if (file.get() < 0) {
    throw std::runtime_error("could not create a temporary entry: " + errno_text(errno));
  }
  try {
    write_all(file.get(), data);
    if (file.close() != 0) {
      throw std::runtime_error("could not write the entry: " + errno_text(errno));
    }
    // Atomic: a concurrent writer of the same key wins or loses whole.
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
      throw std::runtime_error("could not store the entry: " + errno_text(errno));
    }
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  evict(directory->parent_path(), bound, path);
}

}  // namespace cyxla::program::disk_cache
