// cyxla's client options for each platform's plugin (the table of runtime/platforms.hpp,
// which Python's cyxla.initialize reads too): a runtime that C opens is then the one
// Python would open, and the two share disk cache entries, whose keys hold the options.
#pragma once

#include <string_view>
#include <vector>

#include "pjrt/plugin.hpp"

namespace cyxla {

/// `given` followed by the defaults of `platform` ("cpu", "cuda", or an alias such as
/// "host") that it does not name: an option the caller names replaces the default of
/// that name. A platform cyxla does not know has no defaults.
std::vector<pjrt::NamedValue> with_default_options(std::string_view platform,
                                                   std::vector<pjrt::NamedValue> given);

}  // namespace cyxla
