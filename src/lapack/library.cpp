// Finding LAPACK at run time. The candidates, in order:
//
//   1. $CYXLA_LAPACK, a library file (or a name dlopen resolves): the one way to choose,
//      and when set the only candidate, so that a wrong path is an error, not a surprise.
//   2. The library the host prefers (prefer_library): in a Python process, the OpenBLAS
//      that SciPy carries, which jaxlib's own LAPACK handlers call, so results are the
//      same bits as jax.jit's.
//   3. A LAPACK already loaded in the process (an application that links one).
//   4. The system's, by soname: OpenBLAS, the reference LAPACK, FlexiBLAS.
//
// A candidate qualifies when it exports every routine with 32-bit integers (the LP64
// interface: "dgetrf_", or "scipy_dgetrf_" in SciPy's OpenBLAS); ILP64 builds (symbols
// ending in "64_") are not used.
#include "lapack/library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>

namespace cyxla::lapack {
namespace {

/// The system's LAPACK libraries, tried last: Debian's libopenblas0 and liblapack3 (and
/// their -dev packages' unversioned names), FlexiBLAS.
constexpr std::string_view kSystemNames[] = {
    "libopenblas.so.0", "liblapack.so.3", "libflexiblas.so.3", "libopenblas.so", "liblapack.so",
};
/// Parts of a loaded library's file name that mark a LAPACK worth trying.
constexpr std::string_view kLoadedMarks[] = {"openblas", "lapack", "flexiblas", "mkl_rt"};
constexpr std::string_view kPrefixes[] = {"", "scipy_"};

std::mutex mutex;                      // guards `preferred` and the search
std::string preferred;                 // guarded by mutex
std::atomic<const Library*> found{nullptr};
std::unique_ptr<Library> kept;  // what `found` points to, once set; never freed before exit

/// The files of the libraries loaded in this process whose names look like a LAPACK.
std::vector<std::string> loaded_lapacks() {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const std::string_view path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        const std::string_view file = path.substr(path.rfind('/') + 1);
        for (const std::string_view mark : kLoadedMarks) {
          if (file.find(mark) != std::string_view::npos) {
            static_cast<std::vector<std::string>*>(out)->emplace_back(path);
            break;
          }
        }
        return 0;
      },
      &paths);
  return paths;
}

/// A handle that dlcloses unless released.
struct Handle {
  void* handle = nullptr;
  ~Handle() {
    if (handle != nullptr) dlclose(handle);
  }
};

template <typename F>
bool bind(void* handle, const std::string& prefix, std::string_view name, F*& slot,
          std::string& missing) {
  const std::string symbol = prefix + std::string(name) + "_";
  slot = reinterpret_cast<F*>(dlsym(handle, symbol.c_str()));
  if (slot == nullptr && missing.empty()) missing = symbol;
  return slot != nullptr;
}

template <typename T, typename R>
void bind_routines(void* handle, const std::string& prefix, char letter, Routines<T, R>& r,
                   std::string& missing) {
  const bool complex = letter == 'c' || letter == 'z';
  const std::string l(1, letter);
  bind(handle, prefix, l + "getrf", r.getrf, missing);
  bind(handle, prefix, l + "potrf", r.potrf, missing);
  bind(handle, prefix, l + "geqrf", r.geqrf, missing);
  bind(handle, prefix, l + (complex ? "ungqr" : "orgqr"), r.orgqr, missing);
  bind(handle, prefix, l + "trsm", r.trsm, missing);
  bind(handle, prefix, l + "gehrd", r.gehrd, missing);
  bind(handle, prefix, l + (complex ? "hetrd" : "sytrd"), r.sytrd, missing);
  bind(handle, prefix, l + "gtsv", r.gtsv, missing);
  bind(handle, prefix, l + (complex ? "unmqr" : "ormqr"), r.ormqr, missing);
}

/// The library at `name` if it has every routine; else null, and `why` says what failed.
std::unique_ptr<Library> open(const std::string& name, std::string& why) {
  Handle handle{dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)};
  if (handle.handle == nullptr) {
    const char* error = dlerror();
    why = error != nullptr ? error : "dlopen failed";
    return nullptr;
  }
  const auto prefix = std::ranges::find_if(kPrefixes, [&](std::string_view p) {
    return dlsym(handle.handle, (std::string(p) + "dgetrf_").c_str()) != nullptr;
  });
  if (prefix == std::end(kPrefixes)) {
    why = "it has no dgetrf_ (nor scipy_dgetrf_): not a LAPACK with 32-bit integers";
    return nullptr;
  }
  auto library = std::make_unique<Library>();
  library->prefix = std::string(*prefix);
  std::string missing;
  bind_routines(handle.handle, library->prefix, 's', library->s, missing);
  bind_routines(handle.handle, library->prefix, 'd', library->d, missing);
  bind_routines(handle.handle, library->prefix, 'c', library->c, missing);
  bind_routines(handle.handle, library->prefix, 'z', library->z, missing);
  bind(handle.handle, library->prefix, "ssyevd", library->ssyevd, missing);
  bind(handle.handle, library->prefix, "dsyevd", library->dsyevd, missing);
  bind(handle.handle, library->prefix, "cheevd", library->cheevd, missing);
  bind(handle.handle, library->prefix, "zheevd", library->zheevd, missing);
  bind(handle.handle, library->prefix, "sgesdd", library->sgesdd, missing);
  bind(handle.handle, library->prefix, "dgesdd", library->dgesdd, missing);
  bind(handle.handle, library->prefix, "cgesdd", library->cgesdd, missing);
  bind(handle.handle, library->prefix, "zgesdd", library->zgesdd, missing);
  bind(handle.handle, library->prefix, "sgesvd", library->sgesvd, missing);
  bind(handle.handle, library->prefix, "dgesvd", library->dgesvd, missing);
  bind(handle.handle, library->prefix, "cgesvd", library->cgesvd, missing);
  bind(handle.handle, library->prefix, "zgesvd", library->zgesvd, missing);
  bind(handle.handle, library->prefix, "sgeqp3", library->sgeqp3, missing);
  bind(handle.handle, library->prefix, "dgeqp3", library->dgeqp3, missing);
  bind(handle.handle, library->prefix, "cgeqp3", library->cgeqp3, missing);
  bind(handle.handle, library->prefix, "zgeqp3", library->zgeqp3, missing);
  bind(handle.handle, library->prefix, "sgeev", library->sgeev, missing);
  bind(handle.handle, library->prefix, "dgeev", library->dgeev, missing);
  bind(handle.handle, library->prefix, "cgeev", library->cgeev, missing);
  bind(handle.handle, library->prefix, "zgeev", library->zgeev, missing);
  bind(handle.handle, library->prefix, "sgees", library->sgees, missing);
  bind(handle.handle, library->prefix, "dgees", library->dgees, missing);
  bind(handle.handle, library->prefix, "cgees", library->cgees, missing);
  bind(handle.handle, library->prefix, "zgees", library->zgees, missing);
  if (!missing.empty()) {
    why = "it has no " + missing;
    return nullptr;
  }
  char resolved[4096] = {};
  if (dlinfo(handle.handle, RTLD_DI_ORIGIN, resolved) == 0 && resolved[0] != '\0' &&
      name.find('/') == std::string::npos) {
    library->path = std::string(resolved) + "/" + name;
  } else {
    library->path = name;
  }
  handle.handle = nullptr;  // kept loaded for the life of the process
  return library;
}

std::vector<std::string> candidates_locked() {
  if (const char* chosen = std::getenv(std::string(kLibraryVariable).c_str());
      chosen != nullptr && *chosen != '\0') {
    return {chosen};
  }
  std::vector<std::string> names;
  if (!preferred.empty()) names.push_back(preferred);
  for (std::string& path : loaded_lapacks()) {
    if (std::ranges::find(names, path) == names.end()) names.push_back(std::move(path));
  }
  for (const std::string_view name : kSystemNames) names.emplace_back(name);
  return names;
}

const Library* search(std::string* why) {
  std::lock_guard lock(mutex);
  if (const Library* done = found.load(std::memory_order_acquire)) return done;
  const std::vector<std::string> names = candidates_locked();
  const bool chosen = std::getenv(std::string(kLibraryVariable).c_str()) != nullptr &&
                      names.size() == 1;
  std::string tried;
  for (const std::string& name : names) {
    std::string reason;
    if (std::unique_ptr<Library> library = open(name, reason)) {
      kept = std::move(library);
      found.store(kept.get(), std::memory_order_release);
      return kept.get();
    }
    tried += (tried.empty() ? "" : "; ") + name + " (" + reason + ")";
  }
  if (why != nullptr) {
    *why = chosen
               ? "the LAPACK library that " + std::string(kLibraryVariable) +
                     " names cannot be used: " + tried
               : "no LAPACK library found: tried " + tried +
                     ". Install one (Debian/Ubuntu: apt-get install libopenblas0 or "
                     "liblapack3; or pip install scipy-openblas32 and set " +
                     std::string(kLibraryVariable) +
                     " to its libscipy_openblas.so, in the folder that python -c \"import "
                     "scipy_openblas32 as s; print(s.get_lib_dir())\" names), or set " +
                     std::string(kLibraryVariable) + " to a LAPACK library file";
  }
  return nullptr;
}

}  // namespace

const Library* library(std::string* why) noexcept {
  if (const Library* done = found.load(std::memory_order_acquire)) return done;
  try {
    return search(why);
  } catch (...) {  // out of memory while listing candidates
    if (why != nullptr) why->clear();
    return nullptr;
  }
}

void prefer_library(std::string path) {
  std::lock_guard lock(mutex);
  preferred = std::move(path);
}

std::vector<std::string> candidates() {
  std::lock_guard lock(mutex);
  return candidates_locked();
}

}  // namespace cyxla::lapack
