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

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/executable.hpp"
#include "runtime/host_memory.hpp"
#include "runtime/tensor_spec.hpp"

namespace cyxla {

/// Inputs smaller than this are copied: the copy costs less than compiling the variant.
inline constexpr size_t kReadInPlaceMinBytes = size_t{1} << 20;

/// The element type of the variant's last input, one offset (in elements) per input it
/// reads in place.
inline constexpr PJRT_Buffer_Type kOffsetType = PJRT_Buffer_Type_S32;

/// The inputs of `executable` that a variant could read in place, by their size (bit i:
/// input i): kReadInPlaceMinBytes or more, a whole number of alignments, among the first
/// 64 (a variant's inputs are a 64-bit mask). Where one is unaligned is each call's.
uint64_t in_place_candidates(const Executable& executable) noexcept;

/// How far `data` lies past the alignment below it, when that is a whole number of
/// `element_bytes` elements: where a variant reads a candidate input from; 0 for aligned
/// memory, and for an offset inside an element (such an input is copied).
inline size_t readable_offset(const void* data, size_t element_bytes) noexcept {
  const size_t offset = reinterpret_cast<uintptr_t>(data) % kHostAlignment;
  return offset % element_bytes == 0 ? offset : 0;
}

/// Calls `f(i)` for each input i of `mask` (bit i), in order.
template <typename F>
void for_each_input(uint64_t mask, F&& f) {
  for (; mask != 0; mask &= mask - 1) f(static_cast<size_t>(std::countr_zero(mask)));
}

/// The inputs of the variant of `executable` that reads the inputs in `mask` (bit i: input
/// i) in place: each input as it is, except that one of `mask` is a one-dimensional
/// array of its element type kHostAlignment bytes longer; then kOffsetType[k] for the k
/// inputs of `mask`, in order.
std::vector<TensorSpec> in_place_variant_inputs(const Executable& executable, uint64_t mask);

}  // namespace cyxla
