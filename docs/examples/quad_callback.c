/* An integrand for scipy.integrate.quad that evaluates a compiled program: a callback that
 * returns a double and has no way to report a failure. It keeps the first failure in its
 * user data and returns NaN; its owner checks that record once quad returns.
 *
 *   new(handle)   the user data: a hold on the program (one float64 in, one float64 out)
 *   function()    the callback, as a capsule scipy.LowLevelCallable takes
 *   error(state)  None, or the message of the first failure
 *   release(state) drops the hold early (later calls fail: the page uses it to show that)
 */
#include <Python.h> /* first: cyxla.h defines cyxla_import() only after Python.h */

#include <cyxla/cyxla.h>
#include <math.h>
#include <stdlib.h>

#define STATE_NAME "quad_callback.Integrand"

typedef struct Integrand {
  cyxla_ProgramSpec spec;
  cyxla_Error first_error; /* status CYXLA_OK until a call fails */
} Integrand;

/* scipy's signature for quad: double f(int n, double* x, void* user_data). quad calls it
 * from one thread; a caller that evaluates from many threads keeps one record per thread
 * (or sets a shared one with an atomic compare-and-swap). */
static double integrand(int n, double* x, void* user_data) {
  Integrand* state = user_data;
  if (state->first_error.status != CYXLA_OK) return NAN; /* failed before: stop quickly */
  double y = NAN;
  cyxla_Input input = {x, PJRT_Buffer_Type_F64, sizeof *x};
  void* outputs[] = {&y};
  cyxla_Error error;
  if (n != 1) {
    error.status = CYXLA_ERROR_INVALID_ARGUMENT;
    snprintf(error.message, sizeof error.message, "the integrand takes 1 variable, given %d", n);
  } else if (cyxla_execute(&state->spec, &input, 1, outputs, 1, &error) == CYXLA_OK) {
    return y;
  }
  state->first_error = error;
  return NAN;
}

static void destroy_state(PyObject* capsule) {
  Integrand* state = PyCapsule_GetPointer(capsule, STATE_NAME);
  cyxla_release_spec(&state->spec); /* does nothing after release() */
  free(state);
}

static PyObject* new_state(PyObject* self, PyObject* args) {
  (void)self;
  unsigned long long handle;
  if (!PyArg_ParseTuple(args, "K", &handle)) return NULL;
  Integrand* state = calloc(1, sizeof *state);
  if (state == NULL) return PyErr_NoMemory();
  state->spec.struct_size = sizeof state->spec;
  cyxla_Error error;
  if (cyxla_get_spec((uint64_t)handle, &state->spec, &error) != CYXLA_OK) {
    free(state);
    return PyErr_Format(PyExc_RuntimeError, "cyxla_get_spec: %s", error.message);
  }
  /* The output is written into one double: anything else would overflow it. */
  if (state->spec.num_inputs != 1 || state->spec.num_outputs != 1 ||
      state->spec.output_types[0] != PJRT_Buffer_Type_F64 || state->spec.output_bytes[0] != 8) {
    cyxla_release_spec(&state->spec);
    free(state);
    return PyErr_Format(PyExc_ValueError, "the integrand needs a program of one float64 "
                                          "input and one float64 output");
  }
  PyObject* capsule = PyCapsule_New(state, STATE_NAME, destroy_state);
  if (capsule == NULL) {
    cyxla_release_spec(&state->spec);
    free(state);
  }
  return capsule;
}

static PyObject* function(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  /* The capsule's name is the C signature, which LowLevelCallable checks. */
  return PyCapsule_New((void*)integrand, "double (int, double *, void *)", NULL);
}

static PyObject* first_error(PyObject* self, PyObject* capsule) {
  (void)self;
  Integrand* state = PyCapsule_GetPointer(capsule, STATE_NAME);
  if (state == NULL) return NULL;
  if (state->first_error.status == CYXLA_OK) Py_RETURN_NONE;
  return PyUnicode_FromString(state->first_error.message);
}

static PyObject* release(PyObject* self, PyObject* capsule) {
  (void)self;
  Integrand* state = PyCapsule_GetPointer(capsule, STATE_NAME);
  if (state == NULL) return NULL;
  cyxla_release_spec(&state->spec);
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"new", new_state, METH_VARARGS, "The integrand's user data for a program handle."},
    {"function", function, METH_NOARGS, "The integrand, for scipy.LowLevelCallable."},
    {"error", first_error, METH_O, "None, or the message of the first failure."},
    {"release", release, METH_O, "Drops the user data's hold on the program."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "quad_callback", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_quad_callback(void) {
  if (cyxla_import() < 0) return NULL;
  return PyModule_Create(&module);
}
