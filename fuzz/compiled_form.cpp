// libFuzzer target: the readers of the CPU plugin's serialized executable (src/compiled/):
// the protobuf envelope, the CompilationResultProto with its thunks, buffers and HLO
// module, each ELF object it holds, and the runner verdict over what they read; where the
// verdict is `kernels`, the kernel runner's program built from it (objects loaded,
// constants filled, never run). judge() turns every refusal into a `pjrt` verdict and the
// program's into a cyxla::Error; anything else (a crash, a sanitizer report, another
// exception) is a finding. The mutator mostly edits the bytes of one nested field (an
// ELF object, a thunk, an allocation) and writes the lengths of the fields around it
// again, so that edits reach the readers below the envelope.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "compiled/protobuf_wire.hpp"
#include "compiled/runner_verdict.hpp"
#include "kernels/kernel_program.hpp"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using cyxla::compiled::WireField;
using cyxla::compiled::WireReader;
using cyxla::compiled::WireType;

void append_varint(std::string& out, uint64_t value) {
  do {
    out += static_cast<char>((value & 0x7f) | (value > 0x7f ? 0x80 : 0));
    value >>= 7;
  } while (value != 0);
}

/// `bytes` mutated by libFuzzer, growing by `room` bytes at most.
std::string mutated(std::string_view bytes, size_t room) {
  std::string out(bytes);
  out.resize(bytes.size() + room);
  out.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(out.data()), bytes.size(), out.size()));
  return out;
}

/// `message` with the bytes of one length-delimited field `depth` levels down mutated
/// (the path drawn from `seed`), each enclosing length written again; the message's own
/// bytes mutated where it is not a message or has no such field.
std::string mutate_nested(std::string_view message, int depth, unsigned& seed, size_t room) {
  if (depth == 0) return mutated(message, room);
  std::vector<WireField> nested;
  try {
    WireReader reader(message, "the message");
    for (WireField f; reader.next(f);) {
      if (f.wire == WireType::LengthDelimited) nested.push_back(f);
    }
  } catch (const cyxla::Error&) {
    return mutated(message, room);
  }
  if (nested.empty()) return mutated(message, room);
  const WireField& field = nested[seed % nested.size()];
  seed /= static_cast<unsigned>(nested.size()) + 1;
  const std::string inner = mutate_nested(field.bytes, depth - 1, seed, room);
  std::string out(message.substr(0, field.offset));
  append_varint(out, static_cast<uint64_t>(field.number) << 3 | 2);
  append_varint(out, inner.size());
  out += inner;
  out += message.substr(field.bytes_offset + field.bytes.size());
  return out;
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  if (seed % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);  // bytes as they are
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t room = max_size > size + 16 ? (max_size - size - 16) / 2 : 0;
  unsigned path = seed / 8;
  // Two to four levels: the executable's fields, an object's or a thunk's, and below.
  const std::string out = mutate_nested(input, 2 + static_cast<int>(seed % 3), path, room);
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const cyxla::compiled::Judged judged = cyxla::compiled::judge(bytes);
  if (judged.verdict.reason.empty()) std::abort();  // a verdict always says why
  if (!judged.form) {
    if (judged.verdict.runner != cyxla::compiled::Runner::Pjrt) std::abort();
    return 0;
  }
  const auto summary = cyxla::compiled::summarize(*judged.form);
  if (summary.objects != judged.form->executable.objects.size()) std::abort();
  if (judged.verdict.runner != cyxla::compiled::Runner::Kernels) return 0;
  // The shape the program claims: its parameters' sizes in order, its outputs' sizes.
  const cyxla::compiled::CpuExecutable& e = judged.form->executable;
  std::vector<size_t> inputs, outputs;
  for (const cyxla::compiled::Allocation& a : e.buffers.allocations) {
    if (!a.is_entry_computation_parameter || a.parameter_number > 64) continue;
    if (inputs.size() <= a.parameter_number) inputs.resize(a.parameter_number + 1);
    inputs[a.parameter_number] = a.size;
  }
  for (const cyxla::compiled::Slice& s : e.results) outputs.push_back(s.size);
  try {
    const cyxla::kernels::KernelProgram program(*judged.form, {inputs, outputs, {}});
    if (program.places().size() != e.buffers.allocations.size()) std::abort();
  } catch (const cyxla::Error&) {
    // refused by name: the program stays on PJRT
  }
  return 0;
}
