// The list of host symbols: what XLA's CPU kernels call outside their own code (libm's
// functions as LLVM lowers math intrinsics, memory intrinsics, and compiler-rt's
// conversions and complex arithmetic), and that libc, libm or libgcc provide.
#include "compiled/host_symbols.hpp"

#include <algorithm>
#include <array>

namespace cyxla::compiled {
namespace {

constexpr auto kHostSymbols = std::to_array<std::string_view>({
    // compiler-rt / libgcc: half and bfloat16 conversions, powi, complex products.
    "__divdc3", "__divsc3", "__extendhfsf2", "__gnu_f2h_ieee", "__gnu_h2f_ieee",
    "__muldc3", "__mulsc3", "__powidf2", "__powisf2", "__truncdfbf2", "__truncdfhf2",
    "__truncsfbf2", "__truncsfhf2",
    // libm, double and float.
    "acos", "acosf", "acosh", "acoshf", "asin", "asinf", "asinh", "asinhf", "atan", "atan2",
    "atan2f", "atanf", "atanh", "atanhf", "cbrt", "cbrtf", "ceil", "ceilf", "copysign",
    "copysignf", "cos", "cosf", "cosh", "coshf", "erf", "erfc", "erfcf", "erff", "exp",
    "exp10", "exp10f", "exp2", "exp2f", "expf", "expm1", "expm1f", "fabs", "fabsf", "floor",
    "floorf", "fma", "fmaf", "fmax", "fmaxf", "fmin", "fminf", "fmod", "fmodf", "frexp",
    "frexpf", "hypot", "hypotf", "ldexp", "ldexpf", "lgamma", "lgammaf", "log", "log10",
    "log10f", "log1p", "log1pf", "log2", "log2f", "logf",
    // libc's memory functions, which LLVM emits for large copies and fills.
    "memcmp", "memcpy", "memmove", "memset",
    "modf", "modff", "nearbyint", "nearbyintf", "nextafter", "nextafterf", "pow", "powf",
    "remainder", "remainderf", "rint", "rintf", "round", "roundeven", "roundevenf", "roundf",
    "sin", "sincos", "sincosf", "sinf", "sinh", "sinhf", "sqrt", "sqrtf", "tan", "tanf",
    "tanh", "tanhf", "tgamma", "tgammaf", "trunc", "truncf",
});

static_assert(std::ranges::is_sorted(kHostSymbols), "is_host_symbol searches the list");

}  // namespace

std::span<const std::string_view> host_symbols() noexcept { return kHostSymbols; }

bool is_host_symbol(std::string_view name) noexcept {
  return std::binary_search(kHostSymbols.begin(), kHostSymbols.end(), name);
}

}  // namespace cyxla::compiled
