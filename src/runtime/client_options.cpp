#include "runtime/client_options.hpp"

#include <algorithm>
#include <utility>

#include "runtime/platforms.hpp"

namespace cyxla {

std::vector<pjrt::NamedValue> with_default_options(std::string_view platform,
                                                   std::vector<pjrt::NamedValue> given) {
  const Platform* known = find_platform(normalize_platform(platform));
  if (known == nullptr) return given;
  const size_t named = given.size();
  for (const DefaultOption& option : known->client_defaults) {
    const auto same = [&](const pjrt::NamedValue& o) { return o.name == option.name; };
    if (std::none_of(given.begin(), given.begin() + static_cast<std::ptrdiff_t>(named), same)) {
      given.push_back({std::string(option.name),
                       std::visit([](auto v) { return pjrt::NamedValue::Value(v); }, option.value)});
    }
  }
  return given;
}

}  // namespace cyxla
