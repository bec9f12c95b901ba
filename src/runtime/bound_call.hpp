// A program bound to the caller's memory: the input buffers are made once, at bind time,
// and every call is the execute and the outputs' reading.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "pjrt/handles.hpp"
#include "runtime/executable.hpp"
#include "runtime/shared_copy.hpp"

namespace cyxla {

class BoundCall {
 public:
  /// Binds `executable` to the host memory `inputs[i]` (input_bytes()[i] bytes each) and
  /// `outputs[j]` (output_bytes()[j] bytes each). The caller checks the counts, types and
  /// null pointers (the C API's bind, the Python binding). On the CPU an aligned input is
  /// aliased by its buffer; an unaligned one gets an aligned copy of its own, refreshed
  /// on every call. A donated output (Executable) is written in place where it can be.
  /// The memory must stay valid until the BoundCall is destroyed.
  BoundCall(std::shared_ptr<const Executable> executable, std::span<const void* const> inputs,
            std::span<void* const> outputs);
  BoundCall(const BoundCall&) = delete;
  BoundCall& operator=(const BoundCall&) = delete;

  /// Runs the program on what the input memory holds now and writes the outputs. Returns
  /// false, running nothing, when another thread is in a call of this BoundCall (one
  /// thread at a time; any thread). Allocates nothing of its own. Throws cyxla::Error.
  bool call();
  /// call() for a caller that knows no other thread is in a call of this BoundCall (the
  /// C ABI counts the calls of its handle): the same, without the flag that call() sets.
  void call_alone();

  const std::shared_ptr<const Executable>& shared_executable() const noexcept {
    return executable_;
  }

 private:
  struct Free {
    void operator()(void* p) const noexcept { std::free(p); }
  };

  std::shared_ptr<const Executable> executable_;  // held alive while bound
  std::vector<const void*> inputs_;
  std::vector<void*> outputs_;
  // Aligned memory of its own: copies of the unaligned inputs, and the results of the
  // donated outputs that cannot be written in place.
  std::unique_ptr<void, Free> staging_;
  std::vector<HostCopy> staged_;  // unaligned inputs into the copies their buffers alias
  bool resident_ = false;  // whether buffers_ hold the inputs (the CPU)
  std::vector<pjrt::Buffer> buffers_;  // one per input, made once
  std::vector<void*> donors_;  // per donated output, the memory it is written to
  std::vector<pjrt::Buffer> donor_buffers_;  // made on each call, consumed by it
  std::vector<PJRT_Buffer*> arguments_;
  std::vector<PJRT_Buffer*> results_;  // room for the outputs' buffers of one call
  // On the kernel runner (Executable::runner()): the call, laid out once in the caller's
  // memory and memory of the bound call's own, with every address resolved.
  std::optional<Executable::ResolvedKernelCall> kernel_call_;
  std::unique_ptr<void, Free> kernel_memory_;
  std::atomic<bool> busy_{false};
};

}  // namespace cyxla
