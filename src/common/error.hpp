// The one exception type of the C++ core: a kind the bindings map onto their own
// errors, and a message that says what went wrong and how to fix it.
#pragma once

#include <stdexcept>
#include <string>

namespace cyxla {

// X(Kind, "PythonClass", CYXLA_STATUS): every kind of error, the class of cyxla._errors
// that Python raises for it (src/python/bind_errors.cpp) and the status the C API returns
// (src/abi/status.cpp). The statuses are cyxla.h's names, resolved where the list is
// expanded, so the core needs no C header.
//   InvalidArgument  a value the caller passed is wrong (count, size, null, handle)
//   TypeMismatch     an element type differs from what the program takes
//   PluginLoad       the library is missing or not a PJRT plugin
//   PluginVersion    the plugin speaks a PJRT API version cyxla cannot use
//   Compile          the plugin refused to compile a program
//   UnsupportedProgram  a program calls a custom call that no handler in this process runs
//   Pjrt             any other error the plugin reported
//   ProgramFile      a program file that is malformed, altered, truncated or too new
#define CYXLA_ERROR_KINDS(X)                                              \
  X(InvalidArgument, "InvalidArgumentError", CYXLA_ERROR_INVALID_ARGUMENT) \
  X(TypeMismatch, "DtypeError", CYXLA_ERROR_TYPE_MISMATCH)                 \
  X(PluginLoad, "PluginLoadError", CYXLA_ERROR_PJRT)                       \
  X(PluginVersion, "PluginVersionError", CYXLA_ERROR_PJRT)                 \
  X(Compile, "CompileError", CYXLA_ERROR_PJRT)                             \
  X(UnsupportedProgram, "UnsupportedProgramError", CYXLA_ERROR_INVALID_ARGUMENT) \
  X(Pjrt, "PjrtError", CYXLA_ERROR_PJRT)                                   \
  X(ProgramFile, "ProgramFileError", CYXLA_ERROR_PROGRAM_FILE)

enum class ErrorKind {
#define CYXLA_ERROR_KIND_ENUMERATOR_(kind, python_class, status) kind,
  CYXLA_ERROR_KINDS(CYXLA_ERROR_KIND_ENUMERATOR_)
#undef CYXLA_ERROR_KIND_ENUMERATOR_
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}

  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace cyxla
