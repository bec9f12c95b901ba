// What a program takes or returns at one position: element type and shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cyxla/element_type.h"

namespace cyxla {

struct TensorSpec {
  PJRT_Buffer_Type type = PJRT_Buffer_Type_INVALID;
  std::vector<int64_t> dims;

  size_t element_count() const noexcept;
  /// Bytes of a dense row-major array of this spec.
  size_t bytes() const noexcept;
  /// "f32[3,4]", for messages.
  std::string to_string() const;

  bool operator==(const TensorSpec&) const = default;
};

}  // namespace cyxla
