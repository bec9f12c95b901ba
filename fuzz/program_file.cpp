// libFuzzer target: the program-file reader (src/program/program_file.cpp), with a
// structure-aware mutator: it edits metadata lines (keys, element types, dims, donated
// outputs, output trees), section sizes and the reserved field, and then writes the CRC-32
// again so that most inputs get past the checksum to the metadata. FileError is the
// reader's refusal; anything else (a crash, a sanitizer report, another exception) is a
// finding, as is a file it accepts that its own writer cannot write back.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/crc32.hpp"
#include "common/little_endian.hpp"
#include "program/program_file.hpp"

namespace {

namespace program = cyxla::program;

constexpr size_t kHeaderSize = 48;
constexpr size_t kCheckedFrom = 16;

/// A small random source from libFuzzer's seed, so that a mutation replays.
class Random {
 public:
  explicit Random(unsigned int seed) : state_(seed * 2654435761u + 1) {}
  uint64_t next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_;
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
  template <class T, size_t N>
  const T& pick(const std::array<T, N>& items) {
    return items[below(N)];
  }

 private:
  uint64_t state_;
};

// Values that reach the checks' edges: sizes that wrap, dims whose product overflows.
constexpr std::array<uint64_t, 12> kEdges = {
    0, 1, 2, 3, 47, 48, 0x7fffffffffffffff, 0x8000000000000000, 0xffffffffffffffff,
    0x4000000000000000, 0x100000000, 0xffffffff};
constexpr std::array<std::string_view, 12> kTypes = {
    "F32", "F64", "S8", "PRED", "C128", "BF16", "U64", "F8E4M3FN", "f32", "INVALID", "", "TOKEN"};
constexpr std::array<std::string_view, 14> kKeys = {
    "name",          "platform", "stablehlo_version", "input",       "output",
    "custom_call",   "donated_output", "cyxla_version", "jax_version", "jaxlib_version",
    "output_tree",   "unknown_key", "", "input "};
constexpr std::array<std::string_view, 10> kTrees = {
    "\"*\"", "null", "{\"tuple\": [\"*\", \"*\"]}", "{\"list\": []}",
    "{\"dict\": [[\"a\", 1], [\"*\", \"*\"]]}", "{\"ordered_dict\": [[\"a\"], [\"*\"]]}",
    "[[[[[[[[[[[[", "{\"dict\": [[\"a\", \"a\"], [\"*\", \"*\"]]}", "\"\\ud800\"", "1e999"};

std::string dims(Random& random) {
  std::string out = "[";
  const size_t rank = random.below(5);
  for (size_t i = 0; i < rank; ++i) {
    if (i != 0) out += ',';
    out += random.below(3) == 0 ? std::to_string(random.pick(kEdges))
                                : std::to_string(random.below(70000));
  }
  return out + "]";
}

/// One line of metadata that the reader has a check for.
std::string metadata_line(Random& random) {
  const std::string_view key = random.pick(kKeys);
  std::string value;
  if (key == "input" || key == "output") {
    value = std::string(random.pick(kTypes)) + " " + dims(random);
  } else if (key == "donated_output") {
    value = random.below(2) == 0 ? std::to_string(random.below(4))
                                 : std::to_string(random.pick(kEdges));
  } else if (key == "output_tree") {
    value = random.pick(kTrees);
  } else if (key == "platform") {
    value = random.pick(std::array<std::string_view, 5>{"cpu", "cuda", "host", "tpu", "rocm"});
  } else {
    value = "x";
  }
  return std::string(key) + " " + value + "\n";
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const size_t take = end == std::string_view::npos ? text.size() : end + 1;
    lines.emplace_back(text.substr(0, take));
    text.remove_prefix(take);
  }
  return lines;
}

void write_u64(std::string& file, size_t offset, uint64_t value) {
  std::string bytes;
  cyxla::append_little_endian<uint64_t>(bytes, value);
  file.replace(offset, 8, bytes);
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  Random random(seed);
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto section = [&](size_t offset) {
    return cyxla::read_little_endian<uint64_t>(input, offset);
  };
  const bool whole = size >= kHeaderSize &&
                     section(16) <= size && section(24) <= size && section(32) <= size &&
                     kHeaderSize + section(16) + section(24) + section(32) == size;
  const size_t choice = random.below(8);
  if (!whole || choice == 0) {
    // libFuzzer's own mutations of any byte; the CRC is written again mostly.
    const size_t n = LLVMFuzzerMutate(data, size, max_size);
    if (n >= kHeaderSize && random.below(8) != 0) {
      std::string file(reinterpret_cast<const char*>(data), n);
      const uint32_t crc = cyxla::crc32(std::string_view(file).substr(kCheckedFrom));
      for (size_t i = 0; i < 4; ++i) data[12 + i] = static_cast<uint8_t>(crc >> (8 * i));
    }
    return n;
  }
  const size_t metadata_size = section(16);
  std::vector<std::string> lines = lines_of(input.substr(kHeaderSize, metadata_size));
  std::string rest(input.substr(kHeaderSize + metadata_size));
  std::string header(input.substr(0, kHeaderSize));
  const size_t at = random.below(lines.size());
  switch (choice) {
    case 1:  // a new line that one of the checks reads
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(random.below(lines.size() + 1)),
                   metadata_line(random));
      break;
    case 2:  // a line dropped, or repeated
      if (lines.empty()) break;
      if (random.below(2) == 0) {
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(at));
      } else {
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), lines[at]);
      }
      break;
    case 3:  // a line's bytes mutated by libFuzzer
      if (lines.empty()) break;
      {
        std::string& line = lines[at];
        const size_t old_size = line.size();
        line.resize(old_size + 64);
        line.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(line.data()), old_size,
                                     old_size + 64));
      }
      break;
    case 4:  // a section size or the reserved field set to an edge
      write_u64(header, 16 + 8 * random.below(4),
                random.below(2) == 0 ? random.pick(kEdges)
                                     : section(16 + 8 * random.below(3)) + random.below(3) - 1);
      break;
    case 5:  // the StableHLO or the compile options, which the reader passes on unread
      if (!rest.empty()) {
        rest[random.below(rest.size())] ^= static_cast<char>(1 + random.below(255));
      }
      break;
    default:  // an input or output line's spec replaced
      for (std::string& line : lines) {
        if ((line.starts_with("input ") || line.starts_with("output ")) && random.below(2) == 0) {
          line = line.substr(0, line.find(' ')) + " " + std::string(random.pick(kTypes)) + " " +
                 dims(random) + "\n";
        }
      }
  }
  std::string metadata;
  for (const std::string& line : lines) metadata += line;
  if (choice != 4) write_u64(header, 16, metadata.size());
  std::string file = header + metadata + rest;
  const uint32_t crc = cyxla::crc32(std::string_view(file).substr(kCheckedFrom));
  for (size_t i = 0; i < 4; ++i) file[12 + i] = static_cast<char>(crc >> (8 * i));
  if (file.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, file.data(), file.size());
  return file.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  program::ProgramFile file;
  try {
    file = program::parse(bytes, "fuzz.cyxla");
  } catch (const program::FileError&) {
    return 0;
  }
  // What the reader accepts, the writer writes, and the reader reads back the same.
  const program::ProgramFile again = program::parse(program::pack(file), "packed");
  if (again.inputs != file.inputs || again.outputs != file.outputs ||
      again.donated_outputs != file.donated_outputs || again.output_tree != file.output_tree ||
      again.stablehlo != file.stablehlo || again.compile_options != file.compile_options) {
    std::abort();
  }
  return 0;
}
