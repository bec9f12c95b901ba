// The C API: argument checks, error codes and messages, and no exception across it:
// every function of the table is noexcept, and those that can fail catch everything at
// their boundary and turn it into a status and a message.
#include "abi/table.hpp"

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <utility>
#include <vector>

#include "abi/c_enum.hpp"
#include "abi/registry.hpp"
#include "abi/standalone.hpp"
#include "abi/status.hpp"
#include "common/checked.hpp"
#include "common/error.hpp"
#include "runtime/bound_call.hpp"
#include "runtime/element_type.hpp"
#include "runtime/host_memory.hpp"
#include "runtime/small_array.hpp"

namespace cyxla::abi {
namespace {

/// The bytes of version 1's cyxla_ProgramSpec: a caller's struct_size must be at least
/// this. A larger one (a caller of this or a newer version) is accepted; only the prefix
/// that both know is read or written.
constexpr size_t kSpecSize = offsetof(cyxla_ProgramSpec, output_bytes) + sizeof(void*);
static_assert(offsetof(cyxla_ProgramSpec, batch_sizes) + sizeof(void*) ==
                  sizeof(cyxla_ProgramSpec),
              "fill() sets every field up to the last");

void fill(cyxla_ProgramSpec& spec, uint64_t handle, const Entry& e) noexcept {
  // Only the fields within the caller's struct_size: an older caller has fewer.
  cyxla_ProgramSpec full{};
  full.struct_size = spec.struct_size;
  full.executable = handle;
  full.num_inputs = e.input_types.size();
  full.num_outputs = e.output_types.size();
  full.input_types = e.input_types.data();
  full.input_ranks = e.input_ranks.data();
  full.input_dims = e.input_dims.data();
  full.input_bytes = e.input_bytes.data();
  full.output_types = e.output_types.data();
  full.output_ranks = e.output_ranks.data();
  full.output_dims = e.output_dims.data();
  full.output_bytes = e.output_bytes.data();
  if (e.batched != nullptr) {
    full.num_batch_sizes = e.batched->batch_sizes().size();
    full.batch_sizes = e.batched->batch_sizes().data();
  }
  std::memcpy(&spec, &full, std::min(spec.struct_size, sizeof(full)));
}

cyxla_Status get_spec(uint64_t handle, cyxla_ProgramSpec* spec, cyxla_Error* error) noexcept {
  if (spec == nullptr) return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "get_spec: spec is NULL");
  if (spec->struct_size < kSpecSize) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                "get_spec: spec->struct_size is %zu, set it to sizeof(cyxla_ProgramSpec) "
                "(at least %zu)",
                spec->struct_size, kSpecSize);
  }
  // Overwriting a held spec would leak its hold; an uninitialised one may hold garbage
  // that names someone else's hold, so neither is released here: both are refused.
  if (spec->executable != 0) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                "get_spec: spec->executable is %llu, not 0: release the spec first, or "
                "zero-initialise a new one",
                static_cast<unsigned long long>(spec->executable));
  }
  Registry& registry = Registry::instance();
  const Entry* entry = registry.acquire(handle);
  if (entry == nullptr) {
    return fail(error, CYXLA_ERROR_RELEASED,
                "get_spec: no executable has the handle %llu (it was freed, or the handle "
                "is not one from Executable.handle)",
                static_cast<unsigned long long>(handle));
  }
  std::shared_ptr<const Executable> executable = entry->executable;
  std::shared_ptr<const BatchedExecutable> batched = entry->batched;
  registry.release(handle);
  // Each spec gets a handle of its own (its hold), so that releasing a spec and a
  // by-value copy of it drops that one hold once: the second release finds the hold's
  // generation gone and does nothing, instead of dropping someone else's reference.
  uint64_t hold = 0;
  const Entry* held = nullptr;
  try {
    hold = batched != nullptr ? registry.add(std::move(batched), &held)
                              : registry.add(std::move(executable), &held);
  } catch (...) {  // GCOVR_EXCL_START: out of memory, or 4M handles live (registry.cpp)
    return fail_with_current_exception(error, "get_spec");
  }  // GCOVR_EXCL_STOP
  fill(*spec, hold, *held);
  return succeed(error);
}

void release_spec(cyxla_ProgramSpec* spec) noexcept {
  if (spec == nullptr) return;
  // A hold released already (through a copy of this spec) is ignored: its handle's
  // generation is dead.
  Registry::instance().release(spec->executable);
  spec->executable = 0;
}

/// A spec that execute or bind can read: not NULL, with a struct_size they know.
cyxla_Status check_spec(const char* function, const cyxla_ProgramSpec* spec,
                        cyxla_Error* error) noexcept {
  if (spec == nullptr) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "%s: spec is NULL", function);
  }
  if (spec->struct_size < kSpecSize) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                "%s: spec->struct_size is %zu, set it to sizeof(cyxla_ProgramSpec) "
                "(at least %zu)",
                function, spec->struct_size, kSpecSize);
  }
  return CYXLA_OK;
}

[[gnu::cold]] cyxla_Status fail_released(const char* function, const cyxla_ProgramSpec* spec,
                                         cyxla_Error* error) noexcept {
  return fail(error, CYXLA_ERROR_RELEASED,
              "%s: the spec was released or its executable freed (handle %llu)", function,
              static_cast<unsigned long long>(spec->executable));
}

/// The checks of execute and bind: the counts, each input's type, size and data, each
/// output's pointer. Stores the inputs' data pointers in `data` (room for one per input).
cyxla_Status check_arguments(const char* function, const Entry& e, const cyxla_Input* inputs,
                             size_t num_inputs, void* const* outputs, size_t num_outputs,
                             const void** data, cyxla_Error* error) noexcept {
  const size_t n_in = e.input_types.size();
  const size_t n_out = e.output_types.size();
  if (num_inputs != n_in || num_outputs != n_out) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                "%s: the program takes %zu inputs and %zu outputs, given %zu and %zu", function,
                n_in, n_out, num_inputs, num_outputs);
  }
  if ((n_in != 0 && inputs == nullptr) || (n_out != 0 && outputs == nullptr)) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "%s: inputs or outputs is NULL", function);
  }
  for (size_t i = 0; i < n_in; ++i) {
    const cyxla_Input& input = inputs[i];
    if (raw_value(input.type) != e.input_types[i]) {
      return fail(error, CYXLA_ERROR_TYPE_MISMATCH,
                  "%s: input %zu has element type %s, the program takes %s", function, i,
                  element_type_name_of_value(raw_value(input.type)).data(),
                  element_type_name(e.input_types[i]).data());
    }
    if (input.nbytes != e.input_bytes[i]) {
      return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                  "%s: input %zu has %zu bytes, the program takes %zu", function, i, input.nbytes,
                  e.input_bytes[i]);
    }
    if (input.data == nullptr && input.nbytes != 0) {
      return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "%s: input %zu has NULL data", function,
                  i);
    }
    data[i] = input.data;
  }
  for (size_t j = 0; j < n_out; ++j) {
    if (outputs[j] == nullptr && e.output_bytes[j] != 0) {
      return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "%s: output %zu is NULL", function, j);
    }
  }
  return CYXLA_OK;
}

/// execute's checks and call; may throw (std::bad_alloc from SmallArray past its inline
/// capacity, cyxla::Error from the core), which execute() catches.
cyxla_Status checked_execute(const cyxla_ProgramSpec* spec, const cyxla_Input* inputs,
                             size_t num_inputs, void* const* outputs, size_t num_outputs,
                             cyxla_Error* error) {
  const cyxla_Status usable = check_spec("execute", spec, error);
  if (usable != CYXLA_OK) return usable;
  Registry::Use use = Registry::instance().use(spec->executable);
  const Entry* e = use.entry();
  if (e == nullptr) return fail_released("execute", spec, error);
  if (e->batched != nullptr) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                "execute: the spec is of a batched executable: call execute_batch");
  }
  const size_t n_in = e->input_types.size();
  SmallArray<const void*> data(n_in);
  const cyxla_Status checked =
      check_arguments("execute", *e, inputs, num_inputs, outputs, num_outputs, data.data(), error);
  if (checked != CYXLA_OK) return checked;
  e->executable->execute({data.data(), n_in}, {outputs, num_outputs});
  return succeed(error);
}

cyxla_Status execute(const cyxla_ProgramSpec* spec, const cyxla_Input* inputs,
                     size_t num_inputs, void* const* outputs, size_t num_outputs,
                     cyxla_Error* error) noexcept {
  try {
    return checked_execute(spec, inputs, num_inputs, outputs, num_outputs, error);
  } catch (...) {
    return fail_with_current_exception(error, "execute");
  }
}

/// execute_batch's checks and call; may throw, as checked_execute may.
cyxla_Status checked_execute_batch(const cyxla_ProgramSpec* spec, size_t n,
                                   const cyxla_Input* inputs, size_t num_inputs,
                                   void* const* outputs, size_t num_outputs,
                                   cyxla_Error* error) {
  const cyxla_Status usable = check_spec("execute_batch", spec, error);
  if (usable != CYXLA_OK) return usable;
  Registry::Use use = Registry::instance().use(spec->executable);
  const Entry* e = use.entry();
  if (e == nullptr) return fail_released("execute_batch", spec, error);
  if (e->batched == nullptr) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                "execute_batch: the spec is of an executable that is not batched: compile "
                "the program with cyxla.compile_batched, or call execute");
  }
  const size_t n_in = e->input_types.size();
  const size_t n_out = e->output_types.size();
  if (num_inputs != n_in || num_outputs != n_out) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                "execute_batch: the program takes %zu inputs and %zu outputs, given %zu and %zu",
                n_in, n_out, num_inputs, num_outputs);
  }
  if ((n_in != 0 && inputs == nullptr) || (n_out != 0 && outputs == nullptr)) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "execute_batch: inputs or outputs is NULL");
  }
  SmallArray<const void*> data(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    const cyxla_Input& input = inputs[i];
    if (raw_value(input.type) != e->input_types[i]) {
      return fail(error, CYXLA_ERROR_TYPE_MISMATCH,
                  "execute_batch: input %zu has element type %s, the program takes %s", i,
                  element_type_name_of_value(raw_value(input.type)).data(),
                  element_type_name(e->input_types[i]).data());
    }
    const std::optional<size_t> checked = checked_product(n, e->input_bytes[i]);
    if (!checked) {
      return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                  "execute_batch: %zu points of input %zu (%zu bytes each) overflow size_t", n,
                  i, e->input_bytes[i]);
    }
    const size_t expected = *checked;
    if (input.nbytes != expected) {
      return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                  "execute_batch: input %zu has %zu bytes, %zu points of %zu bytes are %zu", i,
                  input.nbytes, n, e->input_bytes[i], expected);
    }
    if (input.data == nullptr && input.nbytes != 0) {
      return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "execute_batch: input %zu has NULL data",
                  i);
    }
    data[i] = input.data;
  }
  for (size_t j = 0; j < n_out; ++j) {
    // The inputs' sizes bound n, but an output's point may be larger than an input's.
    size_t bytes = 0;
    if (__builtin_mul_overflow(n, e->output_bytes[j], &bytes)) {
      return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                  "execute_batch: %zu points of output %zu (%zu bytes each) overflow size_t", n,
                  j, e->output_bytes[j]);
    }
    if (outputs[j] == nullptr && bytes != 0) {
      return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "execute_batch: output %zu is NULL", j);
    }
  }
  e->batched->execute(n, {data.data(), n_in}, {outputs, n_out});
  return succeed(error);
}

cyxla_Status execute_batch(const cyxla_ProgramSpec* spec, size_t n, const cyxla_Input* inputs,
                           size_t num_inputs, void* const* outputs, size_t num_outputs,
                           cyxla_Error* error) noexcept {
  try {
    return checked_execute_batch(spec, n, inputs, num_inputs, outputs, num_outputs, error);
  } catch (...) {
    return fail_with_current_exception(error, "execute_batch");
  }
}

/// bind's checks and binding; may throw (std::bad_alloc, cyxla::Error from the plugin),
/// which bind() catches.
cyxla_Status checked_bind(const cyxla_ProgramSpec* spec, const cyxla_Input* inputs,
                          size_t num_inputs, void* const* outputs, size_t num_outputs,
                          uint64_t* bound, cyxla_Error* error) {
  if (bound == nullptr) return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "bind: bound is NULL");
  *bound = 0;
  const cyxla_Status usable = check_spec("bind", spec, error);
  if (usable != CYXLA_OK) return usable;
  Registry& registry = Registry::instance();
  Registry::Use use = registry.use(spec->executable);
  const Entry* e = use.entry();
  if (e == nullptr) return fail_released("bind", spec, error);
  if (e->batched != nullptr) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                "bind: the spec is of a batched executable, which cannot be bound: call "
                "execute_batch");
  }
  const size_t n_in = e->input_types.size();
  std::vector<const void*> data(n_in);
  const cyxla_Status checked =
      check_arguments("bind", *e, inputs, num_inputs, outputs, num_outputs, data.data(), error);
  if (checked != CYXLA_OK) return checked;
  *bound = registry.add(
      std::make_unique<BoundCall>(e->executable, data, std::span(outputs, num_outputs)));
  return succeed(error);
}

cyxla_Status bind(const cyxla_ProgramSpec* spec, const cyxla_Input* inputs, size_t num_inputs,
                  void* const* outputs, size_t num_outputs, uint64_t* bound,
                  cyxla_Error* error) noexcept {
  try {
    return checked_bind(spec, inputs, num_inputs, outputs, num_outputs, bound, error);
  } catch (...) {
    return fail_with_current_exception(error, "bind");
  }
}

/// Whether `e`, the entry of the handle `bound`, is a live bound call; a status and
/// `error` filled when it is not.
cyxla_Status check_bound(const char* function, const Entry* e, uint64_t bound,
                         cyxla_Error* error) noexcept {
  if (e == nullptr) {
    return fail(error, CYXLA_ERROR_RELEASED,
                "%s: no bound call has the handle %llu (it was unbound, or the handle is not "
                "one from bind)",
                function, static_cast<unsigned long long>(bound));
  }
  if (e->bound == nullptr) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                "%s: the handle %llu is an executable's, not a bound call's", function,
                static_cast<unsigned long long>(bound));
  }
  return CYXLA_OK;
}

cyxla_Status call_bound(uint64_t bound, cyxla_Error* error) noexcept {
  try {
    Registry::Use use = Registry::instance().call(bound);
    const cyxla_Status live = check_bound("call_bound", use.entry(), bound, error);
    if (live != CYXLA_OK) return live;
    if (!use.alone()) {
      return fail(error, CYXLA_ERROR_BUSY,
                  "call_bound: another thread is in a call of the bound call %llu (one thread "
                  "at a time: bind once per thread)",
                  static_cast<unsigned long long>(bound));
    }
    use.entry()->bound->call_alone();
    return succeed(error);
  } catch (...) {
    return fail_with_current_exception(error, "call_bound");
  }
}

cyxla_Status unbind(uint64_t bound, cyxla_Error* error) noexcept {
  Registry& registry = Registry::instance();
  {
    Registry::Use use = registry.use(bound);
    const cyxla_Status live = check_bound("unbind", use.entry(), bound, error);
    if (live != CYXLA_OK) return live;
  }
  // Waits for a call in flight on another thread; a second unbind finds the handle dead.
  if (!registry.release(bound)) {  // GCOVR_EXCL_START: another thread's unbind landing
    return fail(error, CYXLA_ERROR_RELEASED, "unbind: the bound call %llu was unbound already",
                static_cast<unsigned long long>(bound));
  }  // GCOVR_EXCL_STOP (between the check above and this release): no test can time that
  return succeed(error);
}

static_assert(CYXLA_HOST_ALIGNMENT == kHostAlignment, "cyxla.h promises the core's alignment");

void* aligned_memory(size_t nbytes) noexcept { return allocate_aligned(nbytes); }

void free_aligned(void* pointer) noexcept { std::free(pointer); }

// Nothing may unwind into a C caller: each entry of the table is noexcept.
static_assert(noexcept(get_spec(0, nullptr, nullptr)) && noexcept(release_spec(nullptr)) &&
              noexcept(execute(nullptr, nullptr, 0, nullptr, 0, nullptr)) &&
              noexcept(aligned_memory(0)) && noexcept(free_aligned(nullptr)) &&
              noexcept(execute_batch(nullptr, 0, nullptr, 0, nullptr, 0, nullptr)) &&
              noexcept(bind(nullptr, nullptr, 0, nullptr, 0, nullptr, nullptr)) &&
              noexcept(call_bound(0, nullptr)) && noexcept(unbind(0, nullptr)) &&
              noexcept(open_runtime(nullptr, nullptr)) && noexcept(close_runtime()) &&
              noexcept(load_program(nullptr, nullptr, nullptr)) && noexcept(release_program(0)) &&
              noexcept(register_ffi_handler(nullptr, nullptr, nullptr, 0, nullptr)));

constexpr cyxla_Api kTable = {
    sizeof(cyxla_Api),
    CYXLA_ABI_VERSION,
    CYXLA_ABI_OLDEST_COMPATIBLE,
    &get_spec,
    &release_spec,
    &execute,
    &aligned_memory,
    &free_aligned,
    // 2: batches, bound calls, a process without Python
    &execute_batch,
    &bind,
    &call_bound,
    &unbind,
    &open_runtime,
    &close_runtime,
    &load_program,
    &release_program,
    &register_ffi_handler,
};

}  // namespace

const cyxla_Api& table() noexcept { return kTable; }

}  // namespace cyxla::abi

// The table for callers without Python (cyxla.h), exported by libcyxla.
extern "C" const cyxla_Api* cyxla_get_api(void) { return &cyxla::abi::table(); }
