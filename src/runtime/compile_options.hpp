// cyxla's compile options for each platform's programs (the table of runtime/platforms.hpp,
// which `python -m cyxla info` shows): every program a runtime compiles gets them, whichever
// door it came through, and the disk cache's key holds them.
#pragma once

#include <string>
#include <string_view>

namespace cyxla {

/// `compile_options` (a serialized xla.CompileOptionsProto) with the compile defaults of
/// `platform` ("cpu", "cuda", or an alias such as "host") that apply to the program
/// `code` (its StableHLO, bytecode or text) added as option overrides that come first, so
/// that an override of the same name in `compile_options` replaces them (a map's last
/// entry wins when protobuf parses it). Without such defaults, `compile_options` unchanged.
std::string with_default_compile_options(std::string_view platform, std::string_view code,
                                         std::string_view compile_options);

}  // namespace cyxla
