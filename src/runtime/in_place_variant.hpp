// Large unaligned inputs read where they are. The CPU plugin reads only aligned memory in
// place, and copying a large input costs as much as a program that reads it once. A
// variant of the program takes such an input as a parameter that starts at the alignment
// below it, a little longer than the input, and slices the input out of it at an offset
// given on each call (a parameter of its own): the copy is gone.
//
// Why reading from there is safe: the input's size is a whole number of alignments, so
// the padded parameter ends at the alignment after the input's last byte; it reads no
// page that does not hold a byte of the input, and writes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/executable.hpp"
#include "runtime/tensor_spec.hpp"

namespace cyxla {

/// Inputs smaller than this are copied: the copy costs less than compiling the variant.
inline constexpr size_t kReadInPlaceMinBytes = size_t{1} << 20;

/// The inputs that a variant may read in place are among the first this many.
inline constexpr size_t kMaxReadInPlace = 64;

/// The element type of the variant's last input, one offset (in elements) per input it
/// reads in place.
inline constexpr PJRT_Buffer_Type kOffsetType = PJRT_Buffer_Type_S32;

/// How far `data` lies past the alignment below it when a variant can read input `input`
/// of `executable` from there (large enough, a whole number of alignments, not aligned,
/// at an offset of whole elements); 0 when it cannot. Only the first kMaxReadInPlace
/// inputs are asked about: a variant's inputs are a 64-bit mask.
size_t readable_offset(const Executable& executable, size_t input, const void* data) noexcept;

/// The inputs of the variant of `executable` that reads the inputs in `mask` (bit i: input
/// i) in place: each input as it is, except that one of `mask` is a one-dimensional
/// array of its element type kHostAlignment bytes longer; then kOffsetType[k] for the k
/// inputs of `mask`, in order.
std::vector<TensorSpec> in_place_variant_inputs(const Executable& executable, uint64_t mask);

}  // namespace cyxla
