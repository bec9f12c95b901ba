// cyxla._core._cache: the disk cache's store (src/cache/) for cyxla/_cache/store.py.
#pragma once

#include <nanobind/nanobind.h>

#include "cache/settings.hpp"

namespace cyxla::python {

/// Gives the warnings of a store call as warnings.warn("cyxla cache: ...", UserWarning);
/// for every binding that passes the store a cache::Warnings. Call with the GIL held,
/// after the call (also when it threw); nanobind::python_error when a warnings filter
/// turns one into an error.
void give_cache_warnings(const cache::Warnings& warnings);

/// Adds the submodule `_cache` to `module`: the store's functions, constants, exception
/// classes and test seams, with each call's warnings given as Python warnings.
void bind_cache(nanobind::module_& module);

}  // namespace cyxla::python
