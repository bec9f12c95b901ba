// The C API: argument checks, error codes and messages, and no exception across it:
// every function of the table is noexcept, and those that can fail catch everything at
// their boundary and turn it into a status and a message.
#include "abi/table.hpp"

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <utility>

#include "abi/registry.hpp"
#include "abi/standalone.hpp"
#include "abi/status.hpp"
#include "common/error.hpp"
#include "runtime/element_type.hpp"
#include "runtime/host_memory.hpp"
#include "runtime/small_array.hpp"

namespace cyxla::abi {
namespace {

/// The bytes of cyxla_ProgramSpec that this version's callers set: a caller's struct_size
/// must be at least this. A larger one (a newer caller) is accepted; only this prefix is
/// read or written.
constexpr size_t kSpecSize = offsetof(cyxla_ProgramSpec, output_bytes) + sizeof(void*);
static_assert(kSpecSize == sizeof(cyxla_ProgramSpec), "kSpecSize counts to the last field");

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
  registry.release(handle);
  // Each spec gets a handle of its own (its hold), so that releasing a spec and a
  // by-value copy of it drops that one hold once: the second release finds the hold's
  // generation gone and does nothing, instead of dropping someone else's reference.
  uint64_t hold = 0;
  const Entry* held = nullptr;
  try {
    hold = registry.add(std::move(executable), &held);
  } catch (...) {
    return fail_with_current_exception(error, "get_spec");
  }
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

/// execute's checks and call; may throw (std::bad_alloc from SmallArray past its inline
/// capacity, cyxla::Error from the core), which execute() catches.
cyxla_Status checked_execute(const cyxla_ProgramSpec* spec, const cyxla_Input* inputs,
                             size_t num_inputs, void* const* outputs, size_t num_outputs,
                             cyxla_Error* error) {
  if (spec == nullptr) return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "execute: spec is NULL");
  if (spec->struct_size < kSpecSize) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                "execute: spec->struct_size is %zu, set it to sizeof(cyxla_ProgramSpec) "
                "(at least %zu)",
                spec->struct_size, kSpecSize);
  }
  Registry::Use use = Registry::instance().use(spec->executable);
  const Entry* e = use.entry();
  if (e == nullptr) {
    return fail(error, CYXLA_ERROR_RELEASED,
                "execute: the spec was released or its executable freed (handle %llu)",
                static_cast<unsigned long long>(spec->executable));
  }
  const size_t n_in = e->input_types.size();
  const size_t n_out = e->output_types.size();
  if (num_inputs != n_in || num_outputs != n_out) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                "execute: the program takes %zu inputs and %zu outputs, given %zu and %zu", n_in,
                n_out, num_inputs, num_outputs);
  }
  if ((n_in != 0 && inputs == nullptr) || (n_out != 0 && outputs == nullptr)) {
    return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "execute: inputs or outputs is NULL");
  }
  SmallArray<const void*> data(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    const cyxla_Input& input = inputs[i];
    if (input.type != e->input_types[i]) {
      return fail(error, CYXLA_ERROR_TYPE_MISMATCH,
                  "execute: input %zu has element type %s, the program takes %s", i,
                  element_type_name(input.type).data(),
                  element_type_name(e->input_types[i]).data());
    }
    if (input.nbytes != e->input_bytes[i]) {
      return fail(error, CYXLA_ERROR_INVALID_ARGUMENT,
                  "execute: input %zu has %zu bytes, the program takes %zu", i, input.nbytes,
                  e->input_bytes[i]);
    }
    if (input.data == nullptr && input.nbytes != 0) {
      return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "execute: input %zu has NULL data", i);
    }
    data[i] = input.data;
  }
  for (size_t j = 0; j < n_out; ++j) {
    if (outputs[j] == nullptr && e->output_bytes[j] != 0) {
      return fail(error, CYXLA_ERROR_INVALID_ARGUMENT, "execute: output %zu is NULL", j);
    }
  }
  e->executable->execute({data.data(), n_in}, {outputs, n_out});
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

static_assert(CYXLA_HOST_ALIGNMENT == kHostAlignment, "cyxla.h promises the core's alignment");

void* aligned_memory(size_t nbytes) noexcept { return allocate_aligned(nbytes); }

void free_aligned(void* pointer) noexcept { std::free(pointer); }

// Nothing may unwind into a C caller: each entry of the table is noexcept.
static_assert(noexcept(get_spec(0, nullptr, nullptr)) && noexcept(release_spec(nullptr)) &&
              noexcept(execute(nullptr, nullptr, 0, nullptr, 0, nullptr)) &&
              noexcept(aligned_memory(0)) && noexcept(free_aligned(nullptr)) &&
              noexcept(open_runtime(nullptr, nullptr)) && noexcept(close_runtime()) &&
              noexcept(load_program(nullptr, nullptr, nullptr)) && noexcept(release_program(0)) &&
              noexcept(register_ffi_handler(nullptr, nullptr, nullptr, 0, nullptr)));

constexpr cyxla_Api kTable = {
    sizeof(cyxla_Api), CYXLA_ABI_VERSION, CYXLA_ABI_OLDEST_COMPATIBLE, &get_spec, &release_spec,
    &execute,          &aligned_memory,   &free_aligned,
    // ABI 2
    &open_runtime,     &close_runtime,    &load_program,     &release_program,
    &register_ffi_handler,
};

}  // namespace

const cyxla_Api& table() noexcept { return kTable; }

}  // namespace cyxla::abi

// The table for callers without Python (cyxla.h), exported by libcyxla.
extern "C" const cyxla_Api* cyxla_get_api(void) { return &cyxla::abi::table(); }
