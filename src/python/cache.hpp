// What the bindings of the disk cache's store share (bind_cache is in bind_cache.cpp).
#pragma once

#include <nanobind/nanobind.h>

#include <filesystem>

#include "cache/settings.hpp"

namespace cyxla::python {

/// Gives the warnings of a store call as warnings.warn("cyxla cache: ...", UserWarning);
/// for every binding that passes the store a cache::Warnings. Call with the GIL held,
/// after the call (also when it threw); nanobind::python_error when a warnings filter
/// turns one into an error.
void give_cache_warnings(const cache::Warnings& warnings);

/// A path as Python's os.fsdecode gives it (bytes that are not UTF-8 as surrogates).
nanobind::str path_text(const std::filesystem::path& path);

}  // namespace cyxla::python
