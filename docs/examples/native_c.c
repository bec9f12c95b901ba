/* A Python extension module in plain C that runs a compiled program through cyxla's
 * native API: evaluate(handle, x) runs the program whose Executable.handle is `handle`
 * on the float32 array `x` (its one input) and returns its one output as bytes. */
#include <Python.h> /* first: cyxla.h defines cyxla_import() only after Python.h */

#include <cyxla/cyxla.h>
#include <string.h>

static PyObject* evaluate(PyObject* self, PyObject* args) {
  (void)self;
  unsigned long long handle;
  Py_buffer x;
  if (!PyArg_ParseTuple(args, "Ky*", &handle, &x)) return NULL;

  /* Take hold of the executable: its spec says what it takes and returns. */
  cyxla_ProgramSpec spec = {.struct_size = sizeof(cyxla_ProgramSpec)};
  cyxla_Error error;
  if (cyxla_get_spec((uint64_t)handle, &spec, &error) != CYXLA_OK) {
    PyBuffer_Release(&x);
    return PyErr_Format(PyExc_RuntimeError, "cyxla_get_spec: %s", error.message);
  }
  size_t in_bytes = spec.num_inputs == 1 ? spec.input_bytes[0] : 0;
  if (spec.num_inputs != 1 || spec.num_outputs != 1 ||
      spec.input_types[0] != PJRT_Buffer_Type_F32 || (size_t)x.len != in_bytes) {
    cyxla_release_spec(&spec);
    PyBuffer_Release(&x);
    return PyErr_Format(PyExc_ValueError,
                        "evaluate takes a program of one float32 input of %zu bytes", in_bytes);
  }

  /* Aligned memory: the CPU plugin reads the input in place instead of copying it. */
  void* input_memory = cyxla_aligned_memory(in_bytes);
  PyObject* result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)spec.output_bytes[0]);
  cyxla_Status status = CYXLA_ERROR_INTERNAL;
  snprintf(error.message, sizeof error.message, "out of memory");
  if (input_memory != NULL && result != NULL) {
    memcpy(input_memory, x.buf, in_bytes);
    cyxla_Input input = {input_memory, spec.input_types[0], in_bytes};
    void* outputs[] = {PyBytes_AS_STRING(result)};
    /* The call itself needs no GIL: other Python threads run meanwhile. */
    Py_BEGIN_ALLOW_THREADS
    status = cyxla_execute(&spec, &input, 1, outputs, 1, &error);
    Py_END_ALLOW_THREADS
  }
  if (input_memory != NULL) cyxla_free_aligned(input_memory);
  cyxla_release_spec(&spec);
  PyBuffer_Release(&x);
  if (result == NULL) return NULL;
  if (status != CYXLA_OK) {
    Py_DECREF(result);
    return PyErr_Format(PyExc_RuntimeError, "cyxla_execute: %s", error.message);
  }
  return result;
}

static PyMethodDef methods[] = {
    {"evaluate", evaluate, METH_VARARGS, "Runs a program on one float32 array."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "native_c", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_native_c(void) {
  /* Import the function table once, with the GIL, before any thread runs a program. */
  if (cyxla_import() < 0) return NULL;
  return PyModule_Create(&module);
}
