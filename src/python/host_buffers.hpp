// Running an executable on Python objects that export C-contiguous buffers (NumPy arrays).
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <vector>

#include "runtime/bound_call.hpp"
#include "runtime/cached_call.hpp"
#include "runtime/executable.hpp"

namespace cyxla::python {

/// Executable.run's per-call path: a CachedCall over the buffers of Python objects.
class CachedRun {
 public:
  /// What call() did: ran, or why it ran nothing; or ran, and asks for the variant that
  /// reads its unaligned inputs in place (CachedCall::execute).
  enum Outcome : int {
    kRan = 0,
    kInputsRefused = 1,
    kOutputsRefused = 2,
    kRanAskingForVariant = 3,
  };

  explicit CachedRun(std::shared_ptr<const Executable> executable);

  /// Runs the program on the buffers of `inputs` into those of `outputs` (CachedCall) and
  /// returns kRan; runs nothing and returns kOutputsRefused unless `outputs` is a list or
  /// tuple of NumPy arrays that are exactly the outputs (as the core carries them, see
  /// run_on_buffers), else kInputsRefused unless `inputs` is a list or tuple of arrays
  /// exactly the inputs (`converted`: as run_on_buffers). Builds no error text: the
  /// caller checks what was refused and says why. The GIL is released while it runs.
  int call(nanobind::handle inputs, nanobind::handle outputs, bool converted);

  /// run_new's outputs: `empty(shapes[j], dtypes[j])` (numpy.empty) makes output j.
  void make_outputs_with(nanobind::object empty, nanobind::list shapes, nanobind::list dtypes);
  /// Executable.run without `out`, in one call from Python: makes the outputs
  /// (make_outputs_with) and runs the program on the buffers of `inputs` into them (as
  /// call(), unconverted). Returns them as a tuple when it ran; as a list when it ran and
  /// asks for the variant (kRanAskingForVariant); None when `inputs` were refused.
  nanobind::object run_new(nanobind::handle inputs);

  /// CachedCall's variant_inputs, read_in_place (with the GIL released while it waits for
  /// a call in another thread) and calls_read_in_place.
  std::vector<TensorSpec> variant_inputs() const { return call_.variant_inputs(); }
  void read_in_place(std::shared_ptr<const Executable> variant);
  size_t calls_read_in_place() const noexcept { return call_.calls_read_in_place(); }

 private:
  CachedCall call_;
  nanobind::object ndarray_;  // numpy.ndarray, the one type `outputs` may hold
  nanobind::object empty_;    // make_outputs_with's
  std::vector<nanobind::object> empty_args_;  // per output: its shape, then its dtype
};

#ifdef CYXLA_TESTING
// Test hooks (src/python/bind_testing.cpp).

/// Runs `executable` (Executable::execute, the C API's path, without CachedRun's kept
/// buffers) with the buffers of `inputs` and writes its results into those of `outputs`. Returns false, running nothing, when the inputs are not exactly what the
/// program takes (count, element type, shape, C-contiguity); `converted` lets bfloat16
/// inputs arrive as uint16 arrays.
/// Outputs (bfloat16 ones as uint16) of the wrong count or size raise InvalidArgument.
/// The GIL is released while the plugin runs.
bool run_on_buffers(const Executable& executable, nanobind::handle inputs,
                    nanobind::handle outputs, bool converted);

/// Runs `executable` once, as run_on_buffers does with arrays that are exactly the
/// program's (else InvalidArgument), and returns per output whether the plugin wrote the
/// result straight into the output's memory.
std::vector<bool> writes_in_place(const Executable& executable, nanobind::handle inputs,
                                  nanobind::handle outputs);

#endif

/// Buffer views of Python objects, held until destroyed.
struct HeldViews;

/// A BoundCall over the buffers of Python objects (NumPy arrays), held while it lives:
/// their memory stays allocated, and exporters that count their views (bytearray) refuse
/// to resize. The BoundCall is registered as a bound call of the C API, whose handle
/// (cyxla_call_bound's) compiled code calls it by: numba's nopython mode, through
/// call_by_handle.
class BoundBuffers {
 public:
  /// Binds `executable` to the buffers of `inputs` and `outputs`, which must be exactly
  /// the program's (count, element type as the core carries it, shape, C-contiguity;
  /// outputs writable), else InvalidArgument naming the argument.
  BoundBuffers(std::shared_ptr<const Executable> executable, nanobind::handle inputs,
               nanobind::handle outputs);
  BoundBuffers(const BoundBuffers&) = delete;
  BoundBuffers& operator=(const BoundBuffers&) = delete;
  /// Unbinds (waiting for a call in flight on another thread), then releases the views.
  ~BoundBuffers();

  /// BoundCall::call with the GIL released; through the registry, as cyxla_call_bound, so
  /// that a call from Python and one from C (numba) are one at a time, and a handle that
  /// native code unbound (cyxla_unbind) raises InvalidArgument instead of running.
  bool call();

  /// The bound call's handle in the C API (never 0).
  uint64_t handle() const noexcept { return handle_; }

 private:
  std::unique_ptr<HeldViews> views_;
  uint64_t handle_ = 0;  // released in the destructor, before the views
};

/// cyxla_call_bound for code compiled elsewhere (numba's nopython mode, through ctypes):
/// runs the bound call `bound` and returns its cyxla_Status; a failure's message is kept
/// for raise_bound_failure on this thread. Takes no GIL; throws nothing.
int32_t call_by_handle(uint64_t bound) noexcept;

/// Raises the Python error of `status`, a cyxla_Status that call_by_handle returned on
/// this thread, with the message of its failure; returns for CYXLA_OK.
void raise_bound_failure(int status);

}  // namespace cyxla::python
