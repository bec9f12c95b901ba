// cyxla's client options for each platform's plugin, which Python's plugin entries give
// too (the CREATE_OPTIONS of python/cyxla/plugins/*.py; tests/test_cache_interop.py
// keeps the two in step): a runtime that C opens is then the one Python would open, and
// the two share disk cache entries, whose keys hold the client options.
#pragma once

#include <string_view>
#include <vector>

#include "pjrt/plugin.hpp"

namespace cyxla {

/// `given` followed by the defaults of `platform` ("cpu", "cuda", ...) that it does not
/// name: an option the caller names replaces the default of that name.
std::vector<pjrt::NamedValue> with_default_options(std::string_view platform,
                                                   std::vector<pjrt::NamedValue> given);

}  // namespace cyxla
