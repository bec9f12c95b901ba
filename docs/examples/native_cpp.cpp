// A Python extension module in C++ that runs a compiled program through cyxla.hpp:
// evaluate(handle, x) runs the program whose Executable.handle is `handle` on the bytes
// of `x` (its one input, of the program's element type) and returns its one output as
// bytes.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstring>
#include <exception>
#include <vector>

#include "cyxla/cyxla.hpp"

namespace {

PyObject* evaluate(PyObject*, PyObject* args) {
  unsigned long long handle;
  Py_buffer x;
  if (!PyArg_ParseTuple(args, "Ky*", &handle, &x)) return nullptr;
  try {
    // Holds the executable until the end of the block (cyxla_release_spec).
    cyxla::native::Program program(handle);
    if (program.num_inputs() != 1 || program.num_outputs() != 1 ||
        program.input_bytes(0) != static_cast<size_t>(x.len)) {
      PyBuffer_Release(&x);
      return PyErr_Format(PyExc_ValueError, "evaluate takes a program of one input of %zu bytes",
                          program.num_inputs() == 1 ? program.input_bytes(0) : size_t{0});
    }
    // Aligned memory, so that the CPU plugin reads the input in place.
    cyxla::native::HostArray input(program.input_bytes(0));
    std::memcpy(input.data(), x.buf, input.nbytes());
    PyBuffer_Release(&x);
    std::vector<char> output(program.output_bytes(0));
    const cyxla_Input inputs[] = {input.input(program.input_type(0))};
    void* const outputs[] = {output.data()};
    cyxla_Status status;
    cyxla_Error error{};
    Py_BEGIN_ALLOW_THREADS  // the call needs no GIL
    status = program.try_execute(inputs, outputs, &error);
    Py_END_ALLOW_THREADS
    if (status != CYXLA_OK) throw cyxla::native::Error(error);
    return PyBytes_FromStringAndSize(output.data(), static_cast<Py_ssize_t>(output.size()));
  } catch (const std::exception& error) {
    if (x.obj != nullptr) PyBuffer_Release(&x);
    PyErr_SetString(PyExc_RuntimeError, error.what());
    return nullptr;
  }
}

PyMethodDef methods[] = {
    {"evaluate", evaluate, METH_VARARGS, "Runs a program on the bytes of one input."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "native_cpp", nullptr, -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_native_cpp() {
  try {
    cyxla::native::import();  // with the GIL, before any thread runs a program
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_ImportError, error.what());
    return nullptr;
  }
  return PyModule_Create(&module);
}
