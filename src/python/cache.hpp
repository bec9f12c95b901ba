// cyxla._core._cache: the disk cache's store (src/cache/) for cyxla/_cache/store.py.
#pragma once

#include <nanobind/nanobind.h>

namespace cyxla::python {

/// Adds the submodule `_cache` to `module`: the store's functions, constants, exception
/// classes and test seams, with each call's warnings given as Python warnings.
void bind_cache(nanobind::module_& module);

}  // namespace cyxla::python
