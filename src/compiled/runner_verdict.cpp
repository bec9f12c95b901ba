// The runner verdict: each rule in the order a reader would ask, the first that fails
// giving the reason.
#include "compiled/runner_verdict.hpp"

#include <algorithm>
#include <set>

#include "common/checked.hpp"
#include "common/error.hpp"
#include "common/helper_threads.hpp"
#include "common/utf8.hpp"
#include "compiled/host_symbols.hpp"

namespace cyxla::compiled {
namespace {

/// The first thunk of `sequence` (nested ones included) that the kernel runner cannot
/// run, or null. Kernels and copies run; loops and conditionals run when their
/// sequences do.
const Thunk* first_unrunnable(const ThunkSequence& sequence) {
  for (const Thunk& thunk : sequence.thunks) {
    if (std::holds_alternative<KernelThunk>(thunk.body) ||
        std::holds_alternative<CopyThunk>(thunk.body)) {
      continue;
    }
    if (const auto* loop = std::get_if<WhileThunk>(&thunk.body)) {
      if (const Thunk* inner = first_unrunnable(loop->condition)) return inner;
      if (const Thunk* inner = first_unrunnable(loop->body)) return inner;
      continue;
    }
    if (const auto* choice = std::get_if<ConditionalThunk>(&thunk.body)) {
      for (const ThunkSequence& branch : choice->branches) {
        if (const Thunk* inner = first_unrunnable(branch)) return inner;
      }
      continue;
    }
    return &thunk;
  }
  return nullptr;
}

/// The first thing about `e`'s thunks and allocations that the kernel runner cannot lay
/// out or run as PJRT would, in words; empty when there is none.
std::string first_layout_stop(const CpuExecutable& e) {
  std::string stop;
  for_each_thunk(e.thunks, [&](const Thunk& thunk) {
    if (!stop.empty()) return;
    if (const auto* copy = std::get_if<CopyThunk>(&thunk.body); copy && !copy->same_shape) {
      stop = "its copy " + thunk.op_name + " changes the layout, which cyxla does not do";
    } else if (const auto* kernel = std::get_if<KernelThunk>(&thunk.body)) {
      const auto& [x, y, z] = kernel->workgroups;
      const auto xy = checked_product(x, y);
      const auto count = xy ? checked_product(*xy, z) : std::nullopt;
      if (!count || *count == 0 || *count > kMaxPieces) {
        stop = "its kernel '" + kernel->name + "' runs over " + std::to_string(x) + "x" +
               std::to_string(y) + "x" + std::to_string(z) +
               " workgroups, a count cyxla's runner does not take (1 to 2^32 - 1)";
      } else if (kernel->min_alignment.value_or(1) > kRunnerAlignment) {
        stop = "its kernel '" + kernel->name + "' asks for " +
               std::to_string(*kernel->min_alignment) + "-byte alignment";
      }
    }
  });
  if (!stop.empty()) return stop;
  // Thread-local allocations are the kernels' own (XLA's runtime gives them no memory):
  // no thunk may name one.
  const auto thread_local_slice = [&](const Slice& slice) {
    return e.buffers.allocations[slice.allocation].is_thread_local;
  };
  for_each_thunk(e.thunks, [&](const Thunk& thunk) {
    if (!stop.empty()) return;
    bool named = false;
    if (const auto* kernel = std::get_if<KernelThunk>(&thunk.body)) {
      for (const Slice& s : kernel->arguments) named = named || thread_local_slice(s);
      for (const Slice& s : kernel->results) named = named || thread_local_slice(s);
    } else if (const auto* copy = std::get_if<CopyThunk>(&thunk.body)) {
      named = thread_local_slice(copy->source) || thread_local_slice(copy->destination);
    } else if (const auto* loop = std::get_if<WhileThunk>(&thunk.body)) {
      named = thread_local_slice(loop->condition_buffer);
    } else if (const auto* choice = std::get_if<ConditionalThunk>(&thunk.body)) {
      named = thread_local_slice(choice->branch_index_buffer);
    }
    if (named) stop = "its thunk " + thunk.op_name + " names a thread-local allocation";
  });
  if (!stop.empty()) return stop;
  for (const Allocation& a : e.buffers.allocations) {
    const std::string which = "its allocation " + std::to_string(a.index);
    if (a.is_entry_computation_parameter && !a.parameter_shape_index.empty()) {
      return which + " is part of a tuple parameter";
    }
    if (!a.is_constant) continue;
    // XLA gives each constant an allocation of its own: one value filling it, whose bytes
    // the module holds (so that the constants' memory is bounded by the module's size).
    if (a.assigned.size() != 1 || a.assigned[0].offset != 0 || a.assigned[0].size != a.size) {
      return which + " holds a constant with other values or room besides";
    }
    const ConstantBytes* constant = constant_of(e, a.assigned[0].logical_buffer);
    if (constant == nullptr) {
      return which + " is a constant that no constant instruction of its module defines";
    }
    if (!constant->unreadable.empty()) {
      return which + " holds a constant that cyxla cannot read: " + constant->unreadable;
    }
    if (constant->bytes.size() != a.size) {
      return which + " holds a constant of " + std::to_string(constant->bytes.size()) +
             " bytes in its module, and of " + std::to_string(a.size) + " in its allocation";
    }
  }
  if (e.results.empty()) return "its HLO module does not say where its outputs lie";
  return {};
}

std::string kind_of(const Thunk& thunk) {
  return thunk.kind.empty() ? std::string(thunk_body_name(thunk.body_field)) : thunk.kind;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

RunnerVerdict pjrt(std::string reason) { return {Runner::Pjrt, std::move(reason)}; }

bool host_is_x86_64_linux() {
#if defined(__x86_64__) && defined(__linux__)
  return true;
#else
  return false;
#endif
}

}  // namespace

std::string_view runner_name(Runner runner) noexcept {
  return runner == Runner::Kernels ? "kernels" : "pjrt";
}

bool applies_relocation(uint32_t type) noexcept {
  switch (type) {
    case 1:   // R_X86_64_64
    case 2:   // R_X86_64_PC32
    case 4:   // R_X86_64_PLT32
    case 9:   // R_X86_64_GOTPCREL
    case 10:  // R_X86_64_32
    case 11:  // R_X86_64_32S
    case 24:  // R_X86_64_PC64
    case 25:  // R_X86_64_GOTOFF64
    case 41:  // R_X86_64_GOTPCRELX
    case 42:  // R_X86_64_REX_GOTPCRELX
      return true;
    default: return false;
  }
}

CompiledForm read_compiled_form(std::string_view serialized) {
  CompiledForm form{read_cpu_executable(serialized), {}};
  for (const ObjectFile& object : form.executable.objects) {
    try {
      form.objects.push_back(read_elf_object(object.contents));
    } catch (const Error& error) {
      throw Error(ErrorKind::Pjrt, "object " + std::to_string(form.objects.size()) + " ('" +
                                       object.name + "'): " + error.what());
    }
  }
  return form;
}

namespace {

/// The verdict, its names (of thunks, kernels, symbols: bytes from outside) as they are.
RunnerVerdict judged_as_read(const CompiledForm& form) {
  const CpuExecutable& e = form.executable;
  if (!host_is_x86_64_linux()) return pjrt("cyxla runs kernels on x86-64 Linux only");
  const std::string_view arch = std::string_view(e.target.triple).substr(
      0, std::min(e.target.triple.find('-'), e.target.triple.size()));
  if (arch != "x86_64") {
    return pjrt("it was compiled for " + (arch.empty() ? "no named target" : std::string(arch)));
  }
  if (!e.has_thunk_sequence) return pjrt("it carries no thunk sequence");
  if (const Thunk* thunk = first_unrunnable(e.thunks)) {
    return pjrt("its thunk sequence holds a '" + kind_of(*thunk) + "' thunk (" + thunk->op_name +
                "), which cyxla does not run");
  }
  // Every kernel is a global function of one of the objects.
  std::set<std::string, std::less<>> defined;
  std::string twice;  // a global symbol that two objects define, which no linker takes
  for (const ElfObject& object : form.objects) {
    for (const ElfSymbol& symbol : object.symbols) {
      if (symbol.defined() && symbol.binding != 0 && !defined.insert(symbol.name).second &&
          twice.empty()) {
        twice = symbol.name;
      }
    }
  }
  std::string missing;
  size_t kernels = 0, copies = 0, loops = 0, choices = 0;
  for_each_thunk(e.thunks, [&](const Thunk& thunk) {
    if (const auto* kernel = std::get_if<KernelThunk>(&thunk.body)) {
      ++kernels;
      if (missing.empty() && !defined.contains(kernel->name)) missing = kernel->name;
    }
    copies += std::holds_alternative<CopyThunk>(thunk.body);
    loops += std::holds_alternative<WhileThunk>(thunk.body);
    choices += std::holds_alternative<ConditionalThunk>(thunk.body);
  });
  if (!missing.empty()) return pjrt("its kernel '" + missing + "' is defined by none of its objects");
  if (std::string stop = first_layout_stop(e); !stop.empty()) return pjrt(std::move(stop));
  if (!twice.empty()) return pjrt("its symbol '" + twice + "' is defined by two of its objects");
  std::vector<std::string> needed;
  for (size_t i = 0; i < form.objects.size(); ++i) {
    const ElfObject& object = form.objects[i];
    const std::string& name = e.objects[i].name;
    for (const ElfRelocations& section : object.relocations) {
      for (const ElfRelocation& r : section.entries) {
        if (!applies_relocation(r.type)) {
          return pjrt("its object '" + name + "' has a " + relocation_type_name(r.type) +
                      " relocation, which cyxla does not apply");
        }
      }
    }
    for (const std::string& symbol : object.undefined) {
      if (defined.contains(symbol)) continue;  // another of its objects defines it
      if (!is_host_symbol(symbol)) {
        return pjrt("its object '" + name + "' needs the symbol '" + symbol +
                    "', which is not in libc, libm or the compiler runtime");
      }
      if (std::find(needed.begin(), needed.end(), symbol) == needed.end()) {
        needed.push_back(symbol);
      }
    }
  }
  std::vector<std::string> counts;
  const auto count = [&](size_t n, const char* one, const char* many) {
    if (n != 0) counts.push_back(std::to_string(n) + " " + (n == 1 ? one : many));
  };
  count(kernels, "kernel", "kernels");
  count(copies, "copy", "copies");
  count(loops, "loop", "loops");
  count(choices, "conditional", "conditionals");
  if (counts.empty()) counts.emplace_back("no thunk at all");
  std::string reason = "its thunk sequence holds only what cyxla runs (" + joined(counts) + ")";
  reason += needed.empty() ? ", and its objects need no outside symbol"
                           : ", and its objects need only " + joined(needed);
  return {Runner::Kernels, std::move(reason)};
}

}  // namespace

RunnerVerdict runner_verdict(const CompiledForm& form) {
  RunnerVerdict verdict = judged_as_read(form);
  verdict.reason = with_bytes_escaped(verdict.reason);  // text for Python's str and C alike
  return verdict;
}

Judged judge(std::string_view serialized) {
  try {
    auto form = std::make_shared<const CompiledForm>(read_compiled_form(serialized));
    return {runner_verdict(*form), std::move(form)};
  } catch (const Error& error) {
    return {pjrt("its serialized form could not be read: " + with_bytes_escaped(error.what())),
            nullptr};
  }
}

RunnerVerdict runner_verdict(std::string_view serialized) { return judge(serialized).verdict; }

CompiledSummary summarize(const CompiledForm& form) {
  const CpuExecutable& e = form.executable;
  CompiledSummary s;
  s.triple = with_bytes_escaped(e.target.triple);
  s.cpu = with_bytes_escaped(e.target.cpu);
  for_each_thunk(e.thunks, [&](const Thunk& thunk) {
    ++s.thunk_kinds[with_bytes_escaped(kind_of(thunk))];
    if (const auto* kernel = std::get_if<KernelThunk>(&thunk.body)) {
      s.kernels.push_back(with_bytes_escaped(kernel->name));
    }
  });
  std::set<std::string> undefined, types;
  for (const ElfObject& object : form.objects) {
    for (const std::string& name : object.undefined) undefined.insert(with_bytes_escaped(name));
    for (const ElfRelocations& section : object.relocations) {
      for (const ElfRelocation& r : section.entries) types.insert(relocation_type_name(r.type));
    }
  }
  s.undefined_symbols.assign(undefined.begin(), undefined.end());
  s.relocation_types.assign(types.begin(), types.end());
  s.objects = form.objects.size();
  s.allocations = e.buffers.allocations.size();
  for (const Allocation& a : e.buffers.allocations) s.constant_allocations += a.is_constant;
  return s;
}

}  // namespace cyxla::compiled
