// The symbols a compiled kernel may need from outside its objects that cyxla's kernel
// runner provides: libc's memory functions, libm's functions and the compiler runtime's
// helpers. The one list of them.
#pragma once

#include <span>
#include <string_view>

namespace cyxla::compiled {

/// Every symbol the kernel runner resolves for an object, sorted.
std::span<const std::string_view> host_symbols() noexcept;

/// Whether `name` is one of host_symbols().
bool is_host_symbol(std::string_view name) noexcept;

}  // namespace cyxla::compiled
