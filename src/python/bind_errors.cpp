// cyxla::Error as Python sees it: the class of its kind from cyxla._errors, with the
// message's bytes escaped, and for a program file the reason word of ProgramFileError.
#include <nanobind/nanobind.h>

#include <string>
#include <string_view>

#include "cyxla/cyxla.h"  // the C statuses of the error kinds
#include "common/error.hpp"
#include "common/utf8.hpp"
#include "program/program_file.hpp"
#include "python/bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cyxla::python {
namespace {

/// The Python error class of `kind`, from cyxla._errors (looked up on the cold path).
nb::object error_class(ErrorKind kind) {
  const char* name = "InvalidArgumentError";
  switch (kind) {
#define CYXLA_CLASS_CASE_(enumerator, python_class, status) \
  case ErrorKind::enumerator:                               \
    name = python_class;                                    \
    break;
    CYXLA_ERROR_KINDS(CYXLA_CLASS_CASE_)
#undef CYXLA_CLASS_CASE_
  }
  return nb::module_::import_("cyxla._errors").attr(name);
}

/// Sets the Python error of `e`.
void set_python_error(const Error& e) {
  const nb::object cls = error_class(e.kind());
  // Messages quote paths and plugins' text, which need not be UTF-8.
  const std::string text = with_bytes_escaped(e.what());
  const nb::object message =
      nb::steal(PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size())));
  nb::object error;
  if (e.kind() == ErrorKind::ProgramFile) {
    // Refusals after the reader's (outputs the compiled program does not return) are
    // about what the metadata says.
    const auto* file = dynamic_cast<const program::FileError*>(&e);
    const std::string_view word =
        program::refusal_word(file != nullptr ? file->refusal() : program::Refusal::Metadata);
    error = cls(message, "reason"_a = nb::str(word.data(), word.size()));
  } else {
    error = cls(message);
  }
  PyErr_SetObject(cls.ptr(), error.ptr());
}

}  // namespace

void bind_errors(nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      set_python_error(e);
    }
  });
  // The table of error kinds (common/error.hpp), as (kind, cyxla._errors class, C status).
  nb::list kinds;
#define CYXLA_KIND_ROW_(enumerator, python_class, status) \
  kinds.append(nb::make_tuple(#enumerator, python_class, static_cast<int>(status)));
  CYXLA_ERROR_KINDS(CYXLA_KIND_ROW_)
#undef CYXLA_KIND_ROW_
  m.attr("_ERROR_KINDS") = nb::tuple(kinds);
}

}  // namespace cyxla::python
