// The kernel program: the thunks resolved once (kernels to addresses, slices checked),
// then run as XLA's CPU runtime runs them, one thunk after another in the calling thread,
// over a call's allocations or over the addresses a bound call resolved once.
#include "kernels/kernel_program.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <variant>

#include "common/checked.hpp"
#include "common/error.hpp"
#include "kernels/kernel_call.hpp"

namespace cyxla::kernels {
namespace {

using compiled::Slice;

[[noreturn]] void refuse(const std::string& why) {
  throw Error(ErrorKind::Pjrt, "cyxla's kernel runner cannot run it: " + why);
}

std::byte* at(std::byte* const* bases, const Slice& slice) noexcept {
  return bases[slice.allocation] + slice.offset;
}

}  // namespace

// Every step names the memory it reads or writes by slices, numbered across the whole
// program from `first`: a resolved call holds their addresses at those numbers.
struct KernelStep {
  KernelFunction function;
  std::string name;
  KernelDims workgroups;
  std::vector<Slice> args;  // arguments, then results
  size_t first = 0;
};

struct CopyStep {
  Slice from, to;
  size_t first = 0;  // from, then to
};

struct LoopStep;
struct ChoiceStep;
using Step = std::variant<KernelStep, CopyStep, std::unique_ptr<LoopStep>,
                          std::unique_ptr<ChoiceStep>>;

struct KernelProgram::Sequence {
  std::vector<Step> steps;
};

struct LoopStep {
  KernelProgram::Sequence condition, body;
  std::optional<uint64_t> trip_count;
  Slice flag;  // the condition's bool
  size_t first = 0;
};

struct ChoiceStep {
  std::vector<KernelProgram::Sequence> branches;
  Slice index;  // a bool (branch 0 when true) or an int32 (out of range: the last branch)
  size_t first = 0;
};

namespace {

/// The thunks as steps; `slices` counts the slices numbered so far (KernelStep::first).
KernelProgram::Sequence steps_of(const compiled::ThunkSequence& thunks, const LoadedCode& code,
                                size_t& slices) {
  KernelProgram::Sequence out;
  for (const compiled::Thunk& thunk : thunks.thunks) {
    if (const auto* kernel = std::get_if<compiled::KernelThunk>(&thunk.body)) {
      auto* function = reinterpret_cast<KernelFunction>(code.symbol(kernel->name));
      if (function == nullptr) refuse("its kernel '" + kernel->name + "' was not loaded");
      KernelStep step{function, kernel->name,
                      {kernel->workgroups[0], kernel->workgroups[1], kernel->workgroups[2]},
                      kernel->arguments, slices};
      step.args.insert(step.args.end(), kernel->results.begin(), kernel->results.end());
      slices += step.args.size();
      out.steps.emplace_back(std::move(step));
    } else if (const auto* copy = std::get_if<compiled::CopyThunk>(&thunk.body)) {
      if (copy->source.size != copy->destination.size) {
        refuse("its copy " + thunk.op_name + " has slices of different sizes");
      }
      out.steps.emplace_back(CopyStep{copy->source, copy->destination, slices});
      slices += 2;
    } else if (const auto* loop = std::get_if<compiled::WhileThunk>(&thunk.body)) {
      if (loop->condition_buffer.size < 1) refuse("its loop " + thunk.op_name + " has no flag");
      const size_t flag = slices++;
      KernelProgram::Sequence condition = steps_of(loop->condition, code, slices);
      KernelProgram::Sequence body = steps_of(loop->body, code, slices);
      out.steps.emplace_back(std::make_unique<LoopStep>(LoopStep{
          std::move(condition), std::move(body), loop->trip_count, loop->condition_buffer, flag}));
    } else if (const auto* choice = std::get_if<compiled::ConditionalThunk>(&thunk.body)) {
      const uint64_t size = choice->branch_index_buffer.size;
      if ((size != 1 && size != 4) || choice->branches.empty()) {
        refuse("its conditional " + thunk.op_name + " has a " + std::to_string(size) +
               "-byte index over " + std::to_string(choice->branches.size()) + " branches");
      }
      auto step = std::make_unique<ChoiceStep>();
      step->index = choice->branch_index_buffer;
      step->first = slices++;
      for (const compiled::ThunkSequence& branch : choice->branches) {
        step->branches.push_back(steps_of(branch, code, slices));
      }
      out.steps.emplace_back(std::move(step));
    } else {
      refuse("its thunk '" + thunk.kind + "' is not one it runs");  // the verdict said so
    }
  }
  return out;
}

[[noreturn, gnu::cold]] void failed(const KernelStep& step) {
  throw Error(ErrorKind::Pjrt, "the kernel '" + step.name + "' reported an error");
}

/// Where a call's steps find their memory: by number, from the addresses resolved once for
/// the call's memory (KernelProgram::resolve). A kernel gets its arguments where they lie.
struct Resolved {
  const KernelArg* slices;
  std::byte* address(const Slice& /*slice*/, size_t number) const noexcept {
    return static_cast<std::byte*>(slices[number].data);
  }
  void call(const KernelStep& step) const {
    if (!call_over_workgroups(step.function, step.workgroups, slices + step.first,
                              step.args.size())) {
      failed(step);
    }
  }
};

void run_sequence(const KernelProgram::Sequence& sequence, const Resolved& memory);

void run_step(const Step& step, const Resolved& memory) {
  if (const auto* kernel = std::get_if<KernelStep>(&step)) {
    memory.call(*kernel);
  } else if (const auto* copy = std::get_if<CopyStep>(&step)) {
    // An empty array's memory may be null, which memmove may not be given even for 0 bytes.
    if (copy->to.size != 0) {
      std::memmove(memory.address(copy->to, copy->first + 1),
                   memory.address(copy->from, copy->first), copy->to.size);
    }
  } else if (const auto* loop = std::get_if<std::unique_ptr<LoopStep>>(&step)) {
    const LoopStep& l = **loop;
    if (l.trip_count) {
      for (uint64_t i = 0; i < *l.trip_count; ++i) run_sequence(l.body, memory);
      return;
    }
    for (;;) {
      run_sequence(l.condition, memory);
      bool more = false;
      std::memcpy(&more, memory.address(l.flag, l.first), 1);
      if (!more) return;
      run_sequence(l.body, memory);
    }
  } else {
    const ChoiceStep& c = *std::get<std::unique_ptr<ChoiceStep>>(step);
    const std::byte* index_memory = memory.address(c.index, c.first);
    size_t branch = c.branches.size() - 1;
    if (c.index.size == 1) {
      bool pred = false;
      std::memcpy(&pred, index_memory, 1);
      branch = pred ? 0 : 1;
    } else {
      int32_t index = 0;
      std::memcpy(&index, index_memory, sizeof index);
      if (index >= 0 && static_cast<size_t>(index) < c.branches.size()) branch = index;
    }
    run_sequence(c.branches[std::min(branch, c.branches.size() - 1)], memory);
  }
}

void run_sequence(const KernelProgram::Sequence& sequence, const Resolved& memory) {
  for (const Step& step : sequence.steps) run_step(step, memory);
}

/// Every slice of `sequence` at its number in `out`, over the allocations' `bases`.
void resolve_slices(const KernelProgram::Sequence& sequence, std::byte* const* bases,
                    std::span<KernelArg> out) {
  const auto put = [&](size_t number, const Slice& slice) {
    out[number] = {at(bases, slice), slice.size};
  };
  for (const Step& step : sequence.steps) {
    if (const auto* kernel = std::get_if<KernelStep>(&step)) {
      for (size_t i = 0; i < kernel->args.size(); ++i) put(kernel->first + i, kernel->args[i]);
    } else if (const auto* copy = std::get_if<CopyStep>(&step)) {
      put(copy->first, copy->from);
      put(copy->first + 1, copy->to);
    } else if (const auto* loop = std::get_if<std::unique_ptr<LoopStep>>(&step)) {
      put((*loop)->first, (*loop)->flag);
      resolve_slices((*loop)->condition, bases, out);
      resolve_slices((*loop)->body, bases, out);
    } else {
      const ChoiceStep& c = *std::get<std::unique_ptr<ChoiceStep>>(step);
      put(c.first, c.index);
      for (const KernelProgram::Sequence& branch : c.branches) resolve_slices(branch, bases, out);
    }
  }
}

/// `offset + size` rounded up to kRunnerAlignment: where the next allocation may start.
size_t aligned_end(size_t offset, uint64_t size, const std::string& which) {
  const auto end = checked_sum(offset, size);
  const auto padded = end ? checked_sum(*end, compiled::kRunnerAlignment - 1) : std::nullopt;
  if (!padded) refuse(which + "'s size overflows");
  return *padded / compiled::kRunnerAlignment * compiled::kRunnerAlignment;
}

}  // namespace

void KernelProgram::fill_constants(const compiled::CpuExecutable& e, size_t bytes) {
  if (bytes == 0) return;
  constants_.reset(static_cast<std::byte*>(std::aligned_alloc(compiled::kRunnerAlignment, bytes)));
  if (constants_ == nullptr) throw std::bad_alloc();
  std::memset(constants_.get(), 0, bytes);
  for (const compiled::Allocation& a : e.buffers.allocations) {
    if (!a.is_constant || places_[a.index].from != Place::From::Constant) continue;
    // One value filling the allocation, as the verdict required.
    const compiled::ConstantBytes* constant =
        a.assigned.size() == 1 ? compiled::constant_of(e, a.assigned[0].logical_buffer) : nullptr;
    if (constant == nullptr || !constant->unreadable.empty() || constant->bytes.size() != a.size) {
      refuse("allocation " + std::to_string(a.index) + " holds a constant it cannot fill");
    }
    std::memcpy(constants_.get() + places_[a.index].index, constant->bytes.data(), a.size);
  }
}

KernelProgram::KernelProgram(const compiled::CompiledForm& form, const ProgramShape& shape)
    : code_(LoadedCode::load(form)) {
  const compiled::CpuExecutable& e = form.executable;
  size_t constant_bytes = 0;
  const size_t n_in = shape.input_bytes.size();
  const size_t n_donated = shape.donated_outputs.size();
  for (const compiled::Allocation& a : e.buffers.allocations) {
    Place& place = places_.emplace_back();
    const std::string which = "allocation " + std::to_string(a.index);
    if (a.is_entry_computation_parameter) {
      const uint64_t p = a.parameter_number;
      if (p >= n_in + n_donated) {
        refuse(which + " is parameter " + std::to_string(p) + " of " +
               std::to_string(n_in + n_donated));
      }
      place = p < n_in ? Place{Place::From::Input, p} : Place{Place::From::Donor, p - n_in};
      const size_t bytes =
          p < n_in ? shape.input_bytes[p] : shape.output_bytes[shape.donated_outputs[p - n_in]];
      if (a.size != bytes) {
        refuse(which + " holds " + std::to_string(a.size) + " bytes of parameter " +
               std::to_string(p) + ", which has " + std::to_string(bytes));
      }
      continue;
    }
    if (a.is_thread_local) {
      place = {Place::From::Nowhere, 0};
      continue;
    }
    size_t& used = a.is_constant ? constant_bytes : scratch_bytes_;
    place = {a.is_constant ? Place::From::Constant : Place::From::Scratch, used};
    used = aligned_end(used, a.size, which);
  }
  fill_constants(e, constant_bytes);

  if (e.results.size() != shape.output_bytes.size()) {
    refuse("it returns " + std::to_string(e.results.size()) + " outputs, the executable " +
           std::to_string(shape.output_bytes.size()));
  }
  outputs_ = e.results;
  direct_.assign(outputs_.size(), kNone);
  for (size_t j = 0; j < outputs_.size(); ++j) {
    const Slice& s = outputs_[j];
    if (s.size != shape.output_bytes[j]) {
      refuse("output " + std::to_string(j) + " lies in " + std::to_string(s.size) +
             " bytes, and has " + std::to_string(shape.output_bytes[j]));
    }
    const Place& place = places_[s.allocation];
    if (place.from == Place::From::Input || place.from == Place::From::Nowhere) {
      refuse("output " + std::to_string(j) + " lies in an input's or a thread-local allocation");
    }
    bool alone = place.from == Place::From::Scratch && s.offset == 0 &&
                 s.size == e.buffers.allocations[s.allocation].size;
    for (size_t other = 0; other < outputs_.size(); ++other) {
      alone = alone && (other == j || outputs_[other].allocation != s.allocation);
    }
    if (alone) direct_[j] = s.allocation;
  }
  for (size_t k = 0; k < n_donated; ++k) {
    const Slice& s = outputs_[shape.donated_outputs[k]];
    const Place& place = places_[s.allocation];
    if (place.from != Place::From::Donor || place.index != k || s.offset != 0) {
      refuse("donated output " + std::to_string(shape.donated_outputs[k]) +
             " does not lie in its parameter");
    }
  }
  steps_ = std::make_unique<const Sequence>(steps_of(e.thunks, code_, slice_count_));
}

KernelProgram::~KernelProgram() = default;

void KernelProgram::resolve(std::byte* const* bases, std::vector<KernelArg>& slices) const {
  slices.resize(slice_count_);
  resolve_slices(*steps_, bases, slices);
}

void KernelProgram::run(const std::vector<KernelArg>& resolved) const {
  run_sequence(*steps_, Resolved{resolved.data()});
}

}  // namespace cyxla::kernels
