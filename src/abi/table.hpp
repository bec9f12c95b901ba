// The function table of cyxla's C API (include/cyxla/cyxla.h), exported as a capsule.
#pragma once

#include "cyxla/cyxla.h"

namespace cyxla::abi {

/// The one table of this runtime; lives as long as the process.
const cyxla_Api& table() noexcept;

}  // namespace cyxla::abi
