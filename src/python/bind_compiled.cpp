// The bindings of src/compiled/: what Python reads of a serialized executable (the
// verdict and summary of an Executable; in a test build, the readers' whole output, and
// its kernels loaded by src/kernels/ and called one at a time).
#include "python/bindings.hpp"

#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/string.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/checked.hpp"
#include "common/error.hpp"
#include "common/helper_threads.hpp"
#include "common/utf8.hpp"
#include "compiled/protobuf_wire.hpp"
#include "compiled/runner_verdict.hpp"
#include "kernels/kernel_call.hpp"
#include "kernels/loaded_code.hpp"
#include "runtime/executable.hpp"
#include "runtime/host_memory.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cyxla::python {
namespace {

using namespace cyxla::compiled;

/// A name read from the executable's bytes, as text (bytes that are not UTF-8 as \xNN).
nb::str text(std::string_view name) {
  const std::string escaped = with_bytes_escaped(name);
  return nb::str(escaped.data(), escaped.size());
}

nb::list strings(const std::vector<std::string>& names) {
  nb::list out;
  for (const std::string& name : names) out.append(text(name));
  return out;
}

#ifdef CYXLA_TESTING
std::string_view view_of(const nb::bytes& bytes) { return {bytes.c_str(), bytes.size()}; }

nb::tuple slice(const Slice& s) { return nb::make_tuple(s.allocation, s.offset, s.size); }

nb::list slices(const std::vector<Slice>& all) {
  nb::list out;
  for (const Slice& s : all) out.append(slice(s));
  return out;
}

nb::list thunks(const ThunkSequence& sequence) {
  nb::list out;
  for (const Thunk& t : sequence.thunks) {
    nb::dict d;
    d["kind"] = text(t.kind);
    d["op_name"] = text(t.op_name);
    d["body_field"] = t.body_field;
    if (const auto* k = std::get_if<KernelThunk>(&t.body)) {
      d["name"] = text(k->name);
      d["workgroups"] = nb::make_tuple(k->workgroups[0], k->workgroups[1], k->workgroups[2]);
      d["arguments"] = slices(k->arguments);
      d["results"] = slices(k->results);
      nb::list invariant;
      for (uint64_t i : k->invariant_arguments) invariant.append(i);
      d["invariant_arguments"] = invariant;
      d["min_alignment"] = k->min_alignment ? nb::cast(*k->min_alignment) : nb::none();
    } else if (const auto* c = std::get_if<CopyThunk>(&t.body)) {
      d["source"] = slice(c->source);
      d["destination"] = slice(c->destination);
    } else if (const auto* w = std::get_if<WhileThunk>(&t.body)) {
      d["condition"] = thunks(w->condition);
      d["body"] = thunks(w->body);
      d["trip_count"] = w->trip_count ? nb::cast(*w->trip_count) : nb::none();
      d["condition_buffer"] = slice(w->condition_buffer);
    } else if (const auto* b = std::get_if<ConditionalThunk>(&t.body)) {
      nb::list branches;
      for (const ThunkSequence& branch : b->branches) branches.append(thunks(branch));
      d["branches"] = branches;
      d["branch_index_buffer"] = slice(b->branch_index_buffer);
    }
    out.append(d);
  }
  return out;
}

nb::dict elf(const ElfObject& object) {
  nb::list sections, symbols, relocations;
  for (const ElfSection& s : object.sections) {
    sections.append(nb::make_tuple(text(s.name), s.type, s.flags, s.offset, s.size, s.alignment,
                                   s.link, s.info));
  }
  for (const ElfSymbol& s : object.symbols) {
    symbols.append(nb::make_tuple(text(s.name), s.binding, s.type, s.section, s.value, s.size));
  }
  for (const ElfRelocations& r : object.relocations) {
    nb::list entries;
    for (const ElfRelocation& e : r.entries) {
      entries.append(nb::make_tuple(e.offset, relocation_type_name(e.type), e.symbol, e.addend));
    }
    relocations.append(nb::make_tuple(r.target, entries));
  }
  nb::dict d;
  d["sections"] = sections;
  d["symbols"] = symbols;
  d["relocations"] = relocations;
  d["undefined"] = strings(object.undefined);
  d["size"] = object.size;
  return d;
}

/// A writable, C-contiguous buffer of a Python object, copied into 64-byte-aligned
/// memory (what the kernels assume) and back.
class AlignedCopy {
 public:
  AlignedCopy(nb::handle object, size_t index) {
    if (PyObject_GetBuffer(object.ptr(), &view_, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) != 0) {
      PyErr_Clear();
      throw Error(ErrorKind::InvalidArgument, "arguments[" + std::to_string(index) +
                                                  "] is not a writable C-contiguous buffer");
    }
    held_ = true;
    size_ = static_cast<size_t>(view_.len);
    // A kernel may read a whole vector past a buffer's last element: a multiple of 64.
    copy_.reset(static_cast<std::byte*>(allocate_aligned(size_ > 0 ? size_ : 1)));
    if (!copy_) throw std::bad_alloc();
    std::memcpy(copy_.get(), view_.buf, size_);
  }
  AlignedCopy(const AlignedCopy&) = delete;
  AlignedCopy& operator=(const AlignedCopy&) = delete;
  ~AlignedCopy() {
    if (held_) PyBuffer_Release(&view_);
  }

  kernels::KernelArg argument() const noexcept { return {copy_.get(), size_}; }
  void copy_back() const noexcept { std::memcpy(view_.buf, copy_.get(), size_); }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  Py_buffer view_{};
  bool held_ = false;
  size_t size_ = 0;
  std::unique_ptr<std::byte, Free> copy_;
};

/// Calls kernel `name` of `serialized` over `arguments`, once per workgroup.
void call_kernel(nb::bytes serialized, const std::string& name, nb::list arguments,
                 std::array<uint64_t, 3> workgroups) {
  const CompiledForm form = read_compiled_form(view_of(serialized));
  const kernels::LoadedCode code = kernels::LoadedCode::load(form);
  const auto kernel = reinterpret_cast<kernels::KernelFunction>(code.symbol(name));
  if (kernel == nullptr) {
    throw Error(ErrorKind::Pjrt, "no object defines the kernel '" + name + "'");
  }
  std::vector<std::unique_ptr<AlignedCopy>> copies;
  std::vector<kernels::KernelArg> args;
  for (size_t i = 0; i < nb::len(arguments); ++i) {
    copies.push_back(std::make_unique<AlignedCopy>(arguments[i], i));
    args.push_back(copies.back()->argument());
  }
  const auto xy = checked_product(workgroups[0], workgroups[1]);
  const auto count = xy ? checked_product(*xy, workgroups[2]) : std::nullopt;
  if (!count || *count == 0 || *count > kMaxPieces) {
    throw Error(ErrorKind::InvalidArgument, "workgroups: their product must be 1 to 2^32 - 1");
  }
  bool called = false;
  {
    nb::gil_scoped_release released;
    called = kernels::call_over_workgroups(
        kernel, {workgroups[0], workgroups[1], workgroups[2]}, args.data(), args.size());
  }
  if (!called) throw Error(ErrorKind::Pjrt, "the kernel '" + name + "' failed");
  for (const auto& copy : copies) copy->copy_back();
}
#endif

nb::dict summary(const CompiledSummary& s) {
  nb::dict kinds;
  for (const auto& [kind, count] : s.thunk_kinds) kinds[text(kind)] = count;
  nb::dict d;
  d["triple"] = s.triple;
  d["cpu"] = s.cpu;
  d["thunk_kinds"] = kinds;
  d["kernels"] = strings(s.kernels);
  d["undefined_symbols"] = strings(s.undefined_symbols);
  d["relocation_types"] = strings(s.relocation_types);
  d["objects"] = s.objects;
  d["allocations"] = s.allocations;
  d["constant_allocations"] = s.constant_allocations;
  return d;
}

}  // namespace

void bind_compiled(nb::module_& m) {
  m.def(
      "runner_of",
      [](const Executable& executable) {
        return std::make_tuple(std::string(runner_name(executable.runner())),
                               std::string(runner_name(executable.runner_verdict().runner)),
                               executable.runner_reason());
      },
      "executable"_a,
      "(runner, would_take, reason) of an Executable: the runner its calls take, the one its "
      "compiled form allows (runner_verdict, read by load_or_compile), and why the first is "
      "what it is.");
  m.def(
      "compiled_summary_of",
      [](const Executable& executable) -> std::optional<nb::dict> {
        const CompiledForm* form = executable.compiled_form();
        if (form == nullptr) return std::nullopt;
        return summary(summarize(*form));
      },
      "executable"_a,
      "compiled_summary of an Executable's compiled form as load_or_compile read it, or None "
      "when it was not read or could not be.");
}

#ifdef CYXLA_TESTING
void bind_compiled_testing(nb::module_& m) {
  m.def(
      "runner_verdict",
      [](nb::bytes serialized) {
        RunnerVerdict verdict;
        {
          nb::gil_scoped_release released;
          verdict = runner_verdict(view_of(serialized));
        }
        return std::make_pair(std::string(runner_name(verdict.runner)), verdict.reason);
      },
      "serialized"_a,
      "(runner, reason): which runner the plugin's serialized executable would take, "
      "\"kernels\" or \"pjrt\", and why in words. Never raises for unreadable bytes: they "
      "take \"pjrt\", with the reader's message.");
  m.def(
      "compiled_summary",
      [](nb::bytes serialized) { return summary(summarize(read_compiled_form(view_of(serialized)))); },
      "serialized"_a,
      "What a serialized CPU executable holds: target, thunk kinds (with counts), kernels, "
      "the symbols its objects need, their relocation types, objects and allocations. "
      "Raises PjrtError when it cannot be read.");
  // The readers' whole output, for the tests' independent oracles.
  m.def("compiled_details", [](nb::bytes serialized) {
    const CompiledForm form = read_compiled_form(view_of(serialized));
    const CpuExecutable& e = form.executable;
    nb::list allocations, objects, symbols;
    for (const Allocation& a : e.buffers.allocations) {
      nb::dict d;
      d["index"] = a.index;
      d["size"] = a.size;
      d["is_entry_computation_parameter"] = a.is_entry_computation_parameter;
      d["parameter_number"] = a.parameter_number;
      d["maybe_live_out"] = a.maybe_live_out;
      d["is_constant"] = a.is_constant;
      d["is_thread_local"] = a.is_thread_local;
      d["is_tuple"] = a.is_tuple;
      allocations.append(d);
    }
    for (size_t i = 0; i < form.objects.size(); ++i) {
      nb::dict d = elf(form.objects[i]);
      d["name"] = text(e.objects[i].name);
      d["contents"] = nb::bytes(e.objects[i].contents.data(), e.objects[i].contents.size());
      objects.append(d);
    }
    for (const CompiledSymbol& s : e.symbols) symbols.append(nb::make_tuple(s.kind, text(s.name)));
    nb::dict d;
    d["target"] =
        nb::make_tuple(text(e.target.triple), text(e.target.cpu), text(e.target.features));
    d["symbols"] = symbols;
    d["objects"] = objects;
    d["allocations"] = allocations;
    d["thunks"] = thunks(e.thunks);
    d["hlo_module_size"] = e.hlo_module_size;
    return d;
  });
  m.def("elf_object", [](nb::bytes object) { return elf(read_elf_object(view_of(object))); });
  // The kernel loader (src/kernels/), on a whole form and on one object alone (the
  // fuzz target's input, fuzz/elf_object.cpp).
  m.def("call_kernel", &call_kernel, "serialized"_a, "name"_a, "arguments"_a,
        "workgroups"_a = std::array<uint64_t, 3>{1, 1, 1},
        "Loads the kernels of a serialized executable and calls kernel `name` over the "
        "writable buffers `arguments` (its arguments, then its results), once per workgroup "
        "(z outermost, then y, then x). Raises PjrtError when they do not load.");
  m.def(
      "loaded_code_bytes",
      [](nb::bytes serialized) {
        return kernels::LoadedCode::load(read_compiled_form(view_of(serialized))).mapped_bytes();
      },
      "serialized"_a, "The bytes mapped to load the kernels of a serialized executable.");
  nb::class_<kernels::LoadedCode>(m, "LoadedCode")
      .def(
          "symbol",
          [](const kernels::LoadedCode& code, const std::string& name) -> std::optional<uintptr_t> {
            void* address = code.symbol(name);
            if (address == nullptr) return std::nullopt;
            return reinterpret_cast<uintptr_t>(address);
          },
          "name"_a, "The address of the global symbol `name`, or None.")
      .def_prop_ro("mapped_bytes", &kernels::LoadedCode::mapped_bytes);
  m.def(
      "load_object",
      [](nb::bytes object, const std::string& name) {
        CompiledForm form;
        form.executable.objects.push_back({name, std::string(view_of(object))});
        form.objects.push_back(read_elf_object(view_of(object)));
        return kernels::LoadedCode::load(form);
      },
      "object"_a, "name"_a = "the object",
      "One ELF object loaded on its own, as a compiled form of that one object (named "
      "`name`) would be: a LoadedCode, which unmaps it when collected.");
  m.def("wire_fields", [](nb::bytes message) {
    WireReader reader(view_of(message), "the message");
    nb::list out;
    for (WireField f; reader.next(f);) {
      nb::object value = f.wire == WireType::LengthDelimited
                             ? nb::object(nb::bytes(f.bytes.data(), f.bytes.size()))
                             : nb::cast(f.value);
      out.append(nb::make_tuple(f.number, static_cast<int>(f.wire), value));
    }
    return out;
  });
}
#endif

}  // namespace cyxla::python
