// How the C API's functions report: a status, and a message in the caller's cyxla_Error.
#pragma once

#include "cyxla/cyxla.h"

namespace cyxla::abi {

/// Records a failure in `error` (if given) without touching the heap; returns `status`.
[[gnu::cold, gnu::format(printf, 3, 4)]] cyxla_Status fail(cyxla_Error* error,
                                                           cyxla_Status status,
                                                           const char* format, ...) noexcept;

/// Clears `error` (if given); returns CYXLA_OK.
cyxla_Status succeed(cyxla_Error* error) noexcept;

/// Records the exception being handled in `error`, prefixed by `function`; called from a
/// catch block.
[[gnu::cold]] cyxla_Status fail_with_current_exception(cyxla_Error* error,
                                                       const char* function) noexcept;

}  // namespace cyxla::abi
