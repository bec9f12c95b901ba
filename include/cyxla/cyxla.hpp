// A header-only C++ layer over cyxla's C API (cyxla.h): RAII for the runtime, specs and
// host memory, spans, and exceptions on the caller's side of the boundary.
//
// In an extension module (Python.h is included, unless CYXLA_STANDALONE is defined):
//   cyxla::native::import();                        // at module init, with the GIL
//   cyxla::native::Program program(handle);         // handle: Executable.handle
// In an application without Python (linked with cyxla::cyxla, which defines
// CYXLA_STANDALONE):
//   cyxla::native::Runtime runtime;                 // the plugin of $CYXLA_PJRT_PLUGIN
//   auto program = cyxla::native::Program::load("model.cyxla");
// Then, either way:
//   cyxla::native::HostArray x(program.input_bytes(0));
//   ... fill x.data() ...
//   program.execute({x.input(program.input_type(0))}, {y.data()});   // any thread, no GIL
//   cyxla::native::BoundCall bound(program, {x.input(program.input_type(0))}, {y.data()});
//   bound.call();                                   // the same, on what x holds now
//
// A batched executable (cyxla.compile_batched) evaluates n points in one call:
//   program.execute_batch(n, {xs.input(program.input_type(0))}, {ys.data()});
#ifndef CYXLA_CYXLA_HPP_
#define CYXLA_CYXLA_HPP_

#if !defined(CYXLA_STANDALONE) && defined(__has_include)
#if __has_include(<Python.h>)
#include <Python.h>
#endif
#endif

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "cyxla/cyxla.h"

namespace cyxla::native {

/// A failed call of the C API: its status and message.
class Error : public std::runtime_error {
 public:
  explicit Error(const cyxla_Error& error)
      : std::runtime_error(error.message), status_(error.status) {}
  cyxla_Status status() const noexcept { return status_; }

 private:
  cyxla_Status status_;
};

#ifdef PY_VERSION_HEX
/// Imports the function table; call with the GIL held, e.g. in the module's init.
/// Throws std::runtime_error with the Python error's text (the Python error is cleared).
inline void import() {
  if (cyxla_import() == 0) return;
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  std::string message = "cannot import cyxla";
  if (value != nullptr) {
    if (PyObject* text = PyObject_Str(value)) {
      // PyUnicode_AsUTF8AndSize: in the stable ABI, which PyUnicode_AsUTF8 is not before 3.13.
      if (const char* utf8 = PyUnicode_AsUTF8AndSize(text, nullptr)) {
        message += std::string(": ") + utf8;
      }
      Py_DECREF(text);
    }
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  PyErr_Clear();
  throw std::runtime_error(message);
}
#endif  // PY_VERSION_HEX

/// The process's runtime, held open for this object's life (cyxla_open_runtime and
/// cyxla_close_runtime). A process has one: a second Runtime, or Python's, shares it.
class Runtime {
 public:
  /// Opens the plugin at `plugin_path` (null: $CYXLA_PJRT_PLUGIN) with client `options`.
  explicit Runtime(const char* plugin_path = nullptr,
                   std::span<const cyxla_ClientOption> options = {}) {
    cyxla_RuntimeOptions o{};
    o.struct_size = sizeof(o);
    o.plugin_path = plugin_path;
    o.client_options = options.data();
    o.num_client_options = options.size();
    cyxla_Error error{};
    if (cyxla_open_runtime(&o, &error) != CYXLA_OK) throw Error(error);
  }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  ~Runtime() { cyxla_close_runtime(); }

  /// Registers the XLA_FFI_Handler* `handler` as custom-call target `target` of
  /// `platform` ("cpu", "cuda", "rocm"); before loading a program that calls it.
  void register_ffi_handler(const char* target, void* handler, const char* platform = "cpu",
                            uint32_t traits = 0) const {
    cyxla_Error error{};
    if (cyxla_register_ffi_handler(target, handler, platform, traits, &error) != CYXLA_OK) {
      throw Error(error);
    }
  }
};

/// Host memory aligned for zero-copy inputs, freed on destruction.
class HostArray {
 public:
  HostArray() = default;
  explicit HostArray(size_t nbytes) : data_(cyxla_aligned_memory(nbytes)), nbytes_(nbytes) {
    if (nbytes != 0 && data_ == nullptr) throw std::bad_alloc();
  }
  HostArray(HostArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), nbytes_(std::exchange(other.nbytes_, 0)) {}
  HostArray& operator=(HostArray&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(nbytes_, other.nbytes_);
    return *this;
  }
  HostArray(const HostArray&) = delete;
  HostArray& operator=(const HostArray&) = delete;
  ~HostArray() {
    if (data_ != nullptr) cyxla_free_aligned(data_);
  }

  void* data() const noexcept { return data_; }
  size_t nbytes() const noexcept { return nbytes_; }
  template <class T>
  std::span<T> as() const noexcept {
    return {static_cast<T*>(data_), nbytes_ / sizeof(T)};
  }
  /// This memory as an input of element type `type`.
  cyxla_Input input(PJRT_Buffer_Type type) const noexcept { return {data_, type, nbytes_}; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
};

/// A compiled program as native code holds it: a ProgramSpec, released on destruction.
/// `execute` may be called from many threads at once; destroy the Program only after
/// the last call returned.
class Program {
 public:
  /// Takes hold of the executable with `handle` (Executable.handle in Python).
  explicit Program(uint64_t handle) {
    spec_.struct_size = sizeof(spec_);
    cyxla_Error error{};
    if (cyxla_get_spec(handle, &spec_, &error) != CYXLA_OK) throw Error(error);
  }

  /// Loads and compiles the program file at `path` (Program.save in Python) on the open
  /// runtime; throws Error saying what is wrong with a bad file.
  static Program load(const std::string& path) {
    uint64_t handle = 0;
    cyxla_Error error{};
    if (cyxla_load_program(path.c_str(), &handle, &error) != CYXLA_OK) throw Error(error);
    // The spec holds the executable; the loader's handle is no longer needed.
    struct Release {
      uint64_t handle;
      ~Release() { cyxla_release_program(handle); }
    } release{handle};
    return Program(handle);
  }
  Program(Program&& other) noexcept : spec_(other.spec_) { other.spec_.executable = 0; }
  Program& operator=(Program&& other) noexcept {
    std::swap(spec_, other.spec_);
    return *this;
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() {
    if (spec_.executable != 0) cyxla_release_spec(&spec_);
  }

  const cyxla_ProgramSpec& spec() const noexcept { return spec_; }
  size_t num_inputs() const noexcept { return spec_.num_inputs; }
  size_t num_outputs() const noexcept { return spec_.num_outputs; }
  PJRT_Buffer_Type input_type(size_t i) const {
    return spec_.input_types[checked(i, num_inputs())];
  }
  PJRT_Buffer_Type output_type(size_t j) const {
    return spec_.output_types[checked(j, num_outputs())];
  }
  std::span<const int64_t> input_shape(size_t i) const {
    checked(i, num_inputs());
    return {spec_.input_dims[i], spec_.input_ranks[i]};
  }
  std::span<const int64_t> output_shape(size_t j) const {
    checked(j, num_outputs());
    return {spec_.output_dims[j], spec_.output_ranks[j]};
  }
  size_t input_bytes(size_t i) const { return spec_.input_bytes[checked(i, num_inputs())]; }
  size_t output_bytes(size_t j) const { return spec_.output_bytes[checked(j, num_outputs())]; }
  /// The batch sizes a batched executable was compiled at, ascending; empty for others.
  std::span<const size_t> batch_sizes() const noexcept {
    return {spec_.batch_sizes, spec_.num_batch_sizes};
  }

  /// Runs the program; throws cyxla::native::Error on failure.
  void execute(std::span<const cyxla_Input> inputs, std::span<void* const> outputs) const {
    cyxla_Error error;  // every call fills it; zeroing 516 bytes would cost a small call a third
    if (try_execute(inputs, outputs, &error) != CYXLA_OK) throw Error(error);
  }
  void execute(std::initializer_list<cyxla_Input> inputs,
               std::initializer_list<void*> outputs) const {
    execute(std::span(inputs.begin(), inputs.size()), std::span(outputs.begin(), outputs.size()));
  }
  /// Runs the program; reports failure as a status (and `error`, if given) instead.
  cyxla_Status try_execute(std::span<const cyxla_Input> inputs, std::span<void* const> outputs,
                           cyxla_Error* error = nullptr) const noexcept {
    return cyxla_execute(&spec_, inputs.data(), inputs.size(), outputs.data(), outputs.size(),
                         error);
  }

  /// Evaluates `n` points of a batched executable: inputs[i] holds n points of input i,
  /// one after another, outputs[j] receives n * output_bytes(j) bytes (see
  /// cyxla_execute_batch). Throws cyxla::native::Error on failure.
  void execute_batch(size_t n, std::span<const cyxla_Input> inputs,
                     std::span<void* const> outputs) const {
    cyxla_Error error;  // every call fills it; zeroing 516 bytes would cost a small call a third
    if (try_execute_batch(n, inputs, outputs, &error) != CYXLA_OK) throw Error(error);
  }
  void execute_batch(size_t n, std::initializer_list<cyxla_Input> inputs,
                     std::initializer_list<void*> outputs) const {
    execute_batch(n, std::span(inputs.begin(), inputs.size()),
                  std::span(outputs.begin(), outputs.size()));
  }
  /// Evaluates `n` points; reports failure as a status (and `error`, if given) instead.
  cyxla_Status try_execute_batch(size_t n, std::span<const cyxla_Input> inputs,
                                 std::span<void* const> outputs,
                                 cyxla_Error* error = nullptr) const noexcept {
    return cyxla_execute_batch(&spec_, n, inputs.data(), inputs.size(), outputs.data(),
                               outputs.size(), error);
  }

 private:
  static size_t checked(size_t index, size_t count) {
    if (index >= count) {
      throw std::out_of_range("index " + std::to_string(index) + " of " + std::to_string(count));
    }
    return index;
  }

  cyxla_ProgramSpec spec_{};
};

/// A program bound to the caller's memory (cyxla_bind), unbound on destruction. `call()`
/// runs it on what the inputs hold now: one thread at a time (any thread). The memory must
/// outlive the BoundCall; the BoundCall holds the executable alive, not the Program.
class BoundCall {
 public:
  BoundCall(const Program& program, std::span<const cyxla_Input> inputs,
            std::span<void* const> outputs) {
    cyxla_Error error{};
    if (cyxla_bind(&program.spec(), inputs.data(), inputs.size(), outputs.data(),
                   outputs.size(), &handle_, &error) != CYXLA_OK) {
      throw Error(error);
    }
  }
  BoundCall(const Program& program, std::initializer_list<cyxla_Input> inputs,
            std::initializer_list<void*> outputs)
      : BoundCall(program, std::span(inputs.begin(), inputs.size()),
                  std::span(outputs.begin(), outputs.size())) {}
  BoundCall(BoundCall&& other) noexcept : handle_(std::exchange(other.handle_, 0)) {}
  BoundCall& operator=(BoundCall&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  BoundCall(const BoundCall&) = delete;
  BoundCall& operator=(const BoundCall&) = delete;
  ~BoundCall() {
    if (handle_ != 0) cyxla_unbind(handle_, nullptr);
  }

  /// Runs the program; throws cyxla::native::Error on failure (CYXLA_ERROR_BUSY while
  /// another thread is in a call of it).
  void call() const {
    cyxla_Error error;  // every call fills it; zeroing 516 bytes would cost a small call a third
    if (try_call(&error) != CYXLA_OK) throw Error(error);
  }
  /// Runs the program; reports failure as a status (and `error`, if given) instead.
  cyxla_Status try_call(cyxla_Error* error = nullptr) const noexcept {
    return cyxla_call_bound(handle_, error);
  }
  uint64_t handle() const noexcept { return handle_; }

 private:
  uint64_t handle_ = 0;
};

}  // namespace cyxla::native

#endif  // CYXLA_CYXLA_HPP_
