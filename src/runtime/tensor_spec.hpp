// What a program takes or returns at one position: element type and shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cyxla/element_type.h"

namespace cyxla {

struct TensorSpec {
  PJRT_Buffer_Type type = PJRT_Buffer_Type_INVALID;
  std::vector<int64_t> dims;

  /// Bytes of a dense row-major array of this spec, or nothing when a dimension is
  /// negative or the product does not fit in a size_t (dims from a file or a caller).
  std::optional<size_t> checked_bytes() const noexcept;
  /// checked_bytes(), or InvalidArgument saying why there is none.
  size_t bytes() const;
  /// "f32[3,4]", for messages.
  std::string to_string() const;

  bool operator==(const TensorSpec&) const = default;
};

}  // namespace cyxla
