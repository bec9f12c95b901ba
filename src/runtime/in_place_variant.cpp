// The rule of which unaligned inputs a variant reads in place, and the variant's inputs.
#include "runtime/in_place_variant.hpp"

#include <algorithm>
#include <bit>

#include "runtime/element_type.hpp"
#include "runtime/host_memory.hpp"

namespace cyxla {

size_t readable_offset(const Executable& executable, size_t input, const void* data) noexcept {
  // Small inputs first: this runs on every call of run, a small program's included.
  const size_t bytes = executable.input_bytes()[input];
  if (bytes < kReadInPlaceMinBytes || bytes % kHostAlignment != 0) return 0;
  const size_t offset = reinterpret_cast<uintptr_t>(data) % kHostAlignment;
  return offset % element_size(executable.inputs()[input].type) == 0 ? offset : 0;
}

std::vector<TensorSpec> in_place_variant_inputs(const Executable& executable, uint64_t mask) {
  std::vector<TensorSpec> specs = executable.inputs();
  for (size_t i = 0; i < std::min(specs.size(), kMaxReadInPlace); ++i) {
    if ((mask >> i & 1) == 0) continue;
    const size_t element = element_size(specs[i].type);
    const auto padded = (executable.input_bytes()[i] + kHostAlignment) / element;
    specs[i].dims = {static_cast<int64_t>(padded)};
  }
  specs.push_back({kOffsetType, {std::popcount(mask)}});
  return specs;
}

}  // namespace cyxla
