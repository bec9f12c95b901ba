// A Python extension module in C++ that evaluates many points in one call through
// cyxla.hpp: evaluate(handle, xs) runs the batched executable whose
// BatchedExecutable.handle is `handle` on the points in the bytes of `xs` (of its one
// input, one point after another) and returns the points of its one output as bytes.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <exception>
#include <vector>

#include "cyxla/cyxla.hpp"

namespace {

PyObject* evaluate(PyObject*, PyObject* args) {
  unsigned long long handle;
  Py_buffer xs;
  if (!PyArg_ParseTuple(args, "Ky*", &handle, &xs)) return nullptr;
  try {
    cyxla::native::Program program(handle);
    const size_t point = program.num_inputs() == 1 ? program.input_bytes(0) : 0;
    if (program.batch_sizes().empty() || program.num_outputs() != 1 || point == 0 ||
        static_cast<size_t>(xs.len) % point != 0) {
      PyBuffer_Release(&xs);
      return PyErr_Format(PyExc_ValueError,
                          "evaluate takes a batched program of one input and whole points "
                          "of %zu bytes",
                          point);
    }
    const size_t n = static_cast<size_t>(xs.len) / point;  // any number of points
    std::vector<char> ys(n * program.output_bytes(0));
    const cyxla_Input inputs[] = {{xs.buf, program.input_type(0), n * point}};
    void* const outputs[] = {ys.data()};
    cyxla_Status status;
    cyxla_Error error{};
    Py_BEGIN_ALLOW_THREADS  // n points, one crossing, no GIL
    status = program.try_execute_batch(n, inputs, outputs, &error);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&xs);
    if (status != CYXLA_OK) throw cyxla::native::Error(error);
    return PyBytes_FromStringAndSize(ys.data(), static_cast<Py_ssize_t>(ys.size()));
  } catch (const std::exception& error) {
    if (xs.obj != nullptr) PyBuffer_Release(&xs);
    PyErr_SetString(PyExc_RuntimeError, error.what());
    return nullptr;
  }
}

PyMethodDef methods[] = {
    {"evaluate", evaluate, METH_VARARGS, "Evaluates a batched program at many points."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "native_batch", nullptr, -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_native_batch() {
  try {
    cyxla::native::import();
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_ImportError, error.what());
    return nullptr;
  }
  return PyModule_Create(&module);
}
