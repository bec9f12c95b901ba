// The Python-facing hot path: buffer protocol views checked against the program's specs.
#include "python/host_buffers.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "abi/registry.hpp"
#include "abi/table.hpp"
#include "common/error.hpp"
#include "runtime/small_array.hpp"

namespace nb = nanobind;

namespace cyxla::python {
namespace {

/// A buffer view of a Python object, released on destruction.
class BufferView {
 public:
  BufferView() = default;
  BufferView(BufferView&&) = delete;
  BufferView& operator=(BufferView&&) = delete;
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;
  ~BufferView() {
    if (held_) PyBuffer_Release(&view_);
  }

  /// Takes a C-contiguous view of `object` with its format and shape; false (and no
  /// Python error set) when `object` has none.
  bool acquire(nb::handle object, bool writable) {
    const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(object.ptr(), &view_, flags) != 0) {
      PyErr_Clear();
      return false;
    }
    held_ = true;
    return true;
  }
  void* data() const noexcept { return view_.buf; }
  size_t nbytes() const noexcept { return static_cast<size_t>(view_.len); }

  /// Whether the view holds an array of exactly `spec` (of `bytes` bytes). With
  /// `carried`, a bfloat16 spec also takes uint16 ("H"): Python's run hands bfloat16 over
  /// as uint16 views, since NumPy cannot export ml_dtypes' types as buffers.
  bool matches(const TensorSpec& spec, size_t bytes, bool carried) const noexcept {
    if (static_cast<size_t>(view_.ndim) != spec.dims.size()) return false;
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      if (view_.shape[d] != spec.dims[d]) return false;
    }
    if (spec.type == PJRT_Buffer_Type_BF16 && !carried) return false;
    return format_matches(spec.type) && nbytes() == bytes;
  }

 private:
  /// Whether the struct-module format of the view is `type`'s.
  bool format_matches(PJRT_Buffer_Type type) const noexcept {
    const char* f = view_.format != nullptr ? view_.format : "B";
    if (*f == '@' || *f == '=' || *f == '<') ++f;  // native, little-endian
    const bool eight = view_.itemsize == 8;
    switch (type) {
      case PJRT_Buffer_Type_PRED: return std::strcmp(f, "?") == 0;
      case PJRT_Buffer_Type_S8: return std::strcmp(f, "b") == 0;
      case PJRT_Buffer_Type_S16: return std::strcmp(f, "h") == 0;
      case PJRT_Buffer_Type_S32: return std::strcmp(f, "i") == 0;
      case PJRT_Buffer_Type_S64:
        return eight && (std::strcmp(f, "l") == 0 || std::strcmp(f, "q") == 0);
      case PJRT_Buffer_Type_U8: return std::strcmp(f, "B") == 0;
      case PJRT_Buffer_Type_U16: return std::strcmp(f, "H") == 0;
      case PJRT_Buffer_Type_U32: return std::strcmp(f, "I") == 0;
      case PJRT_Buffer_Type_U64:
        return eight && (std::strcmp(f, "L") == 0 || std::strcmp(f, "Q") == 0);
      case PJRT_Buffer_Type_F16: return std::strcmp(f, "e") == 0;
      case PJRT_Buffer_Type_BF16: return std::strcmp(f, "H") == 0;
      case PJRT_Buffer_Type_F32: return std::strcmp(f, "f") == 0;
      case PJRT_Buffer_Type_F64: return std::strcmp(f, "d") == 0;
      case PJRT_Buffer_Type_C64: return std::strcmp(f, "Zf") == 0;
      case PJRT_Buffer_Type_C128: return std::strcmp(f, "Zd") == 0;
      default: return false;  // GCOVR_EXCL_LINE: executables hold only the types above
    }
  }

  // Filled by acquire() and read only once it succeeded: not cleared at construction, which
  // for the 16 views a call keeps inline would cost a small call more than its checks.
  Py_buffer view_;
  bool held_ = false;
};

}  // namespace

#ifdef CYXLA_TESTING
bool run_on_buffers(const Executable& executable, nb::handle inputs, nb::handle outputs,
                    bool converted) {
  const auto& in_specs = executable.inputs();
  const auto& out_specs = executable.outputs();
  nb::sequence in_seq = nb::borrow<nb::sequence>(inputs);
  nb::sequence out_seq = nb::borrow<nb::sequence>(outputs);
  const size_t n_in = nb::len(in_seq), n_out = nb::len(out_seq);
  if (n_in != in_specs.size()) return false;
  if (n_out != out_specs.size()) {
    throw Error(ErrorKind::InvalidArgument, "the program has " + std::to_string(out_specs.size()) +
                                                " outputs, given " + std::to_string(n_out) +
                                                " arrays to write them to");
  }
  SmallArray<BufferView> in_views(n_in), out_views(n_out);
  SmallArray<const void*> in_data(n_in);
  SmallArray<void*> out_data(n_out);
  for (size_t i = 0; i < n_in; ++i) {
    if (!in_views[i].acquire(in_seq[i], false) ||
        !in_views[i].matches(in_specs[i], executable.input_bytes()[i], converted)) {
      return false;
    }
    in_data[i] = in_views[i].data();
  }
  for (size_t j = 0; j < n_out; ++j) {
    if (!out_views[j].acquire(out_seq[j], true) ||
        !out_views[j].matches(out_specs[j], executable.output_bytes()[j], true)) {
      throw Error(ErrorKind::InvalidArgument,
                  "output " + std::to_string(j) + " must be a writable C-contiguous array of " +
                      out_specs[j].to_string());
    }
    out_data[j] = out_views[j].data();
  }
  nb::gil_scoped_release release;
  executable.execute({in_data.data(), n_in}, {out_data.data(), n_out});
  return true;
}
#endif

namespace {

/// The items of a list or tuple, borrowed through `get`; none for any other object.
struct Items {
  PyObject* (*get)(PyObject*, Py_ssize_t) = nullptr;
  size_t count = 0;
};

Items items_of(nb::handle sequence) noexcept {
  if (PyList_Check(sequence.ptr())) {
    return {PyList_GetItem, static_cast<size_t>(PyList_Size(sequence.ptr()))};
  }
  if (PyTuple_Check(sequence.ptr())) {
    return {PyTuple_GetItem, static_cast<size_t>(PyTuple_Size(sequence.ptr()))};
  }
  return {};
}

}  // namespace

CachedRun::CachedRun(std::shared_ptr<const Executable> executable)
    : call_(std::move(executable)), ndarray_(nb::module_::import_("numpy").attr("ndarray")) {}

int CachedRun::call(nb::handle inputs, nb::handle outputs, bool converted) {
  const Executable& executable = call_.executable();
  const auto& in_specs = executable.inputs();
  const auto& out_specs = executable.outputs();
  const Items out = items_of(outputs);
  if (out.get == nullptr || out.count != out_specs.size()) return kOutputsRefused;
  const size_t n_out = out.count;
  SmallArray<BufferView> out_views(n_out);
  SmallArray<void*> out_data(n_out);
  auto* ndarray = reinterpret_cast<PyTypeObject*>(ndarray_.ptr());
  for (size_t j = 0; j < n_out; ++j) {
    nb::handle array = out.get(outputs.ptr(), static_cast<Py_ssize_t>(j));
    if (!PyObject_TypeCheck(array.ptr(), ndarray) || !out_views[j].acquire(array, true) ||
        !out_views[j].matches(out_specs[j], executable.output_bytes()[j], true)) {
      return kOutputsRefused;
    }
    out_data[j] = out_views[j].data();
  }
  const Items in = items_of(inputs);
  if (in.get == nullptr || in.count != in_specs.size()) return kInputsRefused;
  const size_t n_in = in.count;
  SmallArray<BufferView> in_views(n_in);
  SmallArray<const void*> in_data(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    nb::handle array = in.get(inputs.ptr(), static_cast<Py_ssize_t>(i));
    if (!in_views[i].acquire(array, false) ||
        !in_views[i].matches(in_specs[i], executable.input_bytes()[i], converted)) {
      return kInputsRefused;
    }
    in_data[i] = in_views[i].data();
  }
  nb::gil_scoped_release release;
  return call_.execute({in_data.data(), n_in}, {out_data.data(), n_out}) ? kRanAskingForVariant
                                                                         : kRan;
}

void CachedRun::make_outputs_with(nb::object empty, nb::list shapes, nb::list dtypes) {
  const size_t n_out = call_.executable().outputs().size();
  if (nb::len(shapes) != n_out || nb::len(dtypes) != n_out) {
    throw Error(ErrorKind::InvalidArgument, "make_outputs_with: one shape and dtype per output");
  }
  empty_args_.clear();
  for (size_t j = 0; j < n_out; ++j) {
    empty_args_.push_back(shapes[j]);
    empty_args_.push_back(dtypes[j]);
  }
  empty_ = std::move(empty);
}

nb::object CachedRun::run_new(nb::handle inputs) {
  if (!empty_.is_valid()) {
    throw Error(ErrorKind::InvalidArgument, "run_new: make_outputs_with was not called");
  }
  const size_t n_out = empty_args_.size() / 2;  // make_outputs_with checked it
  nb::object outputs = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(n_out)));
  if (!outputs.is_valid()) throw nb::python_error();
  for (size_t j = 0; j < n_out; ++j) {
    PyObject* args[2] = {empty_args_[2 * j].ptr(), empty_args_[2 * j + 1].ptr()};
    PyObject* array = PyObject_Vectorcall(empty_.ptr(), args, 2, nullptr);
    if (array == nullptr) throw nb::python_error();
    // Steals `array`, even when it fails. PyTuple_SetItem, not the macro: the stable ABI
    // (the abi3 wheel) has only the function.
    if (PyTuple_SetItem(outputs.ptr(), static_cast<Py_ssize_t>(j), array) != 0) {
      throw nb::python_error();
    }
  }
  switch (call(inputs, outputs, false)) {
    case kRan: return outputs;
    case kRanAskingForVariant: {
      nb::object list = nb::steal(PySequence_List(outputs.ptr()));
      if (!list.is_valid()) throw nb::python_error();
      return list;
    }
    default: return nb::none();
  }
}

void CachedRun::read_in_place(std::shared_ptr<const Executable> variant) {
  nb::gil_scoped_release release;
  call_.read_in_place(std::move(variant));
}

struct HeldViews {
  std::vector<std::unique_ptr<BufferView>> held;

  /// A view of `object` that matches `spec`, held until the BoundBuffers dies.
  void* take(nb::handle object, bool writable, const TensorSpec& spec, size_t bytes,
             const std::string& where) {
    auto view = std::make_unique<BufferView>();
    if (!view->acquire(object, writable) || !view->matches(spec, bytes, true)) {
      throw Error(ErrorKind::InvalidArgument,
                  "bind: " + where + " must be a " + (writable ? "writable " : "") +
                      "C-contiguous array of " + spec.to_string());
    }
    held.push_back(std::move(view));
    return held.back()->data();
  }
};

#ifdef CYXLA_TESTING
std::vector<bool> writes_in_place(const Executable& executable, nb::handle inputs,
                                  nb::handle outputs) {
  const size_t n_out = executable.outputs().size();
  if (nb::len(nb::borrow<nb::sequence>(outputs)) != n_out) {
    throw Error(ErrorKind::InvalidArgument, "writes_in_place: one array per output");
  }
  // Views held for the call, checked as bind checks them.
  HeldViews views;
  std::vector<const void*> in_data;
  std::vector<void*> out_data;
  nb::sequence in_seq = nb::borrow<nb::sequence>(inputs);
  if (nb::len(in_seq) != executable.inputs().size()) {
    throw Error(ErrorKind::InvalidArgument, "writes_in_place: one array per input");
  }
  for (size_t i = 0; i < executable.inputs().size(); ++i) {
    in_data.push_back(views.take(in_seq[i], false, executable.inputs()[i],
                                 executable.input_bytes()[i], "inputs[" + std::to_string(i) + "]"));
  }
  nb::sequence out_seq = nb::borrow<nb::sequence>(outputs);
  for (size_t j = 0; j < n_out; ++j) {
    out_data.push_back(views.take(out_seq[j], true, executable.outputs()[j],
                                  executable.output_bytes()[j],
                                  "outputs[" + std::to_string(j) + "]"));
  }
  auto flags = std::make_unique<bool[]>(n_out);
  {
    nb::gil_scoped_release release;
    executable.execute(in_data, out_data, {flags.get(), n_out});
  }
  return std::vector<bool>(flags.get(), flags.get() + n_out);
}
#endif

BoundBuffers::BoundBuffers(std::shared_ptr<const Executable> executable, nb::handle inputs,
                           nb::handle outputs)
    : views_(std::make_unique<HeldViews>()) {
  const auto& in_specs = executable->inputs();
  const auto& out_specs = executable->outputs();
  nb::sequence in_seq = nb::borrow<nb::sequence>(inputs);
  nb::sequence out_seq = nb::borrow<nb::sequence>(outputs);
  const size_t n_in = nb::len(in_seq), n_out = nb::len(out_seq);
  if (n_in != in_specs.size() || n_out != out_specs.size()) {
    throw Error(ErrorKind::InvalidArgument,
                "bind: the program takes " + std::to_string(in_specs.size()) + " inputs and " +
                    std::to_string(out_specs.size()) + " outputs, given " +
                    std::to_string(n_in) + " and " + std::to_string(n_out));
  }
  std::vector<const void*> in_data;
  std::vector<void*> out_data;
  for (size_t i = 0; i < n_in; ++i) {
    in_data.push_back(views_->take(in_seq[i], false, in_specs[i], executable->input_bytes()[i],
                                   "inputs[" + std::to_string(i) + "]"));
  }
  for (size_t j = 0; j < n_out; ++j) {
    out_data.push_back(views_->take(out_seq[j], true, out_specs[j],
                                    executable->output_bytes()[j],
                                    "outputs[" + std::to_string(j) + "]"));
  }
  handle_ = abi::Registry::instance().add(
      std::make_unique<BoundCall>(std::move(executable), in_data, out_data));
}

BoundBuffers::~BoundBuffers() {
  // The bound call reads and writes the views' memory: it ends first. A handle that
  // native code unbound already is ignored.
  nb::gil_scoped_release release;  // a call in flight on another thread may want the GIL
  abi::Registry::instance().release(handle_);
}

bool BoundBuffers::call() {
  nb::gil_scoped_release release;
  // Counted as the C API counts its calls of the handle (numba's among them), so that a
  // call from Python and one from C are never in the bound call at once.
  abi::Registry::Use use = abi::Registry::instance().call(handle_);
  if (use.entry() == nullptr) {
    throw Error(ErrorKind::InvalidArgument,
                "the bound call was unbound (cyxla_unbind of its handle)");
  }
  if (!use.alone()) return false;
  use.entry()->bound->call_alone();
  return true;
}

namespace {

/// The last failure of call_by_handle on this thread.
thread_local cyxla_Error last_failure = {CYXLA_OK, ""};

}  // namespace

int32_t call_by_handle(uint64_t bound) noexcept {
  cyxla_Error error;
  const cyxla_Status status = abi::table().call_bound(bound, &error);
  if (status != CYXLA_OK) [[unlikely]] last_failure = error;
  return status;
}

void raise_bound_failure(int status) {
  if (status == CYXLA_OK) return;
  // The message of this thread's last failure, when it has the same status: a status
  // from another thread (numba's prange) finds none, and says so.
  std::string message;
  if (last_failure.status == status) {
    message = last_failure.message;
  } else {
    message = "a bound call failed with cyxla_Status " + std::to_string(status) +
              " (its message was recorded on the thread that called it)";
  }
  last_failure = {CYXLA_OK, ""};
  const char* name = nullptr;
  switch (status) {
    case CYXLA_ERROR_INVALID_ARGUMENT:
    case CYXLA_ERROR_RELEASED:  // as a closed BoundCall raises from Python
      throw Error(ErrorKind::InvalidArgument, message);
    case CYXLA_ERROR_TYPE_MISMATCH:
      throw Error(ErrorKind::TypeMismatch, message);
    case CYXLA_ERROR_PJRT:
      throw Error(ErrorKind::Pjrt, message);
    case CYXLA_ERROR_BUSY:
      name = "BusyError";
      break;
    case CYXLA_ERROR_INTERNAL:
      throw std::runtime_error(message);
    default:
      throw Error(ErrorKind::InvalidArgument,
                  "check: " + std::to_string(status) + " is not a status of a bound call");
  }
  const nb::object cls = nb::module_::import_("cyxla._errors").attr(name);
  PyErr_SetObject(cls.ptr(), cls(nb::str(message.c_str())).ptr());
  throw nb::python_error();
}

}  // namespace cyxla::python
