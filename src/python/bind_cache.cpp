// The store as Python calls it: paths cross as file-system bytes, headers as JSON text,
// a call's warnings become warnings.warn("cyxla cache: ...") once the call is over, and
// the store's exceptions become the classes that cyxla._cache.store exports.
#include "python/cache.hpp"
#include "python/bindings.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>
#include <string>
#include <utility>

#include "cache/plugin_record.hpp"
#include "cache/store.hpp"
#include "common/utf8.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cyxla::python {

nb::str path_text(const std::filesystem::path& path) {
  const std::string& bytes = path.native();
  return nb::steal<nb::str>(PyUnicode_DecodeFSDefaultAndSize(
      bytes.data(), static_cast<Py_ssize_t>(bytes.size())));
}

namespace {

namespace fs = std::filesystem;
using cache::Warnings;

/// A message, whatever bytes a hostile entry put in it.
nb::str message_text(std::string_view text) {
  const std::string repaired = with_bytes_escaped(text);
  return nb::steal<nb::str>(
      PyUnicode_FromStringAndSize(repaired.data(), static_cast<Py_ssize_t>(repaired.size())));
}

/// The exception classes, made once; cyxla._cache.store exports them under these names.
struct Classes {
  nb::handle refused, damaged, too_large;
};
Classes classes;

nb::handle new_class(const char* name, const char* doc) {
  return PyErr_NewExceptionWithDoc(name, doc, PyExc_RuntimeError, nullptr);
}

void raise(nb::handle cls, const std::exception& error) {
  PyErr_SetObject(cls.ptr(), message_text(error.what()).ptr());
}

/// `call(&warnings)`, then its warnings given, whether it returned or threw. The GIL stays
/// held: the store reads the environment, which another thread's os.environ may be
/// changing (getenv is not safe against setenv).
template <class Call>
auto warning(Call&& call) {
  Warnings warnings;
  std::optional<decltype(call(&warnings))> result;
  try {
    result.emplace(call(&warnings));
  } catch (...) {
    give_cache_warnings(warnings);  // a warning turned into an error replaces the exception
    throw;
  }
  give_cache_warnings(warnings);
  return std::move(*result);
}

fs::path path_of(const nb::bytes& path) { return fs::path(std::string(path.c_str(), path.size())); }

cache::Platform platform_of(const std::optional<std::string>& name) {
  if (!name) return cache::host_platform();
  if (*name == "darwin") return cache::Platform::macos;
  if (*name == "win32") return cache::Platform::windows;
  return cache::Platform::unix_like;
}

json::Object header_of(std::string_view text) {
  std::optional<json::Object> header = cache::parse_header(text);
  if (!header) {
    throw std::invalid_argument("an entry's header must be a JSON object of plain values, nested "
                                "at most " + std::to_string(cache::kHeaderDepth) + " deep");
  }
  return std::move(*header);
}

}  // namespace

void give_cache_warnings(const Warnings& warnings) {
  if (warnings.empty()) return;
  nb::object warn = nb::module_::import_("warnings").attr("warn");
  for (const std::string& text : warnings) {
    // stacklevel 2: the caller of the Python function that called the binding.
    warn(message_text("cyxla cache: " + text), nb::handle(PyExc_UserWarning), "stacklevel"_a = 2);
  }
}

void bind_cache(nb::module_& module) {
  nb::module_ m = module.def_submodule("_cache", "The disk cache's store (src/cache/).");
  classes.refused = new_class("cyxla._cache.store.CacheRefusedError",
                              "The cache directory is unsafe or unusable, so the cache is off "
                              "for this call.");
  classes.damaged = new_class("cyxla._cache.store.EntryError",
                              "An entry is truncated, corrupted, foreign or unsafe; it is "
                              "ignored and replaced.");
  classes.too_large = new_class("cyxla._cache.store.EntryTooLargeError",
                                "An entry alone is larger than the cache's size bound, so it "
                                "is not stored.");
  m.attr("CacheRefusedError") = classes.refused;
  m.attr("EntryError") = classes.damaged;
  m.attr("EntryTooLargeError") = classes.too_large;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const cache::Refused& e) {
      raise(classes.refused, e);
    } catch (const cache::Damaged& e) {
      raise(classes.damaged, e);
    } catch (const cache::TooLarge& e) {
      raise(classes.too_large, e);
    } catch (const cache::WriteFailed& e) {
      nb::object error = nb::handle(PyExc_OSError)(e.code().value(), message_text(e.what()));
      PyErr_SetObject(PyExc_OSError, error.ptr());
    }
  });

  m.attr("FORMAT_VERSION") = cache::kFormatVersion;
  m.attr("DIRECTORY_VARIABLE") = cache::kDirectoryVariable;
  m.attr("MAX_BYTES_VARIABLE") = cache::kMaxBytesVariable;
  m.attr("DEFAULT_MAX_BYTES") = cache::kDefaultMaxBytes;
  const std::string_view version = cache::cyxla_version();
  m.attr("CYXLA_VERSION") = nb::str(version.data(), version.size());
  nb::list kinds;
  for (const std::string_view kind : cache::kKinds) kinds.append(nb::str(kind.data(), kind.size()));
  m.attr("KINDS") = nb::tuple(kinds);

  m.def(
      "configured_directory",
      [](const std::optional<std::string>& platform) -> nb::object {
        const cache::Platform chosen = platform_of(platform);
        std::optional<fs::path> directory =
            warning([&](Warnings* w) { return cache::configured_directory(chosen, w); });
        return directory ? nb::object(path_text(*directory)) : nb::none();
      },
      "platform"_a = nb::none(),
      "The cache directory, or None when it is off; `platform` (a sys.platform value) "
      "chooses whose default applies.");
  m.def(
      "max_bytes", [] { return warning([](Warnings* w) { return cache::max_bytes(w); }); },
      "The cache's size bound.");
  m.def(
      "open_store",
      [](const std::string& kind, bool create) -> nb::object {
        std::optional<fs::path> directory =
            warning([&](Warnings* w) { return cache::open_store(kind, create, w); });
        return directory ? nb::object(path_text(*directory)) : nb::none();
      },
      "kind"_a, "create"_a, "The checked directory of `kind`'s entries, or None.");
  m.def(
      "read",
      [](const std::string& kind, const std::string& key) -> nb::object {
        std::optional<cache::Entry> entry =
            warning([&](Warnings* w) { return cache::read(kind, key, w); });
        if (!entry) return nb::none();
        return nb::make_tuple(path_text(entry->path), json::dump(entry->header),
                              nb::bytes(entry->payload.data(), entry->payload.size()));
      },
      "kind"_a, "key"_a, "The checked entry of `key` as (path, header JSON, payload), or None.");
  m.def(
      "write",
      [](const std::string& kind, const std::string& key, const std::string& header,
         nb::bytes payload) -> nb::object {
        json::Object fields = header_of(header);
        const std::string_view bytes(payload.c_str(), payload.size());
        std::optional<fs::path> path = warning(
            [&](Warnings* w) { return cache::write(kind, key, std::move(fields), bytes, w); });
        return path ? nb::object(path_text(*path)) : nb::none();
      },
      "kind"_a, "key"_a, "header"_a, "payload"_a,
      "Stores an entry whose header holds the JSON object `header`; its path, or None.");
  m.def(
      "_read_plugin_record",
      [](const std::string& header, const std::string& path, int64_t size, int64_t mtime_ns) {
        const std::optional<json::Object> fields = cache::parse_header(header);
        if (!fields) throw cache::Damaged("the plugin record's header is no JSON object");
        return json::dump(
            cache::plugin_record(cache::read_plugin_record(*fields, {path, size, mtime_ns})));
      },
      "header"_a, "path"_a, "size"_a, "mtime_ns"_a,
      "The record a plugin record's header JSON holds for the library (path, size, "
      "mtime_ns), written back as a record's header JSON; EntryError for anything else "
      "(fuzz/plugin_record.cpp's reader, for its corpus).");
  m.def(
      "entries",
      [] {
        std::vector<cache::Listing> listed =
            warning([](Warnings* w) { return cache::entries(w); });
        nb::list out;
        for (const cache::Listing& item : listed) {
          out.append(nb::make_tuple(nb::str(item.kind.data(), item.kind.size()),
                                    path_text(item.path), item.size, item.last_used));
        }
        return out;
      },
      "Every entry and temporary file as (kind, path, size, last used).");
  m.def(
      "peek",
      [](nb::bytes path) -> std::optional<std::string> {
        std::optional<json::Object> header = cache::peek(path_of(path));
        if (!header) return std::nullopt;
        return json::dump(*header);
      },
      "path"_a, "The unchecked header JSON of the file at `path`, or None.");
  m.def(
      "clear",
      [](bool warn_of_failures) {
        cache::Cleared cleared = warning([&](Warnings* w) {
          Warnings ignored;
          return cache::clear(warn_of_failures ? w : &ignored);
        });
        nb::list failures;
        for (const auto& [path, error] : cleared.failures) {
          failures.append(nb::make_tuple(path_text(path), error.value()));
        }
        return nb::make_tuple(cleared.removed, cleared.freed, failures);
      },
      "warn_of_failures"_a,
      "Removes every entry and temporary file: (removed, bytes freed, [(path, errno)]).");
}

}  // namespace cyxla::python
