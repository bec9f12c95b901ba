#include "runtime/client_options.hpp"

#include <algorithm>
#include <utility>

namespace cyxla {

std::vector<pjrt::NamedValue> with_default_options(std::string_view platform,
                                                   std::vector<pjrt::NamedValue> given) {
  std::vector<pjrt::NamedValue> defaults;
  // The names cyxla uses, and the older ones some plugins report ("host", "gpu").
  if (platform == "cpu" || platform == "host") {
    // One device and synchronous execution: a run stays in the calling thread.
    defaults = {{"cpu_device_count", int64_t{1}}, {"asynchronous", false}};
  } else if (platform == "cuda" || platform == "gpu" || platform == "rocm") {
    defaults = {{"preallocate", false}};  // take device memory as needed, not 75% at once
  }
  const size_t named = given.size();
  for (pjrt::NamedValue& option : defaults) {
    const auto same = [&](const pjrt::NamedValue& o) { return o.name == option.name; };
    if (std::none_of(given.begin(), given.begin() + static_cast<std::ptrdiff_t>(named), same)) {
      given.push_back(std::move(option));
    }
  }
  return given;
}

}  // namespace cyxla
