// The disk cache moved to src/cache/ (namespace cyxla::cache); this name stays for the
// code that still includes it, until that code includes cache/store.hpp.
#pragma once

#include "cache/store.hpp"

namespace cyxla::program {
namespace disk_cache = ::cyxla::cache;
}  // namespace cyxla::program
