// SciPy's C callbacks over a bound call (Executable.low_level_callable): quad's integrand
// and generic_filter's function as C function pointers, with no Python in an evaluation.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string_view.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "python/bindings.hpp"
#include "runtime/bound_call.hpp"
#include "runtime/executable.hpp"
#include "runtime/host_memory.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cyxla::python {
namespace {

// The capsule names scipy.LowLevelCallable reads as the C signatures (scipy checks the
// text: scipy/integrate/_quadpack's and scipy/ndimage/_nd_image's tables).
constexpr const char* kQuadSignature = "double (int, double *, void *)";
constexpr const char* kNdimageSignature = "int (double *, intptr_t, double *, void *)";

bool is_real(PJRT_Buffer_Type type) noexcept {
  return type == PJRT_Buffer_Type_F32 || type == PJRT_Buffer_Type_F64;
}

/// "(f32[3], f64[])": the specs, for messages.
std::string listed(const std::vector<TensorSpec>& specs) {
  std::string text = "(";
  for (size_t i = 0; i < specs.size(); ++i) text += (i ? ", " : "") + specs[i].to_string();
  return text + ")";
}

/// A program of one 1-D float32 or float64 input and one float32 or float64 scalar
/// output, bound to aligned memory of its own: evaluate() writes doubles into the input,
/// calls, and reads the output as a double. What a callback's user_data points to.
class ScalarCall {
 public:
  /// The call of `executable`, or InvalidArgument when its inputs and outputs do not fit
  /// `kind` ("quad" or "ndimage").
  ScalarCall(std::shared_ptr<const Executable> executable, std::string_view kind) {
    const auto& ins = executable->inputs();
    const auto& outs = executable->outputs();
    const bool fits = ins.size() == 1 && ins[0].dims.size() == 1 && ins[0].dims[0] >= 1 &&
                      is_real(ins[0].type) && outs.size() == 1 && outs[0].dims.empty() &&
                      is_real(outs[0].type);
    if (!fits) {
      throw Error(ErrorKind::InvalidArgument,
                  "low_level_callable('" + std::string(kind) +
                      "'): the program must take one 1-D f32 or f64 array and return one "
                      "f32 or f64 scalar; it takes " +
                      listed(ins) + " and returns " + listed(outs));
    }
    in_type_ = ins[0].type;
    out_type_ = outs[0].type;
    length_ = ins[0].dims[0];
    input_.reset(allocate_aligned(executable->input_bytes()[0]));
    output_.reset(allocate_aligned(executable->output_bytes()[0]));
    if (input_ == nullptr || output_ == nullptr) throw std::bad_alloc();
    std::memset(input_.get(), 0, executable->input_bytes()[0]);
    const void* inputs[] = {input_.get()};
    void* outputs[] = {output_.get()};
    call_ = std::make_unique<BoundCall>(std::move(executable), inputs, outputs);
  }
  ScalarCall(const ScalarCall&) = delete;
  ScalarCall& operator=(const ScalarCall&) = delete;

  /// The program at the `n` doubles of `x` into `*result`; false, leaving `*result`
  /// alone, when `n` is not the program's length or the call fails. Any thread; calls
  /// from several wait for each other. Takes no GIL and throws nothing.
  bool evaluate(const double* x, int64_t n, double* result) noexcept {
    if (n != length_ || x == nullptr || result == nullptr) return false;
    try {
      std::lock_guard lock(mutex_);
      if (in_type_ == PJRT_Buffer_Type_F64) {
        std::memcpy(input_.get(), x, static_cast<size_t>(n) * sizeof(double));
      } else {
        auto* in = static_cast<float*>(input_.get());
        for (int64_t i = 0; i < n; ++i) in[i] = static_cast<float>(x[i]);
      }
      if (!call_->call()) return false;  // never busy: the mutex lets one thread in
      *result = out_type_ == PJRT_Buffer_Type_F64
                    ? *static_cast<const double*>(output_.get())
                    : static_cast<double>(*static_cast<const float*>(output_.get()));
      return true;
    } catch (...) {  // nothing unwinds into scipy's C
      return false;
    }
  }

 private:
  struct Free {
    void operator()(void* p) const noexcept { std::free(p); }
  };

  std::mutex mutex_;
  PJRT_Buffer_Type in_type_ = PJRT_Buffer_Type_INVALID;
  PJRT_Buffer_Type out_type_ = PJRT_Buffer_Type_INVALID;
  int64_t length_ = 0;
  std::unique_ptr<void, Free> input_, output_;
  std::unique_ptr<BoundCall> call_;  // declared after the memory it reads: destroyed first
};

/// quad's integrand: the program at x[0..n-1]; NaN when it cannot be evaluated.
double quad_callback(int n, double* x, void* user_data) noexcept {
  double result;
  if (!static_cast<ScalarCall*>(user_data)->evaluate(x, n, &result)) return std::nan("");
  return result;
}

/// generic_filter's function: the program at the footprint's values; 0 (scipy then
/// raises) when it cannot be evaluated.
int ndimage_callback(double* buffer, std::intptr_t filter_size, double* return_value,
                     void* user_data) noexcept {
  return static_cast<ScalarCall*>(user_data)->evaluate(buffer, filter_size, return_value) ? 1
                                                                                          : 0;
}

/// The capsule's destructor: the ScalarCall it owns, released.
void destroy(void* call) noexcept { std::unique_ptr<ScalarCall>{static_cast<ScalarCall*>(call)}; }

}  // namespace

void bind_low_level(nb::module_& m) {
  // Internal (Executable.low_level_callable checks the program first), hence the underscore.
  m.def(
      "_low_level_callable",
      [](std::shared_ptr<Executable> executable, std::string_view kind) {
        void* function = nullptr;
        const char* signature = nullptr;
        if (kind == "quad") {
          function = reinterpret_cast<void*>(&quad_callback);
          signature = kQuadSignature;
        } else if (kind == "ndimage") {
          function = reinterpret_cast<void*>(&ndimage_callback);
          signature = kNdimageSignature;
        } else {
          throw Error(ErrorKind::InvalidArgument,
                      "low_level_callable: kind must be 'quad' or 'ndimage', given '" +
                          std::string(kind) + "'");
        }
        auto call = std::make_unique<ScalarCall>(std::move(executable), kind);
        nb::capsule user_data(call.get(), "cyxla.ScalarCall", &destroy);
        call.release();  // the capsule owns it now
        return nb::make_tuple(nb::capsule(function, signature), user_data);
      },
      "executable"_a, "kind"_a,
      "(function, user_data) for scipy.LowLevelCallable: a capsule of the C callback of "
      "`kind` ('quad': double (int, double *, void *); 'ndimage': int (double *, intptr_t, "
      "double *, void *)) named with its signature, and a capsule owning the program's "
      "bound call, its user_data. The program takes one 1-D f32 or f64 array and returns "
      "one f32 or f64 scalar, else InvalidArgument.");
}

}  // namespace cyxla::python
