// The C API of a process without Python (ABI 2): the process's runtime, program files,
// custom-call handlers. Every function is noexcept and reports through cyxla_Error.
#pragma once

#include <cstdint>

#include "cyxla/cyxla.h"

namespace cyxla::abi {

cyxla_Status open_runtime(const cyxla_RuntimeOptions* options, cyxla_Error* error) noexcept;
void close_runtime() noexcept;
cyxla_Status load_program(const char* path, uint64_t* handle, cyxla_Error* error) noexcept;
void release_program(uint64_t handle) noexcept;
cyxla_Status register_ffi_handler(const char* target, void* handler, const char* platform,
                                  uint32_t traits, cyxla_Error* error) noexcept;

}  // namespace cyxla::abi
