// Evaluating n points with executables compiled at a few batch sizes: whole chunks on the
// caller's memory, the tail padded in per-thread scratch memory.
#include "runtime/batched_executable.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <numeric>
#include <string>
#include <utility>

#include "common/error.hpp"
#include "runtime/host_memory.hpp"
#include "runtime/small_array.hpp"

namespace cyxla {
namespace {

/// `spec` without its leading (batch) dimension, which must be `size`.
TensorSpec point_of(const TensorSpec& spec, size_t size, const std::string& what) {
  if (spec.dims.empty() || spec.dims[0] != static_cast<int64_t>(size)) {
    throw Error(ErrorKind::InvalidArgument, what + " is " + spec.to_string() +
                                                ", which has no leading batch dimension of " +
                                                std::to_string(size));
  }
  return TensorSpec{spec.type, std::vector<int64_t>(spec.dims.begin() + 1, spec.dims.end())};
}

/// The per-point specs of `batched` (one executable's inputs or outputs at `size`).
std::vector<TensorSpec> points_of(const std::vector<TensorSpec>& batched, size_t size,
                                  const char* role) {
  std::vector<TensorSpec> points;
  for (size_t i = 0; i < batched.size(); ++i) {
    points.push_back(point_of(batched[i], size,
                              "batch size " + std::to_string(size) + ": " + role + " " +
                                  std::to_string(i)));
  }
  return points;
}

std::string describe(const std::vector<TensorSpec>& specs) {
  std::string out;
  for (const TensorSpec& s : specs) out += (out.empty() ? "" : ", ") + s.to_string();
  return "(" + out + ")";
}

/// This thread's memory for padded calls (calls on one thread never overlap). Separate
/// from the staging memory of Executable::execute, which a padded call also uses.
Scratch& padding_scratch() {
  thread_local Scratch memory;
  return memory;
}

/// Fills [point_bytes, total) of `block` with copies of its first `point_bytes` bytes,
/// doubling the copied run each time.
void repeat_point(std::byte* block, size_t point_bytes, size_t total) {
  size_t filled = point_bytes;
  while (filled < total) {
    const size_t step = std::min(filled, total - filled);
    std::memcpy(block + filled, block, step);
    filled += step;
  }
}

}  // namespace

BatchedExecutable::BatchedExecutable(std::vector<std::shared_ptr<const Executable>> executables,
                                     std::vector<size_t> sizes) {
  if (executables.empty() || executables.size() != sizes.size()) {
    throw Error(ErrorKind::InvalidArgument,
                "a batched executable needs one executable per batch size, given " +
                    std::to_string(executables.size()) + " executables and " +
                    std::to_string(sizes.size()) + " sizes");
  }
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] < sizes[b]; });
  for (size_t k : order) {
    if (sizes[k] == 0 || (!sizes_.empty() && sizes_.back() == sizes[k])) {
      throw Error(ErrorKind::InvalidArgument,
                  "batch sizes must be distinct and at least 1, given " +
                      std::to_string(sizes[k]) + (sizes[k] == 0 ? "" : " twice"));
    }
    sizes_.push_back(sizes[k]);
    executables_.push_back(std::move(executables[k]));
  }
  if (executables_[0]->inputs().empty()) {
    throw Error(ErrorKind::InvalidArgument,
                "a batched executable takes at least one input: its points come in along "
                "the inputs' leading dimension");
  }
  inputs_ = points_of(executables_[0]->inputs(), sizes_[0], "input");
  outputs_ = points_of(executables_[0]->outputs(), sizes_[0], "output");
  for (size_t k = 1; k < sizes_.size(); ++k) {
    const auto ins = points_of(executables_[k]->inputs(), sizes_[k], "input");
    const auto outs = points_of(executables_[k]->outputs(), sizes_[k], "output");
    if (ins != inputs_ || outs != outputs_) {
      throw Error(ErrorKind::InvalidArgument,
                  "batch size " + std::to_string(sizes_[k]) + " evaluates points " +
                      describe(ins) + " -> " + describe(outs) + ", batch size " +
                      std::to_string(sizes_[0]) + " evaluates " + describe(inputs_) + " -> " +
                      describe(outputs_));
    }
  }
  for (const TensorSpec& s : inputs_) input_bytes_.push_back(s.bytes());
  for (const TensorSpec& s : outputs_) output_bytes_.push_back(s.bytes());
}

void BatchedExecutable::execute(size_t n, std::span<const void* const> inputs,
                                std::span<void* const> outputs) const {
  const size_t largest = sizes_.back();
  size_t first = 0;
  // Whole chunks of the largest size, on the caller's memory.
  for (; n - first >= largest; first += largest) {
    execute_at(sizes_.size() - 1, first, inputs, outputs);
  }
  const size_t rest = n - first;
  if (rest == 0) return;
  const size_t k = static_cast<size_t>(std::lower_bound(sizes_.begin(), sizes_.end(), rest) -
                                       sizes_.begin());
  execute_padded(k, first, rest, inputs, outputs);
}

void BatchedExecutable::execute_at(size_t size_index, size_t first,
                                   std::span<const void* const> inputs,
                                   std::span<void* const> outputs) const {
  const size_t n_in = inputs_.size();
  const size_t n_out = outputs_.size();
  SmallArray<const void*> in(n_in);
  SmallArray<void*> out(n_out);
  for (size_t i = 0; i < n_in; ++i) {
    in[i] = static_cast<const std::byte*>(inputs[i]) + first * input_bytes_[i];
  }
  for (size_t j = 0; j < n_out; ++j) {
    out[j] = static_cast<std::byte*>(outputs[j]) + first * output_bytes_[j];
  }
  // Executable::execute reads aligned inputs in place and stages the others itself.
  executables_[size_index]->execute({in.data(), n_in}, {out.data(), n_out});
}

void BatchedExecutable::execute_padded(size_t size_index, size_t first, size_t count,
                                       std::span<const void* const> inputs,
                                       std::span<void* const> outputs) const {
  const size_t size = sizes_[size_index];
  if (count == size) {  // an exact fit: no padding, the caller's memory as it is
    execute_at(size_index, first, inputs, outputs);
    return;
  }
  const size_t n_in = inputs_.size();
  const size_t n_out = outputs_.size();
  SmallArray<const void*> in(n_in);
  SmallArray<void*> out(n_out);
  size_t bytes = 0;
  for (size_t b : input_bytes_) bytes += round_up(size * b);
  for (size_t b : output_bytes_) bytes += round_up(size * b);
  std::byte* next = padding_scratch().reserve(bytes);
  // The padding repeats the last point, not zeros: a padded lane then costs what a real
  // one does and ends when it ends (a vmapped while loop runs until every lane is done,
  // and zeros may never converge or take a slow path).
  for (size_t i = 0; i < n_in; ++i) {
    const size_t point = input_bytes_[i];
    if (point != 0) {
      std::memcpy(next, static_cast<const std::byte*>(inputs[i]) + first * point, count * point);
      repeat_point(next + (count - 1) * point, point, (size - count + 1) * point);
    }
    in[i] = next;
    next += round_up(size * point);
  }
  for (size_t j = 0; j < n_out; ++j) {
    out[j] = next;
    next += round_up(size * output_bytes_[j]);
  }
  executables_[size_index]->execute({in.data(), n_in}, {out.data(), n_out});
  for (size_t j = 0; j < n_out; ++j) {
    if (output_bytes_[j] == 0) continue;
    std::memcpy(static_cast<std::byte*>(outputs[j]) + first * output_bytes_[j], out[j],
                count * output_bytes_[j]);
  }
}

}  // namespace cyxla
