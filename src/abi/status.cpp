// The C API's reports: a status and a message, and no exception across the boundary.
#include "abi/status.hpp"

#include <cstdarg>
#include <cstdio>
#include <new>

#include "common/error.hpp"

namespace cyxla::abi {

cyxla_Status fail(cyxla_Error* error, cyxla_Status status, const char* format, ...) noexcept {
  if (error != nullptr) {
    error->status = status;
    va_list args;
    va_start(args, format);
    std::vsnprintf(error->message, sizeof(error->message), format, args);
    va_end(args);
  }
  return status;
}

cyxla_Status succeed(cyxla_Error* error) noexcept {
  if (error != nullptr) {
    error->status = CYXLA_OK;
    error->message[0] = '\0';
  }
  return CYXLA_OK;
}

cyxla_Status fail_with_current_exception(cyxla_Error* error, const char* function) noexcept {
  try {
    throw;
  } catch (const Error& e) {
    const ErrorKind kind = e.kind();
    const cyxla_Status status = kind == ErrorKind::InvalidArgument ? CYXLA_ERROR_INVALID_ARGUMENT
                                : kind == ErrorKind::TypeMismatch  ? CYXLA_ERROR_TYPE_MISMATCH
                                : kind == ErrorKind::ProgramFile   ? CYXLA_ERROR_PROGRAM_FILE
                                                                   : CYXLA_ERROR_PJRT;
    return fail(error, status, "%s: %s", function, e.what());
  } catch (const std::bad_alloc&) {
    return fail(error, CYXLA_ERROR_INTERNAL, "%s: out of memory", function);
    // GCOVR_EXCL_START: the core throws only cyxla::Error and std::bad_alloc; this arm only
    // keeps any other exception from crossing the C ABI.
  } catch (...) {
    return fail(error, CYXLA_ERROR_INTERNAL, "%s: unexpected error", function);
  }
  // GCOVR_EXCL_STOP
}

}  // namespace cyxla::abi
