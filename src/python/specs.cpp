#include "python/specs.hpp"

namespace cyxla::python {

std::vector<TensorSpec> to_specs(const std::vector<SpecTuple>& tuples) {
  std::vector<TensorSpec> specs;
  specs.reserve(tuples.size());
  for (const auto& [type, dims] : tuples) {
    specs.push_back(TensorSpec{static_cast<PJRT_Buffer_Type>(type), dims});
  }
  return specs;
}

std::vector<SpecTuple> from_specs(const std::vector<TensorSpec>& specs) {
  std::vector<SpecTuple> tuples;
  tuples.reserve(specs.size());
  for (const TensorSpec& s : specs) tuples.emplace_back(static_cast<int>(s.type), s.dims);
  return tuples;
}

}  // namespace cyxla::python
