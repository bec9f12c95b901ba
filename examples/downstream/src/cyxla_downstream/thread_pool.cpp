// A C++ extension module that runs a compiled JAX program from its own thread pool, with
// the GIL released: one program execution per row of a batch.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cyxla/cyxla.hpp"

namespace {

/// A Python buffer, released on destruction.
class Buffer {
 public:
  Buffer(PyObject* object, int flags) {
    if (PyObject_GetBuffer(object, &view_, flags) != 0) throw std::invalid_argument("");
    held_ = true;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (held_) PyBuffer_Release(&view_);
  }
  std::byte* data() const { return static_cast<std::byte*>(view_.buf); }
  size_t nbytes() const { return static_cast<size_t>(view_.len); }

 private:
  Py_buffer view_{};
  bool held_ = false;
};

/// map_rows_into(executable, rows, out, threads): out[r] = program(rows[r]) for each row,
/// rows split across `threads` threads of this module's own pool.
PyObject* map_rows_into(PyObject*, PyObject* args) {
  PyObject *executable, *rows_object, *out_object;
  Py_ssize_t threads;
  if (!PyArg_ParseTuple(args, "OOOn", &executable, &rows_object, &out_object, &threads)) {
    return nullptr;
  }
  try {
    PyObject* handle_object = PyObject_GetAttrString(executable, "handle");
    if (handle_object == nullptr) return nullptr;
    const uint64_t handle = PyLong_AsUnsignedLongLong(handle_object);
    Py_DECREF(handle_object);
    if (PyErr_Occurred()) return nullptr;

    cyxla::native::Program program(handle);
    if (program.num_inputs() != 1 || program.num_outputs() != 1) {
      PyErr_SetString(PyExc_ValueError, "map_rows needs a program with one input and one output");
      return nullptr;
    }
    Buffer rows(rows_object, PyBUF_C_CONTIGUOUS);
    Buffer out(out_object, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE);
    const size_t in_bytes = program.input_bytes(0), out_bytes = program.output_bytes(0);
    const size_t count = in_bytes == 0 ? 0 : rows.nbytes() / in_bytes;
    if (in_bytes == 0 || rows.nbytes() != count * in_bytes || out.nbytes() != count * out_bytes ||
        threads < 1) {
      PyErr_Format(PyExc_ValueError,
                   "rows must hold whole inputs of %zu bytes (given %zu), out %zu bytes per row, "
                   "threads >= 1",
                   in_bytes, rows.nbytes(), out_bytes);
      return nullptr;
    }

    std::mutex mutex;
    std::string failure;
    Py_BEGIN_ALLOW_THREADS {
      std::vector<std::jthread> pool;
      for (Py_ssize_t t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          try {
            cyxla::native::HostArray x(in_bytes), y(out_bytes);
            const cyxla_Input input = x.input(program.input_type(0));
            void* output = y.data();
            for (size_t r = static_cast<size_t>(t); r < count; r += static_cast<size_t>(threads)) {
              std::memcpy(x.data(), rows.data() + r * in_bytes, in_bytes);
              program.execute({&input, 1}, {&output, 1});
              std::memcpy(out.data() + r * out_bytes, y.data(), out_bytes);
            }
          } catch (const std::exception& e) {
            std::lock_guard lock(mutex);
            if (failure.empty()) failure = e.what();
          }
        });
      }
    }  // the pool joins here, before the GIL is taken back
    Py_END_ALLOW_THREADS
    if (!failure.empty()) {
      PyErr_SetString(PyExc_RuntimeError, failure.c_str());
      return nullptr;
    }
    Py_RETURN_NONE;
  } catch (const std::invalid_argument&) {
    return nullptr;  // PyObject_GetBuffer set the error
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

PyMethodDef methods[] = {
    {"map_rows_into", map_rows_into, METH_VARARGS,
     "map_rows_into(executable, rows, out, threads): out[r] = executable(rows[r])."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "thread_pool",
                      "Runs a compiled program over rows from a C++ thread pool.", -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_thread_pool() {
  try {
    cyxla::native::import();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_ImportError, e.what());
    return nullptr;
  }
  PyObject* cyxla = PyImport_ImportModule("cyxla");
  if (cyxla == nullptr) return nullptr;
  PyObject* checked = PyObject_CallMethod(cyxla, "check_abi", "i", CYXLA_ABI_VERSION);
  Py_DECREF(cyxla);
  if (checked == nullptr) return nullptr;
  Py_DECREF(checked);
  return PyModule_Create(&module);
}
