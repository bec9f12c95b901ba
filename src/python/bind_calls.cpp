// The per-call objects of Executable.run and cyxla.bind (src/python/host_buffers.hpp),
// and the memory of run's new outputs (src/python/output_memory.hpp).
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>

#include "python/bindings.hpp"
#include "python/host_buffers.hpp"
#include "python/output_memory.hpp"
#include "python/specs.hpp"
#include "runtime/executable.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cyxla::python {

void bind_calls(nb::module_& m) {
  // Executable.run's new outputs (internal, hence the underscore).
  m.def("_recycled_bytes", &recycled_bytes, "bytes"_a,
        "A writable uint8 array of `bytes` bytes, 64-byte aligned, whose memory is reused "
        "by a later call once the array is freed.");

  // Internal (Executable.run's per-call path), hence the underscore.
  nb::class_<CachedRun> cached_run(m, "_CachedRun",  // GCOVR_EXCL_LINE
                                   "Executable.run's calls, with the buffers of the last "
                                   "call's inputs kept for the next "
                                   "(runtime/cached_call.hpp).");
  // What a call returns, in one home: src/python/host_buffers.hpp.
  cached_run.attr("RAN") = int{CachedRun::kRan};
  cached_run.attr("INPUTS_REFUSED") = int{CachedRun::kInputsRefused};
  cached_run.attr("OUTPUTS_REFUSED") = int{CachedRun::kOutputsRefused};
  cached_run.attr("RAN_ASKING_FOR_VARIANT") = int{CachedRun::kRanAskingForVariant};
  cached_run.def(nb::init<std::shared_ptr<Executable>>(), "executable"_a)
      .def("__call__", &CachedRun::call, "inputs"_a, "outputs"_a, "converted"_a = false,
           "Runs the program on `inputs` into `outputs`: RAN, or RAN_ASKING_FOR_VARIANT when "
           "it asks for the variant that reads the unaligned inputs in place; or runs nothing "
           "and returns OUTPUTS_REFUSED when `outputs` is not a list or tuple of NumPy arrays "
           "exactly the outputs, else INPUTS_REFUSED when `inputs` are not exactly the inputs "
           "(a list, a strided or misaligned array, another dtype).")
      .def("make_outputs_with", &CachedRun::make_outputs_with, "empty"_a, "shapes"_a,
           "dtypes"_a,
           "Makes run_new's output j with empty(shapes[j], dtypes[j]) (numpy.empty).")
      .def("run_new", &CachedRun::run_new, "inputs"_a,
           "Executable.run without out=, in one call: makes the outputs and runs the program "
           "on `inputs` (not converted) into them. Returns them as a tuple when it ran, as a "
           "list when it ran and asks for the variant (see __call__), and None when the "
           "inputs are refused, running nothing.")
      .def(
          "variant_inputs",
          [](const CachedRun& r) { return from_specs(r.variant_inputs()); },
          "The inputs of the variant the call that returned RAN_ASKING_FOR_VARIANT asked for "
          "(runtime/in_place_variant.hpp): the program's, a large unaligned one as a 1-D "
          "array 64 bytes longer, then s32[k], the offsets.")
      .def("read_in_place", &CachedRun::read_in_place, "variant"_a,
           "Runs `variant`, a compile of the program that takes variant_inputs(), for the "
           "calls whose unaligned inputs it reads in place.")
      .def_prop_ro("calls_read_in_place", &CachedRun::calls_read_in_place);

  nb::class_<BoundBuffers>(m, "BoundCall",  // GCOVR_EXCL_LINE
                           "A program bound to the memory of NumPy arrays.")
      .def(nb::init<std::shared_ptr<Executable>, nb::handle, nb::handle>(), "executable"_a,
           "inputs"_a, "outputs"_a)
      .def("__call__", &BoundBuffers::call,
           "Runs the program on the inputs' current contents and writes the outputs; False, "
           "running nothing, while another thread is in a call of this bound call.")
      .def_prop_ro("handle", &BoundBuffers::handle,
                   "Its handle in the C API, which cyxla_call_bound takes.");

  // cyxla.numba's function pointer and its check (internal, hence the underscores).
  m.def(
      "_call_by_handle_address",
      [] { return reinterpret_cast<uintptr_t>(&call_by_handle); },
      "The address of int32_t call_by_handle(uint64_t bound): cyxla_call_bound's status, "
      "its failure's message kept for _raise_bound_failure on the calling thread.");
  m.def("_raise_bound_failure", &raise_bound_failure, "status"_a,
        "Raises the error of `status`, returned by call_by_handle on this thread, with its "
        "message; returns for 0 (CYXLA_OK).");
}

}  // namespace cyxla::python
