// A function compiled at a few batch sizes (its jax.vmap, lowered once per size), and the
// call that evaluates any number of points with them.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "runtime/executable.hpp"
#include "runtime/tensor_spec.hpp"

namespace cyxla {

class BatchedExecutable {
 public:
  /// `executables[k]` evaluates `sizes[k]` points at once: each of its inputs and outputs
  /// is one point's spec with a leading dimension of `sizes[k]`. The sizes may come in
  /// any order and must differ. Throws cyxla::Error (InvalidArgument) when the
  /// executables do not share the per-point specs that way, or there are none.
  BatchedExecutable(std::vector<std::shared_ptr<const Executable>> executables,
                    std::vector<size_t> sizes);

  /// One point's inputs and outputs, and their bytes.
  const std::vector<TensorSpec>& inputs() const noexcept { return inputs_; }
  const std::vector<TensorSpec>& outputs() const noexcept { return outputs_; }
  const std::vector<size_t>& input_bytes() const noexcept { return input_bytes_; }
  const std::vector<size_t>& output_bytes() const noexcept { return output_bytes_; }
  /// The compiled batch sizes, ascending.
  const std::vector<size_t>& batch_sizes() const noexcept { return sizes_; }

  /// Evaluates `n` points: `inputs[i]` holds n points of inputs()[i], one after another,
  /// and `outputs[j]` receives n * output_bytes()[j] bytes. Runs the smallest compiled
  /// size that holds the points, its padding (copies of the last point, in this thread's
  /// scratch memory) never written to `outputs`; more points than the largest size are
  /// split into calls of the largest size, run on the caller's memory, and the rest.
  /// n == 0 runs nothing. The caller checks counts, sizes and null pointers (the C API's
  /// execute_batch). Safe to call from many threads at once. Throws cyxla::Error.
  void execute(size_t n, std::span<const void* const> inputs,
               std::span<void* const> outputs) const;

 private:
  /// Runs the executable of sizes_[size_index] on that many points of the caller's
  /// memory from point `first`.
  void execute_at(size_t size_index, size_t first, std::span<const void* const> inputs,
                  std::span<void* const> outputs) const;
  /// Runs `size`'s executable on points [first, first + count) of the caller's arrays,
  /// padded to its size in scratch memory.
  void execute_padded(size_t size_index, size_t first, size_t count,
                      std::span<const void* const> inputs, std::span<void* const> outputs) const;

  std::vector<std::shared_ptr<const Executable>> executables_;  // by ascending size
  std::vector<size_t> sizes_;
  std::vector<TensorSpec> inputs_, outputs_;
  std::vector<size_t> input_bytes_, output_bytes_;  // one point's
};

}  // namespace cyxla
