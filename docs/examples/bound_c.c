/* A Python extension module in C that iterates a program with a bound call:
 * iterate(handle, x, n) runs x <- f(x) n times, where f is the program whose
 * Executable.handle is `handle` (one float32 input and one output of the same size),
 * and returns the last x as bytes. The memory is bound once; each step is one call. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include <cyxla/cyxla.h>

static PyObject* iterate(PyObject* self, PyObject* args) {
  unsigned long long handle;
  Py_buffer x;
  Py_ssize_t steps;
  if (!PyArg_ParseTuple(args, "Ky*n", &handle, &x, &steps)) return NULL;
  cyxla_ProgramSpec spec = {.struct_size = sizeof spec};
  cyxla_Error error = {CYXLA_OK, ""};
  PyObject* result = NULL;
  void* memory = NULL;
  uint64_t bound = 0;
  if (cyxla_get_spec(handle, &spec, &error) != CYXLA_OK) goto done;
  if (spec.num_inputs != 1 || spec.num_outputs != 1 || spec.input_bytes[0] != (size_t)x.len ||
      spec.output_bytes[0] != (size_t)x.len) {
    PyErr_SetString(PyExc_ValueError, "iterate takes a program of one input and one output "
                                      "of the size of x");
    goto done;
  }
  /* Aligned, so that the CPU plugin reads it in place; input and output at once. */
  memory = cyxla_aligned_memory((size_t)x.len);
  if (memory == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  memcpy(memory, x.buf, (size_t)x.len);
  cyxla_Input input = {memory, spec.input_types[0], (size_t)x.len};
  void* outputs[1] = {memory};
  if (cyxla_bind(&spec, &input, 1, outputs, 1, &bound, &error) != CYXLA_OK) goto done;
  cyxla_Status status = CYXLA_OK;
  Py_BEGIN_ALLOW_THREADS
  for (Py_ssize_t step = 0; step < steps && status == CYXLA_OK; ++step) {
    status = cyxla_call_bound(bound, &error); /* reads x, then writes f(x) over it */
  }
  Py_END_ALLOW_THREADS
  if (status == CYXLA_OK) result = PyBytes_FromStringAndSize(memory, x.len);
done:
  if (result == NULL && !PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, error.message);
  if (bound != 0) cyxla_unbind(bound, NULL); /* before the memory is freed */
  cyxla_free_aligned(memory);
  cyxla_release_spec(&spec);
  PyBuffer_Release(&x);
  return result;
}

static PyMethodDef methods[] = {
    {"iterate", iterate, METH_VARARGS, "Runs x <- f(x) n times with a bound call."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "bound_c", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_bound_c(void) {
  if (cyxla_import() < 0) return NULL;
  return PyModule_Create(&module);
}
