// The C API's reports: a status and a message, and no exception across the boundary.
#include "abi/status.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <new>
#include <string_view>

#include "common/error.hpp"
#include "common/utf8.hpp"

namespace cyxla::abi {
namespace {

/// The C status of an error kind, from the one table of kinds (common/error.hpp).
cyxla_Status status_of(ErrorKind kind) noexcept {
  switch (kind) {
#define CYXLA_STATUS_CASE_(name, python_class, status) \
  case ErrorKind::name:                                \
    return status;
    CYXLA_ERROR_KINDS(CYXLA_STATUS_CASE_)
#undef CYXLA_STATUS_CASE_
  }
  return CYXLA_ERROR_INTERNAL;  // GCOVR_EXCL_LINE: every kind is a case above
}

/// Makes the NUL-terminated `message` (of `capacity` bytes) UTF-8 in place: bytes that
/// start no UTF-8 sequence (a path's, or a sequence cut by the truncation) are written
/// \xNN, and what no longer fits is dropped whole, never half a sequence.
void make_utf8(char* message, size_t capacity) noexcept {
  char original[sizeof(cyxla_Error::message)];
  const size_t size = std::strlen(message);
  std::memcpy(original, message, size);
  size_t written = 0;
  for_each_printable(std::string_view(original, size), false, [&](std::string_view piece) {
    if (written + piece.size() >= capacity) return false;
    std::memcpy(message + written, piece.data(), piece.size());
    written += piece.size();
    return true;
  });
  message[written] = '\0';
}

}  // namespace

cyxla_Status fail(cyxla_Error* error, cyxla_Status status, const char* format, ...) noexcept {
  if (error != nullptr) {
    error->status = status;
    va_list args;
    va_start(args, format);
    std::vsnprintf(error->message, sizeof(error->message), format, args);
    va_end(args);
    make_utf8(error->message, sizeof(error->message));
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
    return fail(error, status_of(e.kind()), "%s: %s", function, e.what());
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
