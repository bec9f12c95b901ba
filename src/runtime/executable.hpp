// A compiled program on the runtime's device, and the hot path that runs it.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "compiled/runner_verdict.hpp"
#include "kernels/kernel_program.hpp"
#include "pjrt/handles.hpp"
#include "runtime/host_memory.hpp"
#include "runtime/shared_copy.hpp"
#include "runtime/tensor_spec.hpp"

namespace cyxla {

class Runtime;
struct LastKernelCall;  // kernel_calls.cpp

class Executable {
 public:
  /// `donated_outputs[k]` is the output whose result the program may write into its
  /// parameter inputs.size() + k, which aliases that output (see cyxla/_lower/lowering.py):
  /// execute passes the caller's output memory there, so the plugin writes the result in
  /// place.
  Executable(std::shared_ptr<const Runtime> runtime, pjrt::LoadedExecutable loaded,
             std::vector<TensorSpec> inputs, std::vector<size_t> donated_outputs = {});

  /// An executable of the plugin's serialized form `serialized`, whose outputs are
  /// `outputs` (as the plugin reported them when it compiled it, and a cache entry
  /// recorded), not yet loaded by the plugin: PJRT deserializes it (and the runtime opens
  /// its plugin) only when something first needs its PJRT handle: loaded(), fingerprint(),
  /// the buffers of execute_buffers. For programs on the kernel runner, which need none.
  Executable(std::shared_ptr<const Runtime> runtime, std::shared_ptr<const std::string> serialized,
             std::vector<TensorSpec> inputs, std::vector<TensorSpec> outputs,
             std::vector<size_t> donated_outputs);

  const std::vector<TensorSpec>& inputs() const noexcept { return inputs_; }
  const std::vector<TensorSpec>& outputs() const noexcept { return outputs_; }
  const std::vector<size_t>& input_bytes() const noexcept { return input_bytes_; }
  const std::vector<size_t>& output_bytes() const noexcept { return output_bytes_; }
  const std::vector<size_t>& donated_outputs() const noexcept { return donated_outputs_; }
  const Runtime& runtime() const noexcept { return *runtime_; }
  /// The PJRT executable, deserialized now if it was deferred. Throws cyxla::Error (the
  /// plugin's, when it cannot be opened or cannot load the executable).
  PJRT_LoadedExecutable* loaded() const {
    // Acquire: pairs with deserialize_deferred's release.
    PJRT_LoadedExecutable* loaded = loaded_raw_.load(std::memory_order_acquire);
    return loaded != nullptr ? loaded : deserialize_deferred();
  }
  /// Whether the PJRT executable exists yet (a deferred one's may not).
  bool is_loaded() const noexcept {
    return loaded_raw_.load(std::memory_order_acquire) != nullptr;
  }

  /// Runs the program on host memory: `inputs[i]` holds a dense row-major array of
  /// inputs()[i], `outputs[j]` receives output_bytes()[j] bytes. The caller checks the
  /// counts, types and null pointers (the C API's execute, run_on_buffers); this checks
  /// nothing on the hot path. A donated output is written in place where its memory is
  /// aligned and overlaps no other argument, and copied from scratch memory otherwise.
  /// `in_place`, when not empty, receives per output whether the plugin wrote it in place.
  /// Safe to call from many threads at once. Throws cyxla::Error.
  void execute(std::span<const void* const> inputs, std::span<void* const> outputs,
               std::span<bool> in_place = {}) const;

  /// Where the donated outputs are written, per donated_outputs()[k]: the caller's memory
  /// of that output where the result can be written straight into it (on the CPU: aligned,
  /// and overlapping none of `inputs` and no other of `outputs`; elsewhere always), null
  /// where it needs staging memory. `donors` has one slot per donated output.
  void place_donors(std::span<const void* const> inputs, std::span<void* const> outputs,
                    std::span<void*> donors) const noexcept;
  /// The staging memory the CPU needs for a call: a round_up()ed slot per input that is
  /// not aligned and per null one of `donors` (place_donors); 0 elsewhere than on the CPU.
  size_t staged_bytes(std::span<const void* const> inputs,
                      std::span<void* const> donors) const noexcept;
  /// The buffer of the donated parameter of output `output`, over `data` (output_bytes()
  /// of it): on the CPU the plugin may write the result there.
  pjrt::Buffer donor_buffer(size_t output, void* data) const;

  /// A buffer of input `input` over `data`: on the CPU it aliases `data` (which must be
  /// aligned, see host_memory.hpp, and stay valid while the buffer lives), elsewhere it is
  /// a copy on the device.
  pjrt::Buffer host_buffer(size_t input, const void* data) const;

  /// Runs the program on argument buffers already on the device (one per input, then one
  /// per donated output, in order)
  /// and reads its results into `outputs` as execute() does; `results` has room for one
  /// buffer per output (the caller's, so that this allocates nothing). Not for callers
  /// outside the runtime: BoundCall holds such buffers.
  void execute_buffers(PJRT_Buffer* const* arguments, std::span<PJRT_Buffer*> results,
                       std::span<void* const> outputs, std::span<bool> in_place = {}) const;

  /// The plugin's serialized form, loadable with Runtime::deserialize. An executable the
  /// plugin deserialized may serialize without its compiled objects (the CPU plugin's do);
  /// a deferred one returns the form it was made from, objects and all.
  std::string serialize() const;
  /// The plugin's fingerprint of the compiled code ("" if it has none).
  std::string fingerprint() const;

  /// A kernel-runner call's memory (runner() is Kernels): the staging that
  /// staged_bytes(inputs, donors) says, then the program's scratch.
  size_t kernel_call_bytes(std::span<const void* const> inputs,
                           std::span<void* const> donors) const noexcept;
  /// Lays out a kernel-runner call in `memory` (kernel_call_bytes() of aligned memory):
  /// `bases` receives each allocation's address. An aligned input is its own memory; an
  /// unaligned one gets staging there, into which the call copies it (run_resolved); a
  /// donated output goes to `donors` (place_donors) or staging; an output that may be
  /// placed straight in the caller's memory (aligned, overlapping nothing) is.
  void lay_out_kernel_call(std::span<const void* const> inputs, std::span<void* const> outputs,
                           std::span<void* const> donors, std::byte* memory,
                           std::span<std::byte*> bases) const noexcept;

  /// A kernel-runner call over memory that stays where it is (a bound call's): every
  /// address its steps use, resolved once, and the copies its layout needs on each call.
  struct ResolvedKernelCall {
    std::vector<kernels::KernelArg> slices;  // KernelProgram::resolve
    std::vector<HostCopy> inputs_staged;     // unaligned inputs into their staging
    std::vector<HostCopy> outputs_copied;    // outputs not written in place
    std::vector<char> in_place;              // per output: whether the kernels write it there
  };
  /// The call laid out by lay_out_kernel_call in `bases`, over `inputs` and `outputs`,
  /// into `call` (its vectors' capacity reused).
  void resolve_kernel_call(std::span<const void* const> inputs, std::span<void* const> outputs,
                           std::span<std::byte* const> bases, ResolvedKernelCall& call) const;
  /// Runs it on what its input memory holds now. Allocates nothing.
  void run_resolved(const ResolvedKernelCall& call) const;

  /// Which runner the executable's compiled form allows, and why (src/compiled/).
  const compiled::RunnerVerdict& runner_verdict() const noexcept { return judged_.verdict; }
  /// Its compiled form as the compiler made it (thunks, buffers, objects), or null when
  /// it was not read or could not be.
  const compiled::CompiledForm* compiled_form() const noexcept { return judged_.form.get(); }
  /// Which runner its calls take: the kernel runner where the verdict allows it, it was
  /// not forced off, and its objects loaded; PJRT otherwise.
  compiled::Runner runner() const noexcept {
    return kernels_ ? compiled::Runner::Kernels : compiled::Runner::Pjrt;
  }
  /// Why runner() is what it is: the verdict's reason, or why the kernel runner that the
  /// verdict allows was not taken.
  const std::string& runner_reason() const noexcept { return runner_reason_; }
  /// Set once, by whoever read its compiled form (load_or_compile), before the executable
  /// is shared with other threads: the verdict, and the kernel runner's program where the
  /// verdict allows it and `forced_pjrt` (why PJRT is asked for) is empty.
  void set_judged(compiled::Judged judged, const std::string& forced_pjrt = {});

 private:
  void execute_kernels(std::span<const void* const> inputs, std::span<void* const> outputs,
                       std::span<bool> in_place) const;
  /// Lays out and resolves a call over `inputs` and `outputs` in the thread's scratch, as
  /// the call `last` remembers (kernel_calls.cpp).
  void lay_out_in_thread(std::span<const void* const> inputs, std::span<void* const> outputs,
                         LastKernelCall& last) const;
  void execute_pjrt(std::span<const void* const> inputs, std::span<void* const> outputs,
                    std::span<bool> in_place) const;
  bool writable_in_place(size_t output, const void* data, std::span<const void* const> inputs,
                         std::span<void* const> outputs) const noexcept;
  /// A buffer of `spec` over `data`: with `on_host` semantics on the CPU, a copy elsewhere.
  pjrt::Buffer buffer_over(const TensorSpec& spec, const void* data,
                           PJRT_HostBufferSemantics on_host) const;

  PJRT_LoadedExecutable* deserialize_deferred() const;
  /// Each spec's bytes, once (input_bytes_, output_bytes_); TypeMismatch for an element
  /// type cyxla does not support. set_output_bytes also checks donated_outputs_.
  void set_input_bytes();
  void set_output_bytes();

  static uint64_t new_id() noexcept;

  // Which executable this is, for a thread's memory of its last call (execute_kernels):
  // unlike an address, never that of another executable later.
  const uint64_t id_ = new_id();
  std::shared_ptr<const Runtime> runtime_;
  // A deferred executable's form (null otherwise), deserialized into loaded_ once, under
  // deserialize_mutex_, before loaded_raw_ publishes it; then only read.
  std::shared_ptr<const std::string> serialized_;
  mutable std::mutex deserialize_mutex_;
  mutable pjrt::LoadedExecutable loaded_;
  mutable std::atomic<PJRT_LoadedExecutable*> loaded_raw_{nullptr};
  std::vector<TensorSpec> inputs_;
  std::vector<TensorSpec> outputs_;
  std::vector<size_t> input_bytes_, output_bytes_;  // bytes() of each spec, once
  std::vector<size_t> donated_outputs_;
  compiled::Judged judged_{
      {compiled::Runner::Pjrt, "its compiled form was not read: it was not loaded by load_or_compile"},
      nullptr};
  std::string runner_reason_ = judged_.verdict.reason;
  std::shared_ptr<const kernels::KernelProgram> kernels_;  // null on PJRT
};

}  // namespace cyxla
