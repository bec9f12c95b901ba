// The one exception type of the C++ core: a kind the bindings map onto their own
// errors, and a message that says what went wrong and how to fix it.
#pragma once

#include <stdexcept>
#include <string>

namespace cyxla {

enum class ErrorKind {
  InvalidArgument,  // a value the caller passed is wrong (count, size, null, handle)
  TypeMismatch,     // an element type differs from what the program takes
  PluginLoad,       // the library is missing or not a PJRT plugin
  PluginVersion,    // the plugin speaks a PJRT API version cyxla cannot use
  Compile,          // the plugin refused to compile a program
  Pjrt,             // any other error the plugin reported
  ProgramFile,      // a program file that is malformed, altered, truncated or too new
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message, int pjrt_code = 0)
      : std::runtime_error(message), kind_(kind), pjrt_code_(pjrt_code) {}

  ErrorKind kind() const noexcept { return kind_; }
  /// The plugin's PJRT_Error_Code, or 0 when the error did not come from the plugin.
  int pjrt_code() const noexcept { return pjrt_code_; }

 private:
  ErrorKind kind_;
  int pjrt_code_;
};

}  // namespace cyxla
