// cyxla._benchmark: native loops for `python -m cyxla bench` and the native tests. It is
// built like a downstream module, from the public headers only (cyxla.hpp over the
// capsule), plus one raw PJRT loop, through cyxla's private PJRT declarations, that is
// the floor cyxla is measured against.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cyxla/cyxla.hpp"
#include "pjrt/pjrt_c_api.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using HostArray = nb::ndarray<nb::device::cpu, nb::c_contig>;
using ReadOnlyArray = nb::ndarray<nb::ro, nb::device::cpu, nb::c_contig>;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Where a loop writes the nanoseconds of each call, when asked to.
using Latencies = nb::ndarray<double, nb::ndim<1>, nb::device::cpu, nb::c_contig>;

/// Seconds for `calls` calls of `call`; with `latencies`, also each call's nanoseconds
/// (one clock read per call, as the loop without them makes: each read ends one call and
/// starts the next).
template <class Call>
double timed_calls(size_t calls, const std::optional<Latencies>& latencies, const Call& call) {
  const auto start = Clock::now();
  if (!latencies) {
    for (size_t n = 0; n < calls; ++n) call();
    return seconds_since(start);
  }
  double* ns = latencies->data();
  auto last = start;
  for (size_t n = 0; n < calls; ++n) {
    call();
    const auto now = Clock::now();
    ns[n] = std::chrono::duration<double, std::nano>(now - last).count();
    last = now;
  }
  return std::chrono::duration<double>(last - start).count();
}

/// Refuses a bad argument before anything runs: ValueError naming `argument`.
void require(bool ok, const std::string& argument, const std::string& what) {
  if (!ok) throw nb::value_error((argument + ": " + what).c_str());
}

void require_room(const std::optional<Latencies>& latencies, size_t calls) {
  if (latencies) {
    require(latencies->shape(0) >= calls, "latencies",
            "has room for " + std::to_string(latencies->shape(0)) + " calls, given " +
                std::to_string(calls));
  }
}

void require_threads(size_t threads) {
  // A bound well above any machine's cores, so that an absurd count is refused by name.
  constexpr size_t kMostThreads = 4096;
  require(threads != 0 && threads <= kMostThreads, "threads",
          "must be 1 to " + std::to_string(kMostThreads) + ", given " + std::to_string(threads));
}

/// Checks `in` and `out` against the program: one array per input of its exact size,
/// one per output with room for what the program writes.
void check_arrays(const cyxla::native::Program& program, const std::vector<ReadOnlyArray>& in,
                  const std::vector<HostArray>& out) {
  require(in.size() == program.num_inputs(), "inputs",
          "the program takes " + std::to_string(program.num_inputs()) + " inputs, given " +
              std::to_string(in.size()));
  require(out.size() == program.num_outputs(), "outputs",
          "the program has " + std::to_string(program.num_outputs()) + " outputs, given " +
              std::to_string(out.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    require(in[i].nbytes() == program.input_bytes(i), "inputs[" + std::to_string(i) + "]",
            "has " + std::to_string(in[i].nbytes()) + " bytes, the program takes " +
                std::to_string(program.input_bytes(i)));
  }
  for (size_t j = 0; j < out.size(); ++j) {
    require(out[j].nbytes() >= program.output_bytes(j), "outputs[" + std::to_string(j) + "]",
            "has " + std::to_string(out[j].nbytes()) + " bytes, the program writes " +
                std::to_string(program.output_bytes(j)));
  }
}

std::vector<cyxla_Input> inputs_of(const cyxla::native::Program& program,
                                   const std::vector<ReadOnlyArray>& arrays) {
  std::vector<cyxla_Input> inputs;
  for (size_t i = 0; i < arrays.size(); ++i) {
    inputs.push_back({arrays[i].data(), program.input_type(i), arrays[i].nbytes()});
  }
  return inputs;
}

std::vector<void*> outputs_of(const std::vector<HostArray>& arrays) {
  std::vector<void*> outputs;
  for (const HostArray& a : arrays) outputs.push_back(a.data());
  return outputs;
}

/// Runs `body(t)` on `threads` threads, calls `meanwhile(started)` in this thread once
/// they are started, and joins them. The first exception of any thread (or of starting
/// one) is rethrown here: leaving a thread, it would end the process in std::terminate.
template <class Body, class Meanwhile>
void run_threads(size_t threads, const Body& body, const Meanwhile& meanwhile) {
  std::mutex mutex;
  std::exception_ptr first;
  auto record = [&] {
    std::lock_guard lock(mutex);
    if (!first) first = std::current_exception();
  };
  {
    std::vector<std::jthread> pool;
    try {
      pool.reserve(threads);
      for (size_t t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          try {
            body(t);
          } catch (...) {
            record();
          }
        });
      }
    } catch (...) {
      record();  // could not start them all: let the started ones finish
    }
    meanwhile(pool.size());
  }  // joins
  if (first) std::rethrow_exception(first);
}

/// Seconds for `calls` executions through cyxla's C API, in this thread, without the GIL.
/// With `latencies`, also the nanoseconds of each call.
double execute_loop(uint64_t handle, const std::vector<ReadOnlyArray>& in,
                    const std::vector<HostArray>& out, size_t calls,
                    const std::optional<Latencies>& latencies) {
  cyxla::native::Program program(handle);
  check_arrays(program, in, out);
  require_room(latencies, calls);
  std::vector<cyxla_Input> inputs = inputs_of(program, in);
  std::vector<void*> outputs = outputs_of(out);
  nb::gil_scoped_release release;
  program.execute(inputs, outputs);  // warm
  return timed_calls(calls, latencies, [&] { program.execute(inputs, outputs); });
}

/// Seconds for `calls` evaluations of `points` points each of a batched executable through
/// cyxla's C API (cyxla_execute_batch), in this thread, without the GIL. `in` and `out`
/// hold the points, one after another.
double execute_batch_loop(uint64_t handle, const std::vector<ReadOnlyArray>& in,
                          const std::vector<HostArray>& out, size_t points, size_t calls) {
  cyxla::native::Program program(handle);
  require(!program.batch_sizes().empty(), "handle", "the executable is not batched");
  require(in.size() == program.num_inputs() && out.size() == program.num_outputs(), "inputs",
          "one array per input and per output of the program");
  for (size_t i = 0; i < in.size(); ++i) {
    require(in[i].nbytes() == points * program.input_bytes(i), "inputs[" + std::to_string(i) + "]",
            "must hold " + std::to_string(points) + " points");
  }
  for (size_t j = 0; j < out.size(); ++j) {
    require(out[j].nbytes() >= points * program.output_bytes(j),
            "outputs[" + std::to_string(j) + "]",
            "must have room for " + std::to_string(points) + " points");
  }
  std::vector<cyxla_Input> inputs;
  for (size_t i = 0; i < in.size(); ++i) {
    inputs.push_back({in[i].data(), program.input_type(i), in[i].nbytes()});
  }
  std::vector<void*> outputs = outputs_of(out);
  nb::gil_scoped_release release;
  program.execute_batch(points, inputs, outputs);  // warm
  const auto start = Clock::now();
  for (size_t n = 0; n < calls; ++n) program.execute_batch(points, inputs, outputs);
  return seconds_since(start);
}

/// Seconds for `calls` copies of `target.nbytes()` bytes of `source` into `target`: the
/// machine's limit for a call whose cost is writing an output of that size.
double memcpy_loop(const ReadOnlyArray& source, const HostArray& target, size_t calls) {
  require(source.nbytes() >= target.nbytes(), "source",
          "has " + std::to_string(source.nbytes()) + " bytes, fewer than the target's " +
              std::to_string(target.nbytes()));
  nb::gil_scoped_release release;
  std::memcpy(target.data(), source.data(), target.nbytes());  // warm
  const auto start = Clock::now();
  for (size_t n = 0; n < calls; ++n) {
    std::memcpy(target.data(), source.data(), target.nbytes());
    // Keeps the compiler from merging the copies: each one is made.
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  return seconds_since(start);
}

/// The entry point of a program exported by cyxla.export_aot.
using AotEntry = int (*)(const void* const* inputs, void* const* outputs, void* scratch);

/// Seconds for `calls` calls of the AOT entry point at address `entry` (a status other
/// than 0 is raised).
double aot_loop(uintptr_t entry, const std::vector<ReadOnlyArray>& in,
                const std::vector<HostArray>& out, const HostArray& scratch, size_t calls) {
  require(entry != 0, "entry", "is the address of an exported entry point, not 0");
  const auto call = reinterpret_cast<AotEntry>(entry);
  std::vector<const void*> inputs;
  for (const ReadOnlyArray& a : in) inputs.push_back(a.data());
  std::vector<void*> outputs;
  for (const HostArray& a : out) outputs.push_back(a.data());
  nb::gil_scoped_release release;
  int status = call(inputs.data(), outputs.data(), scratch.data());
  const auto start = Clock::now();
  for (size_t n = 0; n < calls && status == 0; ++n) {
    status = call(inputs.data(), outputs.data(), scratch.data());
  }
  const double seconds = seconds_since(start);
  if (status != 0) {
    throw std::runtime_error("the exported entry point returned status " +
                             std::to_string(status));
  }
  return seconds;
}

/// Seconds for `calls` evaluations of sin3, `out = sin(x) * 2` on three floats, written
/// by hand: the C loop that an exported object is compared with.
double sin3_by_hand_loop(const ReadOnlyArray& x, const HostArray& out, size_t calls) {
  require(x.nbytes() == 3 * sizeof(float) && out.nbytes() == 3 * sizeof(float), "x, out",
          "are float32[3]");
  const auto* in = static_cast<const float*>(x.data());
  auto* result = static_cast<float*>(out.data());
  nb::gil_scoped_release release;
  const auto start = Clock::now();
  for (size_t n = 0; n < calls; ++n) {
    for (int i = 0; i < 3; ++i) result[i] = std::sin(in[i]) * 2.0f;
    // Keeps the compiler from computing the loop once: each call reads x again.
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  return seconds_since(start);
}

/// Wall seconds for `threads` threads making `calls` executions each on one executable.
/// Each thread writes its own outputs (copies of `out`'s shapes).
double execute_threads(uint64_t handle, const std::vector<ReadOnlyArray>& in,
                       const std::vector<HostArray>& out, size_t calls, size_t threads) {
  require_threads(threads);
  cyxla::native::Program program(handle);
  check_arrays(program, in, out);
  std::vector<cyxla_Input> inputs = inputs_of(program, in);
  std::vector<std::vector<cyxla::native::HostArray>> outputs(threads);
  for (auto& per_thread : outputs) {
    for (const HostArray& a : out) per_thread.emplace_back(a.nbytes());
  }
  nb::gil_scoped_release release;
  std::atomic<size_t> ready{0};
  std::atomic<bool> go{false};
  Clock::time_point start;
  run_threads(
      threads,
      [&](size_t t) {
        std::vector<void*> mine;
        for (auto& a : outputs[t]) mine.push_back(a.data());
        try {
          program.execute(inputs, mine);  // warm
        } catch (...) {
          ready.fetch_add(1);  // the others still start, and this one is reported
          throw;
        }
        ready.fetch_add(1);
        while (!go.load()) std::this_thread::yield();
        for (size_t n = 0; n < calls; ++n) program.execute(inputs, mine);
      },
      [&](size_t started) {
        while (ready.load() != started) std::this_thread::yield();
        start = Clock::now();
        go.store(true);
      });
  return seconds_since(start);
}

/// The thread-safety check: `threads` threads run a one-input, one-output program `calls`
/// times each, cycling through the rows of `table_in`; every result must equal the row of
/// `table_out` (computed beforehand by jax.jit). Returns the number of wrong results.
size_t check_threads(uint64_t handle, const ReadOnlyArray& table_in, const ReadOnlyArray& table_out,
                     size_t calls, size_t threads) {
  require_threads(threads);
  cyxla::native::Program program(handle);
  require(program.num_inputs() == 1 && program.num_outputs() == 1, "handle",
          "the program must take one input and return one output");
  const size_t in_bytes = program.input_bytes(0);
  const size_t out_bytes = program.output_bytes(0);
  require(in_bytes != 0 && out_bytes != 0, "handle", "the program's input and output are empty");
  require(table_in.nbytes() != 0, "table_in", "is empty: give at least one row");
  require(table_in.nbytes() % in_bytes == 0, "table_in",
          "has " + std::to_string(table_in.nbytes()) + " bytes, not whole rows of " +
              std::to_string(in_bytes));
  const size_t rows = table_in.nbytes() / in_bytes;
  require(table_out.nbytes() == rows * out_bytes, "table_out",
          "has " + std::to_string(table_out.nbytes()) + " bytes, " + std::to_string(rows) +
              " rows of " + std::to_string(out_bytes) + " expected");
  const auto* in_rows = static_cast<const std::byte*>(table_in.data());
  const auto* out_rows = static_cast<const std::byte*>(table_out.data());
  const PJRT_Buffer_Type type = program.input_type(0);
  std::atomic<size_t> wrong{0};
  nb::gil_scoped_release release;
  run_threads(
      threads,
      [&](size_t t) {
        cyxla::native::HostArray x(in_bytes), y(out_bytes);
        for (size_t n = 0; n < calls; ++n) {
          const size_t row = (t * 7919 + n) % rows;
          std::memcpy(x.data(), in_rows + row * in_bytes, in_bytes);
          program.execute({x.input(type)}, {y.data()});
          if (std::memcmp(y.data(), out_rows + row * out_bytes, out_bytes) != 0) {
            wrong.fetch_add(1);
          }
        }
      },
      [](size_t) {});
  return wrong.load();
}

/// The steps of a hand-written PJRT loop, with no checks: the floor cyxla is measured
/// against. The pointers are trusted: they come from Executable._pjrt_pointers().
class RawPjrt {
 public:
  RawPjrt(uintptr_t api, uintptr_t client, uintptr_t device, uintptr_t executable,
          const std::vector<ReadOnlyArray>& in, const std::vector<int>& types)
      : api_(reinterpret_cast<const PJRT_Api*>(api)),
        client_(reinterpret_cast<PJRT_Client*>(client)),
        device_(reinterpret_cast<PJRT_Device*>(device)),
        executable_(reinterpret_cast<PJRT_LoadedExecutable*>(executable)) {
    require(types.size() == in.size(), "types",
            "one element type per input, given " + std::to_string(types.size()) + " for " +
                std::to_string(in.size()) + " inputs");
    for (const ReadOnlyArray& a : in) dims_.emplace_back(a.shape_ptr(), a.shape_ptr() + a.ndim());
  }

  /// A buffer over input `i`'s memory (aliased, as cyxla does on the CPU).
  PJRT_Buffer* wrap(const std::vector<ReadOnlyArray>& in, const std::vector<int>& types,
                    size_t i) const {
    PJRT_Client_BufferFromHostBuffer_Args b{};
    b.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE;
    b.client = client_;
    b.data = in[i].data();
    b.type = static_cast<PJRT_Buffer_Type>(types[i]);
    b.dims = dims_[i].data();
    b.num_dims = dims_[i].size();
    b.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableZeroCopy;
    b.device = device_;
    api_->PJRT_Client_BufferFromHostBuffer(&b);
    if (b.done_with_host_buffer != nullptr) destroy(b.done_with_host_buffer);
    return b.buffer;
  }

  /// Starts the program on `args`, its results into `results`; returns its done event.
  PJRT_Event* execute(const std::vector<PJRT_Buffer*>& args,
                      std::vector<PJRT_Buffer*>& results) const {
    PJRT_ExecuteOptions options{};
    options.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE;
    PJRT_Buffer* const* argument_list = args.data();
    PJRT_Buffer** output_list = results.data();
    PJRT_Event* done = nullptr;
    PJRT_LoadedExecutable_Execute_Args e{};
    e.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE;
    e.executable = executable_;
    e.options = &options;
    e.argument_lists = &argument_list;
    e.num_devices = 1;
    e.num_args = args.size();
    e.output_lists = &output_list;
    e.device_complete_events = &done;
    api_->PJRT_LoadedExecutable_Execute(&e);
    return done;
  }

  void await(PJRT_Event* done) const {
    if (done == nullptr) return;
    PJRT_Event_Await_Args a{PJRT_Event_Await_Args_STRUCT_SIZE, nullptr, done};
    api_->PJRT_Event_Await(&a);
    destroy(done);
  }

  /// Copies a result, read in place in host memory, to `out`.
  void read(PJRT_Buffer* result, const HostArray& out) const {
    PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args p{
        PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args_STRUCT_SIZE, nullptr, result, nullptr};
    api_->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&p);
    std::memcpy(out.data(), p.device_memory_ptr, out.nbytes());
  }

  void destroy(PJRT_Buffer* buffer) const {
    PJRT_Buffer_Destroy_Args d{PJRT_Buffer_Destroy_Args_STRUCT_SIZE, nullptr, buffer};
    api_->PJRT_Buffer_Destroy(&d);
  }

 private:
  void destroy(PJRT_Event* event) const {
    PJRT_Event_Destroy_Args d{PJRT_Event_Destroy_Args_STRUCT_SIZE, nullptr, event};
    api_->PJRT_Event_Destroy(&d);
  }

  const PJRT_Api* api_;
  PJRT_Client* client_;
  PJRT_Device* device_;
  PJRT_LoadedExecutable* executable_;
  std::vector<std::vector<int64_t>> dims_;
};

/// The floor: `calls` executions doing the same host-in/host-out work as cyxla's execute
/// on the CPU (alias the inputs, run, read the outputs in place).
///
/// With `phases`, the loop also reads the clock between the steps and returns, instead of
/// the total, the seconds spent in each: [host buffers in, execute, await, outputs out,
/// destroy buffers].
std::vector<double> raw_pjrt_run(uintptr_t api, uintptr_t client, uintptr_t device,
                                 uintptr_t executable, const std::vector<ReadOnlyArray>& in,
                                 const std::vector<int>& types, const std::vector<HostArray>& out,
                                 size_t calls, bool phases) {
  const RawPjrt pjrt(api, client, device, executable, in, types);
  std::vector<PJRT_Buffer*> args(in.size()), results(out.size());
  std::vector<double> spent(5, 0.0);
  nb::gil_scoped_release release;
  Clock::time_point mark;
  auto lap = [&](size_t phase) {
    if (!phases) return;
    const auto now = Clock::now();
    spent[phase] += std::chrono::duration<double>(now - mark).count();
    mark = now;
  };
  auto one_call = [&] {
    if (phases) mark = Clock::now();
    for (size_t i = 0; i < in.size(); ++i) args[i] = pjrt.wrap(in, types, i);
    lap(0);
    PJRT_Event* done = pjrt.execute(args, results);
    lap(1);
    pjrt.await(done);
    lap(2);
    for (size_t j = 0; j < results.size(); ++j) pjrt.read(results[j], out[j]);
    lap(3);
    for (PJRT_Buffer* b : results) pjrt.destroy(b);
    for (PJRT_Buffer* b : args) pjrt.destroy(b);
    lap(4);
  };
  one_call();  // warm
  std::fill(spent.begin(), spent.end(), 0.0);
  const auto start = Clock::now();
  for (size_t n = 0; n < calls; ++n) one_call();
  if (phases) return spent;
  return {seconds_since(start)};
}

double raw_pjrt_loop(uintptr_t api, uintptr_t client, uintptr_t device, uintptr_t executable,
                     const std::vector<ReadOnlyArray>& in, const std::vector<int>& types,
                     const std::vector<HostArray>& out, size_t calls) {
  return raw_pjrt_run(api, client, device, executable, in, types, out, calls, false)[0];
}

std::vector<double> raw_pjrt_phases(uintptr_t api, uintptr_t client, uintptr_t device,
                                    uintptr_t executable, const std::vector<ReadOnlyArray>& in,
                                    const std::vector<int>& types,
                                    const std::vector<HostArray>& out, size_t calls) {
  return raw_pjrt_run(api, client, device, executable, in, types, out, calls, true);
}

/// Seconds for `calls` calls of a bound call over `in` and `out`, in this thread, without
/// the GIL (the bind itself is not timed).
double bound_loop(uint64_t handle, const std::vector<ReadOnlyArray>& in,
                  const std::vector<HostArray>& out, size_t calls,
                  const std::optional<Latencies>& latencies) {
  cyxla::native::Program program(handle);
  check_arrays(program, in, out);
  require_room(latencies, calls);
  std::vector<cyxla_Input> inputs = inputs_of(program, in);
  std::vector<void*> outputs = outputs_of(out);
  cyxla::native::BoundCall bound(program, inputs, outputs);
  nb::gil_scoped_release release;
  bound.call();  // warm
  return timed_calls(calls, latencies, [&] { bound.call(); });
}

/// The floor of a bound call: `calls` executions with the input buffers made once,
/// before the loop (execute, await, read the outputs in place, destroy them).
double raw_pjrt_resident_loop(uintptr_t api, uintptr_t client, uintptr_t device,
                              uintptr_t executable, const std::vector<ReadOnlyArray>& in,
                              const std::vector<int>& types, const std::vector<HostArray>& out,
                              size_t calls) {
  const RawPjrt pjrt(api, client, device, executable, in, types);
  std::vector<PJRT_Buffer*> args(in.size()), results(out.size());
  for (size_t i = 0; i < in.size(); ++i) args[i] = pjrt.wrap(in, types, i);
  nb::gil_scoped_release release;
  auto one_call = [&] {
    pjrt.await(pjrt.execute(args, results));
    for (size_t j = 0; j < results.size(); ++j) {
      pjrt.read(results[j], out[j]);
      pjrt.destroy(results[j]);
    }
  };
  one_call();  // warm
  const auto start = Clock::now();
  for (size_t n = 0; n < calls; ++n) one_call();
  const double seconds = seconds_since(start);
  for (PJRT_Buffer* b : args) pjrt.destroy(b);
  return seconds;
}

}  // namespace

NB_MODULE(_benchmark, m) {
  m.doc() = "Native loops that measure and test cyxla's C API (built from its public headers).";
  cyxla::native::import();
  m.def("execute_loop", &execute_loop, "handle"_a, "inputs"_a, "outputs"_a, "calls"_a,
        "latencies"_a = nb::none());
  m.def("execute_batch_loop", &execute_batch_loop, "handle"_a, "inputs"_a, "outputs"_a,
        "points"_a, "calls"_a);
  m.def("memcpy_loop", &memcpy_loop, "source"_a, "target"_a, "calls"_a);
  m.def("aot_loop", &aot_loop, "entry"_a, "inputs"_a, "outputs"_a, "scratch"_a, "calls"_a);
  m.def("sin3_by_hand_loop", &sin3_by_hand_loop, "x"_a, "out"_a, "calls"_a);
  m.def("execute_threads", &execute_threads, "handle"_a, "inputs"_a, "outputs"_a, "calls"_a,
        "threads"_a);
  // A test hook (tests/test_native_api.py), not part of the benchmark: hence the underscore,
  // which also keeps it out of the generated stubs.
  m.def("_check_threads", &check_threads, "handle"_a, "table_in"_a, "table_out"_a, "calls"_a,
        "threads"_a);
  m.def("raw_pjrt_loop", &raw_pjrt_loop, "api"_a, "client"_a, "device"_a, "executable"_a,
        "inputs"_a, "types"_a, "outputs"_a, "calls"_a);
  m.def("bound_loop", &bound_loop, "handle"_a, "inputs"_a, "outputs"_a, "calls"_a,
        "latencies"_a = nb::none());
  m.def("raw_pjrt_resident_loop", &raw_pjrt_resident_loop, "api"_a, "client"_a, "device"_a,
        "executable"_a, "inputs"_a, "types"_a, "outputs"_a, "calls"_a);
  m.def("raw_pjrt_phases", &raw_pjrt_phases, "api"_a, "client"_a, "device"_a, "executable"_a,
        "inputs"_a, "types"_a, "outputs"_a, "calls"_a);
}
