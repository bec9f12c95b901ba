// Sizes and names of tensor specs.
#include "runtime/tensor_spec.hpp"

#include "runtime/element_type.hpp"

namespace cyxla {

size_t TensorSpec::element_count() const noexcept {
  size_t count = 1;
  for (int64_t d : dims) count *= static_cast<size_t>(d);
  return count;
}

size_t TensorSpec::bytes() const noexcept { return element_count() * element_size(type); }

std::string TensorSpec::to_string() const {
  std::string out(element_type_name(type));
  out += '[';
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i != 0) out += ',';
    out += std::to_string(dims[i]);
  }
  out += ']';
  return out;
}

}  // namespace cyxla
