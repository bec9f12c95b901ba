// Tensor specs as they cross into Python: (PJRT_Buffer_Type as int, dims) pairs.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/tensor_spec.hpp"

namespace cyxla::python {

using SpecTuple = std::pair<int, std::vector<int64_t>>;

std::vector<TensorSpec> to_specs(const std::vector<SpecTuple>& tuples);
std::vector<SpecTuple> from_specs(const std::vector<TensorSpec>& specs);

}  // namespace cyxla::python
