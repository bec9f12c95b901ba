// Sizes and names of tensor specs.
#include "runtime/tensor_spec.hpp"

#include "common/checked.hpp"
#include "common/error.hpp"
#include "runtime/element_type.hpp"

namespace cyxla {

std::optional<size_t> TensorSpec::checked_bytes() const noexcept {
  std::optional<size_t> total = element_size(type);
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d == 0) total = 0;  // no elements, however large the other dims: [2^63-1, 0]
  }
  for (int64_t d : dims) {
    total = checked_product(*total, static_cast<size_t>(d));
    if (!total) return std::nullopt;
  }
  return total;
}

size_t TensorSpec::bytes() const {
  const std::optional<size_t> total = checked_bytes();
  if (!total) {
    throw Error(ErrorKind::InvalidArgument,
                to_string() + " has a negative dimension or more bytes than a size_t counts");
  }
  return *total;
}

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
