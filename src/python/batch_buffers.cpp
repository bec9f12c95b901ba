// The Python path of a batched executable: buffer views checked for size, then one call.
#include "python/batch_buffers.hpp"

#include <optional>
#include <string>

#include "common/checked.hpp"
#include "common/error.hpp"
#include "runtime/small_array.hpp"

namespace nb = nanobind;

namespace cyxla::python {
namespace {

/// A C-contiguous buffer view of a Python object, released on destruction.
class ContiguousView {
 public:
  ContiguousView() = default;
  ContiguousView(ContiguousView&&) = delete;
  ContiguousView& operator=(ContiguousView&&) = delete;
  ContiguousView(const ContiguousView&) = delete;
  ContiguousView& operator=(const ContiguousView&) = delete;
  ~ContiguousView() {
    if (held_) PyBuffer_Release(&view_);
  }

  /// Takes the view of `object`, which must have `bytes` bytes; `what` names it.
  void acquire(nb::handle object, bool writable, size_t bytes, const std::string& what) {
    const int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(object.ptr(), &view_, flags) != 0) {
      PyErr_Clear();
      throw Error(ErrorKind::InvalidArgument,
                  what + " must be a C-contiguous" + (writable ? " writable" : "") + " array");
    }
    held_ = true;
    if (static_cast<size_t>(view_.len) != bytes) {
      throw Error(ErrorKind::InvalidArgument, what + " has " + std::to_string(view_.len) +
                                                  " bytes, the points need " +
                                                  std::to_string(bytes));
    }
  }
  void* data() const noexcept { return view_.buf; }

 private:
  // Filled by acquire() and read only once it succeeded: not cleared at construction, which
  // for the 16 views a call keeps inline would cost a small call more than its checks.
  Py_buffer view_;
  bool held_ = false;
};

}  // namespace

void run_batch_on_buffers(const BatchedExecutable& executable, size_t n, nb::handle inputs,
                          nb::handle outputs) {
  nb::sequence in_seq = nb::borrow<nb::sequence>(inputs);
  nb::sequence out_seq = nb::borrow<nb::sequence>(outputs);
  const size_t n_in = executable.inputs().size(), n_out = executable.outputs().size();
  if (nb::len(in_seq) != n_in || nb::len(out_seq) != n_out) {
    throw Error(ErrorKind::InvalidArgument,
                "the program takes " + std::to_string(n_in) + " inputs and " +
                    std::to_string(n_out) + " outputs, given " +
                    std::to_string(nb::len(in_seq)) + " and " + std::to_string(nb::len(out_seq)));
  }
  // n is the caller's: a product that wrapped would let a small buffer pass for n points.
  const auto bytes_of = [n](size_t point, const std::string& what) {
    const std::optional<size_t> bytes = checked_product(n, point);
    if (!bytes) {
      throw Error(ErrorKind::InvalidArgument,
                  std::to_string(n) + " points of " + what + " (" + std::to_string(point) +
                      " bytes each) are more bytes than a size_t counts");
    }
    return *bytes;
  };
  SmallArray<ContiguousView> in_views(n_in), out_views(n_out);
  SmallArray<const void*> in_data(n_in);
  SmallArray<void*> out_data(n_out);
  for (size_t i = 0; i < n_in; ++i) {
    const std::string what = "input " + std::to_string(i);
    in_views[i].acquire(in_seq[i], false, bytes_of(executable.input_bytes()[i], what), what);
    in_data[i] = in_views[i].data();
  }
  for (size_t j = 0; j < n_out; ++j) {
    const std::string what = "output " + std::to_string(j);
    out_views[j].acquire(out_seq[j], true, bytes_of(executable.output_bytes()[j], what), what);
    out_data[j] = out_views[j].data();
  }
  nb::gil_scoped_release release;
  executable.execute(n, {in_data.data(), n_in}, {out_data.data(), n_out});
}

}  // namespace cyxla::python
