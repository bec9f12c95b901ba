// The rule of which unaligned inputs a variant reads in place, and the variant's inputs.
#include "runtime/in_place_variant.hpp"

#include <algorithm>
#include <bit>

#include "runtime/element_type.hpp"

namespace cyxla {

uint64_t in_place_candidates(const Executable& executable) noexcept {
  uint64_t candidates = 0;
  const std::vector<size_t>& bytes = executable.input_bytes();
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 64); ++i) {
    if (bytes[i] >= kReadInPlaceMinBytes && bytes[i] % kHostAlignment == 0) {
      candidates |= uint64_t{1} << i;
    }
  }
  return candidates;
}

std::vector<TensorSpec> in_place_variant_inputs(const Executable& executable, uint64_t mask) {
  std::vector<TensorSpec> specs = executable.inputs();
  for_each_input(mask, [&](size_t i) {
    const size_t padded_bytes = executable.input_bytes()[i] + kHostAlignment;
    specs[i].dims = {static_cast<int64_t>(padded_bytes / element_size(specs[i].type))};
  });
  specs.push_back({kOffsetType, {std::popcount(mask)}});
  return specs;
}

}  // namespace cyxla
