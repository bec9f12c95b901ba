// The handler of cyxla's Python host callbacks (the custom-call target
// pjrt::kPythonCallbackTarget), which `cx.lower` emits for jax.pure_callback,
// io_callback, jax.debug.callback and jax.debug.print.
#pragma once

#include <nanobind/nanobind.h>

namespace cyxla::python {

/// The XLA_FFI_Handler* of the target, for registration with the CPU plugin.
const void* python_callback_handler();

/// Sets the Python function that each firing callback calls, with the GIL held:
/// dispatch(callback_id: int, operands: list[memoryview], results: list[memoryview])
/// -> str | None, which writes the results into the writable views and returns None,
/// or returns the error message that fails the call. Kept for the life of the process.
void set_python_callback_dispatcher(nanobind::object dispatcher);

}  // namespace cyxla::python
