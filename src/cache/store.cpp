// The store's file operations: checked directories, reads that neither follow links nor
// wait, atomic writes, eviction, listing and clearing.
#include "cache/store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <utility>

#ifndef CYXLA_VERSION_TEXT
#error "CYXLA_VERSION_TEXT (cyxla.__version__) comes from CMakeLists.txt"
#endif

namespace cyxla::cache {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kSuffix = ".entry";
constexpr std::string_view kTemporaryPrefix = ".tmp-";
/// A temporary file this old was left by a process that died while writing it.
constexpr double kStaleTemporarySeconds = 3600.0;

std::string errno_text(int error) { return std::generic_category().message(error); }

#ifdef CYXLA_TESTING
void call_hook(std::string_view stage, const fs::path& path, int fd) {
  if (const auto& hook = testing::seams().hook) hook(stage, path, fd);
}

uid_t effective_user() noexcept {
  const std::optional<uint32_t> user = testing::seams().user;
  return user ? static_cast<uid_t>(*user) : ::geteuid();
}
#else
void call_hook(std::string_view, const fs::path&, int) {}

uid_t effective_user() noexcept { return ::geteuid(); }
#endif

/// Why `info` may not be trusted: someone else owns it or others may write it.
std::optional<std::string> unsafe(const struct stat& info, std::string_view what,
                                  const fs::path& path) {
  const uid_t user = effective_user();
  if (info.st_uid != user) {
    return std::string(what) + " " + path.string() + " is owned by user " +
           std::to_string(info.st_uid) + ", not by this user (" + std::to_string(user) + ")";
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return std::string(what) + " " + path.string() + " can be written by other users";
  }
  return std::nullopt;
}

/// Closes a descriptor when it goes.
class Descriptor {
 public:
  explicit Descriptor(int fd) noexcept : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(Descriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Descriptor& operator=(Descriptor&&) = delete;
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

double seconds_of(const struct stat& info) noexcept {
#if defined(__APPLE__)
  const timespec& t = info.st_mtimespec;
#else
  const timespec& t = info.st_mtim;
#endif
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double now() noexcept {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// The regular file at `path`, open for reading, or nothing if there is none; Damaged for
/// anything else. Never waits: a pipe or device is refused from lstat before it is
/// opened, and opened non-blocking in case it was swapped in meanwhile; fstat then checks
/// what was opened.
std::optional<Descriptor> open_regular(const fs::path& path, struct stat& info) {
  const std::string where = path.string();
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw Damaged("cannot open " + where + ": " + errno_text(errno));
  }
  if (S_ISLNK(info.st_mode)) {
    throw Damaged("cannot open " + where + ": a symbolic link is not followed");
  }
  if (!S_ISREG(info.st_mode)) throw Damaged(where + " is not a regular file");
  call_hook("checked", path, -1);
  constexpr int kFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  std::optional<Descriptor> file(std::in_place, ::open(path.c_str(), kFlags));
  if (file->get() < 0) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ELOOP) {
      throw Damaged("cannot open " + where + ": a symbolic link is not followed");
    }
    throw Damaged("cannot open " + where + ": " + errno_text(errno));
  }
  call_hook("opened", path, file->get());
  if (::fstat(file->get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    throw Damaged(where + " is not a regular file");
  }
  return file;
}

/// The rest of the open file `fd` (`path`'s).
std::string read_all(int fd, const fs::path& path, size_t expected) {
  std::string data;
  try {
    data.reserve(expected);
  } catch (const std::exception&) {  // a file no cache entry could be
    throw Damaged(path.string() + " is too large to read (" + std::to_string(expected) +
                  " bytes)");
  }
  std::array<char, 1 << 16> chunk{};
  while (true) {
    const ssize_t got = ::read(fd, chunk.data(), chunk.size());
    if (got == 0) return data;
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Damaged("cannot read " + path.string() + ": " + errno_text(errno));
    }
    data.append(chunk.data(), static_cast<size_t>(got));
  }
}

void make_private_directory(const fs::path& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    throw std::system_error(errno, std::generic_category());
  }
}

struct stat stat_of(const fs::path& path, bool follow) {
  struct stat info{};
  if ((follow ? ::stat(path.c_str(), &info) : ::lstat(path.c_str(), &info)) != 0) {
    throw std::system_error(errno, std::generic_category());
  }
  return info;
}

/// Whether `path` names a directory, following links (Path.is_dir).
bool names_a_directory(const fs::path& path) {
  struct stat info{};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

/// Why the cache directory `root` or its `directory` of one kind may not be used, making
/// them first when `create`; nothing when both are safe.
std::optional<std::string> directory_problem(const fs::path& root, const fs::path& directory,
                                             bool create) {
  if (create) {
    fs::create_directories(root.parent_path());
    make_private_directory(root);
  }
  if (auto problem = unsafe(stat_of(root, true), "the cache directory", root)) return problem;
  if (create) make_private_directory(directory);
  // lstat: the kind's directory must be a real directory, not a link elsewhere.
  const struct stat info = stat_of(directory, false);
  if (!S_ISDIR(info.st_mode)) return directory.string() + " is not a directory";
  return unsafe(info, "the cache directory", directory);
}

void write_all(int fd, std::string_view data, const fs::path& path) {
  while (!data.empty()) {
    const ssize_t wrote = ::write(fd, data.data(), data.size());
    if (wrote < 0) {
      if (errno == EINTR) continue;
      throw WriteFailed(errno, std::generic_category(), "could not write " + path.string());
    }
    data.remove_prefix(static_cast<size_t>(wrote));
  }
}

/// Removes the least recently used entries of every kind until the cache fits in
/// `bound` bytes (never `keep`), and temporary files left by dead writers.
void evict(int64_t bound, const fs::path& keep) {
  std::vector<Listing> live;
  const double time = now();
  for (Listing& item : entries()) {
    if (item.path.filename().string().starts_with(kTemporaryPrefix)) {
      if (time - item.last_used > kStaleTemporarySeconds) ::unlink(item.path.c_str());
    } else {
      live.push_back(std::move(item));
    }
  }
  int64_t total = 0;
  for (const Listing& item : live) total += item.size;
  std::ranges::stable_sort(live, {}, &Listing::last_used);
  for (const Listing& item : live) {
    if (total <= bound) break;
    if (item.path == keep) continue;
    if (::unlink(item.path.c_str()) == 0 || errno == ENOENT) total -= item.size;
  }
}

}  // namespace

std::string_view cyxla_version() noexcept { return CYXLA_VERSION_TEXT; }

std::optional<fs::path> open_store(std::string_view kind, bool create, Warnings* warnings) {
  if (std::ranges::find(kKinds, kind) == kKinds.end()) {
    std::string known;
    for (const std::string_view name : kKinds) {
      known += (known.empty() ? "" : ", ") + std::string(name);
    }
    throw std::invalid_argument("unknown kind of cache entry '" + std::string(kind) +
                                "'; expected one of " + known);
  }
  const std::optional<fs::path> root = configured_directory(warnings);
  if (!root) return std::nullopt;
  const fs::path directory = *root / kind;
  if (!create && !names_a_directory(directory)) return std::nullopt;
  std::optional<std::string> problem;
  try {
    problem = directory_problem(*root, directory, create);
  } catch (const std::system_error& error) {  // filesystem_error too
    refuse(warnings, "cannot use the cache directory " + root->string() + ": " +
                         error.code().message());
  }
  if (problem) refuse(warnings, *problem);
  return directory;
}

std::optional<Entry> read(std::string_view kind, std::string_view key, Warnings* warnings) {
  const std::optional<fs::path> directory = open_store(kind, false, warnings);
  if (!directory) return std::nullopt;
  const fs::path path = *directory / file_name(kind, key);
  struct stat info{};
  std::optional<Descriptor> file = open_regular(path, info);
  if (!file) return std::nullopt;
  if (auto problem = unsafe(info, "the entry", path)) {
    if (warnings != nullptr) warnings->push_back(*problem + "; it is not loaded");
    throw Damaged(*problem);
  }
  std::string data = read_all(file->get(), path, static_cast<size_t>(info.st_size));
  file.reset();
  Entry entry = decode(path, std::move(data), kind, key, cyxla_version());
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // the modification time is the last use
  return entry;
}

std::optional<fs::path> write(std::string_view kind, std::string_view key, json::Object header,
                              std::string_view payload, Warnings* warnings) {
  const std::optional<fs::path> directory = open_store(kind, true, warnings);
  if (!directory) return std::nullopt;
  header.insert_or_assign("kind", std::string(kind));
  header.insert_or_assign("key", std::string(key));
  header.insert_or_assign("payload_length", static_cast<int64_t>(payload.size()));
  header.insert_or_assign("binding", binding(kind, key, payload));
  header.insert_or_assign("cyxla_version", std::string(cyxla_version()));
  header.insert_or_assign("created", now());
  const std::string data = encode(header, payload);
  const int64_t bound = max_bytes(warnings);
  if (static_cast<int64_t>(data.size()) > bound) {
    throw TooLarge("the " + std::string(kind.substr(0, kind.size() - 1)) + " entry (" +
                   std::to_string(data.size()) + " bytes) is larger than the cache's size bound (" +
                   std::to_string(bound) + " bytes, " + kMaxBytesVariable + ")");
  }
  const fs::path path = *directory / file_name(kind, key);
  std::string temporary = (*directory / (std::string(kTemporaryPrefix) + "XXXXXX")).string();
  Descriptor file(::mkostemp(temporary.data(), O_CLOEXEC));
  if (file.get() < 0) {
    throw WriteFailed(errno, std::generic_category(),
                      "could not create a temporary file in " + directory->string());
  }
  try {
    write_all(file.get(), data, temporary);
    if (file.close() != 0) {
      throw WriteFailed(errno, std::generic_category(), "could not write " + temporary);
    }
    // Atomic: a concurrent writer of the same key wins or loses whole.
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
      throw WriteFailed(errno, std::generic_category(),
                        "could not rename " + temporary + " to " + path.string());
    }
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  evict(bound, path);
  return path;
}

std::vector<Listing> entries(Warnings* warnings) {
  std::optional<fs::path> root;
  try {
    root = configured_directory(warnings);
  } catch (const Refused&) {  // warned
    return {};
  }
  std::vector<Listing> found;
  if (!root) return found;
  for (const std::string_view kind : kKinds) {
    std::error_code error;  // a kind without a directory, or one removed meanwhile: skipped
    for (fs::directory_iterator it(*root / kind, error), end; !error && it != end;
         it.increment(error)) {
      const fs::path& path = it->path();
      const std::string name = path.filename().string();
      if (!name.ends_with(kSuffix) && !name.starts_with(kTemporaryPrefix)) continue;
      struct stat info{};
      if (::lstat(path.c_str(), &info) != 0) continue;  // removed meanwhile
      found.push_back({kind, path, static_cast<int64_t>(info.st_size), seconds_of(info)});
    }
  }
  return found;
}

std::optional<json::Object> peek(const fs::path& path) {
  try {
    struct stat info{};
    std::optional<Descriptor> file = open_regular(path, info);
    if (!file) return std::nullopt;
    std::string prefix(kPrefixSize, '\0');
    if (::read(file->get(), prefix.data(), prefix.size()) != static_cast<ssize_t>(kPrefixSize)) {
      return std::nullopt;
    }
    const std::optional<uint32_t> length = header_length(prefix);
    // A header longer than the file is a damaged entry's.
    if (!length || *length > static_cast<uint64_t>(info.st_size)) return std::nullopt;
    std::string text(*length, '\0');
    if (::read(file->get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      return std::nullopt;
    }
    return parse_header(text);
  } catch (const Damaged&) {
    return std::nullopt;
  }
}

Cleared clear(Warnings* warnings) {
  Cleared cleared;
  const std::vector<Listing> listed = entries(warnings);
  call_hook("listed", {}, -1);
  for (const Listing& item : listed) {
    if (::unlink(item.path.c_str()) != 0) {
      if (errno == ENOENT) continue;  // removed meanwhile by another process
      const std::error_code error(errno, std::generic_category());
      if (warnings != nullptr) {
        warnings->push_back("could not remove " + item.path.string() + ": " + error.message());
      }
      cleared.failures.emplace_back(item.path, error);
      continue;
    }
    ++cleared.removed;
    cleared.freed += item.size;
  }
  return cleared;
}

#ifdef CYXLA_TESTING
namespace testing {

Seams& seams() noexcept {
  static Seams seams;
  return seams;
}

}  // namespace testing
#endif
}  // namespace cyxla::cache
