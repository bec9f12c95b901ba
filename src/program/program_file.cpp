// The program file's header, checksum and metadata lines, checked in the order that gives
// the most telling message: what the file is, its format, its size, its checksum, and
// only then what it says.
#include "program/program_file.hpp"

#include <cerrno>
#include <charconv>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>
#include <limits>
#include <optional>

#include "common/error.hpp"
#include "program/crc32.hpp"
#include "runtime/element_type.hpp"

namespace cyxla::program {
namespace {

constexpr std::string_view kMagic = "CYXLAPRG";
constexpr size_t kHeaderSize = 48;

[[noreturn]] void refuse(std::string_view source, const std::string& why) {
  throw Error(ErrorKind::ProgramFile, std::string(source) + ": " + why);
}

template <class T>
T little_endian(std::string_view bytes, size_t offset) noexcept {
  T value = 0;
  for (size_t i = sizeof(T); i-- > 0;) {
    value = static_cast<T>((value << 8) | static_cast<unsigned char>(bytes[offset + i]));
  }
  return value;
}

/// The element type that cyxla's ElementType enum spells `name` ("F32"), if cyxla carries it.
std::optional<PJRT_Buffer_Type> element_type(std::string_view name) {
#define CYXLA_PARSE_CASE_(enumerator, value, bytes, text) \
  if ((bytes) != 0 && name == #enumerator) return PJRT_Buffer_Type_##enumerator;
  CYXLA_ELEMENT_TYPES(CYXLA_PARSE_CASE_)
#undef CYXLA_PARSE_CASE_
  return std::nullopt;
}

/// `TYPE [d0,d1,...]` of an input or output line.
TensorSpec tensor_spec(std::string_view value, std::string_view source, std::string_view line) {
  const auto bad = [&](const std::string& why) -> TensorSpec {
    refuse(source, "malformed metadata line '" + std::string(line) + "': " + why);
  };
  const size_t space = value.find(' ');
  if (space == std::string_view::npos) return bad("expected 'TYPE [d0,d1,...]'");
  const std::string_view type_name = value.substr(0, space);
  std::string_view dims = value.substr(space + 1);
  const std::optional<PJRT_Buffer_Type> type = element_type(type_name);
  if (!type) return bad("unknown element type '" + std::string(type_name) + "'");
  if (dims.size() < 2 || dims.front() != '[' || dims.back() != ']') {
    return bad("the shape must be [d0,d1,...] ([] for a scalar)");
  }
  dims = dims.substr(1, dims.size() - 2);
  TensorSpec spec{*type, {}};
  while (!dims.empty()) {
    const size_t comma = dims.find(',');
    const std::string_view item = dims.substr(0, comma);
    int64_t d = -1;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), d);
    if (item.empty() || item.front() == '-' || error != std::errc{} ||
        end != item.data() + item.size()) {
      return bad("the dimension '" + std::string(item) + "' is not an integer >= 0");
    }
    spec.dims.push_back(d);
    if (comma == std::string_view::npos) break;
    dims = dims.substr(comma + 1);
    if (dims.empty()) return bad("the shape ends with a comma");
  }
  return spec;
}

void parse_metadata(std::string_view text, std::string_view source, ProgramFile& file) {
  // The keys a file must have, once each, and where they go.
  const std::pair<std::string_view, std::string*> required[] = {
      {"name", &file.name},
      {"platform", &file.platform},
      {"stablehlo_version", &file.stablehlo_version},
      {"cyxla_version", &file.cyxla_version},
  };
  bool seen[std::size(required)] = {};
  std::vector<std::string_view> donated;  // checked once the outputs are known
  while (!text.empty()) {
    const size_t end = text.find('\n');
    if (end == std::string_view::npos) refuse(source, "malformed metadata: the last line has no LF");
    const std::string_view line = text.substr(0, end);
    text = text.substr(end + 1);
    const size_t space = line.find(' ');
    if (space == 0 || space == std::string_view::npos || line.find('\r') != std::string_view::npos) {
      refuse(source, "malformed metadata line '" + std::string(line) + "': expected 'key value'");
    }
    const std::string_view key = line.substr(0, space);
    const std::string_view value = line.substr(space + 1);
    if (key == "input") {
      file.inputs.push_back(tensor_spec(value, source, line));
    } else if (key == "output") {
      file.outputs.push_back(tensor_spec(value, source, line));
    } else if (key == "custom_call") {
      file.custom_calls.emplace_back(value);
    } else if (key == "donated_output") {
      donated.push_back(value);
    }
    for (size_t i = 0; i < std::size(required); ++i) {
      if (key != required[i].first) continue;
      if (seen[i]) refuse(source, "malformed metadata: the key '" + std::string(key) + "' appears twice");
      *required[i].second = value;
      seen[i] = true;
    }
    // Other keys are for other readers (output_tree) or later versions: ignored.
  }
  for (size_t i = 0; i < std::size(required); ++i) {
    if (!seen[i]) {
      refuse(source, "malformed metadata: the required key '" + std::string(required[i].first) +
                         "' is missing");
    }
  }
  for (const std::string_view value : donated) {
    size_t output = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), output);
    if (value.empty() || error != std::errc{} || end != value.data() + value.size() ||
        output >= file.outputs.size()) {
      refuse(source, "malformed metadata: donated_output '" + std::string(value) +
                         "' is not the index of one of the " +
                         std::to_string(file.outputs.size()) + " outputs");
    }
    if (std::ranges::find(file.donated_outputs, output) != file.donated_outputs.end()) {
      refuse(source, "malformed metadata: donated_output " + std::string(value) + " appears twice");
    }
    file.donated_outputs.push_back(output);
  }
}

}  // namespace

ProgramFile parse(std::string_view bytes, std::string_view source) {
  const size_t size = bytes.size();
  if (bytes.substr(0, kMagic.size()) != kMagic.substr(0, std::min(size, kMagic.size()))) {
    refuse(source, "not a cyxla program file (no CYXLAPRG at its start)");
  }
  if (size < kHeaderSize) {
    refuse(source, "truncated: " + std::to_string(size) + " bytes, shorter than the " +
                       std::to_string(kHeaderSize) + "-byte header");
  }
  const auto version = little_endian<uint32_t>(bytes, 8);
  if (version > kFormatVersion) {
    refuse(source, "written by a newer cyxla: format " + std::to_string(version) +
                       ", this reads up to " + std::to_string(kFormatVersion) + "; upgrade");
  }
  if (version == 0) refuse(source, "format 0 is not a format any cyxla wrote");
  const auto crc = little_endian<uint32_t>(bytes, 12);
  const auto metadata_size = little_endian<uint64_t>(bytes, 16);
  const auto stablehlo_size = little_endian<uint64_t>(bytes, 24);
  const auto options_size = little_endian<uint64_t>(bytes, 32);
  if (little_endian<uint64_t>(bytes, 40) != 0) refuse(source, "malformed header: the reserved field is not 0");
  for (const auto& [part, value] : {std::pair{"metadata", metadata_size},
                                    {"StableHLO", stablehlo_size},
                                    {"compile-options", options_size}}) {
    if (value > size) {
      refuse(source, std::string("malformed header: the ") + part + " size " +
                         std::to_string(value) + " is larger than the file (" +
                         std::to_string(size) + " bytes)");
    }
  }
  const uint64_t expected = kHeaderSize + metadata_size + stablehlo_size + options_size;
  if (expected > size) {
    refuse(source, "truncated: the header promises " + std::to_string(expected) +
                       " bytes, the file has " + std::to_string(size));
  }
  if (expected < size) {
    refuse(source, std::to_string(size - expected) + " trailing bytes after the " +
                       std::to_string(expected) + " the header describes");
  }
  if (crc32(bytes.substr(16)) != crc) refuse(source, "altered or corrupted (CRC-32 mismatch)");

  ProgramFile file;
  const std::string_view metadata = bytes.substr(kHeaderSize, metadata_size);
  parse_metadata(metadata, source, file);
  file.stablehlo = bytes.substr(kHeaderSize + metadata_size, stablehlo_size);
  file.compile_options = bytes.substr(kHeaderSize + metadata_size + stablehlo_size, options_size);
  return file;
}

ProgramFile read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::InvalidArgument,
                "cannot open the program file " + path + ": " + std::strerror(errno));
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    throw Error(ErrorKind::InvalidArgument, "cannot read the program file " + path);
  }
  return parse(bytes, path);
}

}  // namespace cyxla::program
