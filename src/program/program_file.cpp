// The program file's header, checksum and metadata lines, checked in the order that gives
// the most telling message: what the file is, its format, its size, its checksum, and
// only then what it says; and the writer, which writes only what the reader reads back.
#include "program/program_file.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <utility>

#include "common/crc32.hpp"
#include "common/json.hpp"
#include "common/little_endian.hpp"
#include "common/utf8.hpp"
#include "pjrt/ffi.hpp"
#include "runtime/element_type.hpp"
#include "runtime/platforms.hpp"

namespace cyxla::program {
namespace {

constexpr std::string_view kMagic = "CYXLAPRG";
constexpr size_t kHeaderSize = 48;
constexpr size_t kCheckedFrom = 16;  // the CRC-32 covers the file from here to its end

/// A refusal on its way out of parse, which puts the file's name in front of `why`.
struct Refused {
  Refusal refusal;
  std::string why;
};

[[noreturn]] void refuse(Refusal refusal, std::string why) {
  throw Refused{refusal, std::move(why)};
}

[[noreturn]] void malformed(const std::string& why) {
  refuse(Refusal::Metadata, "malformed metadata: " + why);
}

/// `text` in quotes for a message: at most 80 characters, with control characters and
/// bytes that are not UTF-8 written as \xNN, so a message is always printable text.
std::string quoted(std::string_view text) {
  std::string out = "'";
  size_t characters = 0;
  for_each_printable(text, true, [&](std::string_view piece) {
    if (characters++ == 80) {
      out += "...";
      return false;
    }
    out += piece;
    return true;
  });
  out += "'";
  return out;
}

/// The element type that cyxla's ElementType enum spells `name` ("F32"), if cyxla carries it.
std::optional<PJRT_Buffer_Type> element_type(std::string_view name) {
#define CYXLA_PARSE_CASE_(enumerator, value, bytes, text) \
  if ((bytes) != 0 && name == #enumerator) return PJRT_Buffer_Type_##enumerator;
  CYXLA_ELEMENT_TYPES(CYXLA_PARSE_CASE_)
#undef CYXLA_PARSE_CASE_
  return std::nullopt;
}

/// How a file spells `type` ("F32"), or nothing for a type cyxla does not carry.
std::string_view element_type_spelling(PJRT_Buffer_Type type) {
  switch (type) {
#define CYXLA_SPELLING_CASE_(enumerator, value, bytes, text) \
  case PJRT_Buffer_Type_##enumerator:                        \
    return (bytes) != 0 ? #enumerator : "";
    CYXLA_ELEMENT_TYPES(CYXLA_SPELLING_CASE_)
#undef CYXLA_SPELLING_CASE_
  }
  return "";
}

/// "PRED, S8, ...": the element types a file may name.
std::string element_type_spellings() {
  std::string names;
#define CYXLA_NAME_LIST_(enumerator, value, bytes, text) \
  if ((bytes) != 0) names.append(names.empty() ? "" : ", ").append(#enumerator);
  CYXLA_ELEMENT_TYPES(CYXLA_NAME_LIST_)
#undef CYXLA_NAME_LIST_
  return names;
}

/// The value of an input or output line, `TYPE [d0,d1,...]`; `bad` refuses naming the line.
template <class Bad>
TensorSpec tensor_spec(std::string_view value, const Bad& bad) {
  const size_t space = value.find(' ');
  if (space == std::string_view::npos) bad("expected 'ELEMENT_TYPE [d0,d1,...]'");
  const std::string_view type_name = value.substr(0, space);
  std::string_view dims = value.substr(space + 1);
  const std::optional<PJRT_Buffer_Type> type = element_type(type_name);
  if (!type) {
    bad("unknown element type " + quoted(type_name) + " (known: " + element_type_spellings() +
        ")");
  }
  if (dims.size() < 2 || dims.front() != '[' || dims.back() != ']') {
    bad("the shape must be [d0,d1,...] ([] for a scalar)");
  }
  dims = dims.substr(1, dims.size() - 2);
  TensorSpec spec{*type, {}};
  if (dims.empty()) return spec;  // a scalar
  for (size_t start = 0;;) {
    const size_t comma = dims.find(',', start);
    const std::string_view item = dims.substr(start, comma - start);
    int64_t d = -1;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), d);
    if (item.empty() || item.front() == '-' || error != std::errc{} ||
        end != item.data() + item.size()) {
      bad("the dimension " + quoted(item) + " is not an integer from 0 to 2^63-1");
    }
    spec.dims.push_back(d);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  // The runtime sizes buffers from these dims: a product that wraps would size them small.
  if (!spec.checked_bytes()) {
    bad("the shape " + quoted(value.substr(space + 1)) +
        " holds more bytes than a 64-bit size counts");
  }
  return spec;
}

/// How deeply JSON `text` nests arrays and objects, counted without recursing.
std::ptrdiff_t nesting(std::string_view text) noexcept {
  std::ptrdiff_t depth = 0;
  std::ptrdiff_t deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      in_string = c != '"';
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

[[noreturn]] void not_a_structure(const std::string& why) {
  malformed("the output_tree is not an output structure (" + why + ")");
}

/// The keys of a dict or OrderedDict node: str or int, all different, and of one kind in
/// a dict (JAX sorts a dict's keys).
void check_keys(const json::Array& keys, std::string_view kind) {
  std::set<std::string, std::less<>> strings;
  std::set<int64_t> ints;
  for (const json::Value& key : keys) {
    const auto* text = key.as<std::string>();
    const auto* number = key.as<int64_t>();
    if (text == nullptr && number == nullptr) not_a_structure("a key that is not a str or int");
    if (text != nullptr ? !strings.insert(*text).second : !ints.insert(*number).second) {
      not_a_structure("a key appears twice");
    }
  }
  if (kind == "dict" && !strings.empty() && !ints.empty()) {
    not_a_structure("a dict with both str and int keys");
  }
}

/// The leaves of an encoded output structure, as cyxla._program.output_tree writes it: "*" a
/// leaf, null None, {"tuple": [...]} and {"list": [...]} their children, {"dict": [keys,
/// children]} and {"ordered_dict": [keys, children]}. Recurses no deeper than the parse.
size_t leaves(const json::Value& node) {
  if (const auto* text = node.as<std::string>(); text != nullptr && *text == "*") return 1;
  if (node.as<std::nullptr_t>() != nullptr) return 0;
  const auto* object = node.as<json::Object>();
  if (object == nullptr || object->size() != 1) {
    not_a_structure("a node that is not \"*\", null or an object of one member");
  }
  const auto& [kind, value] = *object->begin();
  const auto* items = value.as<json::Array>();
  const auto sum = [](const json::Array& children) {
    size_t total = 0;
    for (const json::Value& child : children) total += leaves(child);
    return total;
  };
  if (kind == "tuple" || kind == "list") {
    if (items == nullptr) not_a_structure("a " + kind + " that does not hold a list");
    return sum(*items);
  }
  if (kind == "dict" || kind == "ordered_dict") {
    const json::Array* keys = items != nullptr && items->size() == 2 ? (*items)[0].as<json::Array>()
                                                                     : nullptr;
    const json::Array* children = keys != nullptr ? (*items)[1].as<json::Array>() : nullptr;
    if (children == nullptr || keys->size() != children->size()) {
      not_a_structure("a " + kind + " that does not hold [keys, children] of one length");
    }
    check_keys(*keys, kind);
    return sum(*children);
  }
  not_a_structure("the unknown node " + quoted(kind));
}

/// The output_tree line's JSON, checked to nest at most kMaxTreeNesting deep and to be a
/// structure of `outputs` leaves.
void check_output_tree(std::string_view text, size_t outputs) {
  const std::optional<json::Value> tree = json::parse(text, kMaxTreeNesting);
  if (!tree) {
    // json::parse refuses both: tell them apart for the message.
    if (nesting(text) > kMaxTreeNesting) {
      malformed("the output_tree nests deeper than " + std::to_string(kMaxTreeNesting));
    }
    malformed("the output_tree is not JSON");
  }
  const size_t count = leaves(*tree);
  if (count != outputs) {
    malformed("the output_tree has " + std::to_string(count) + " leaves, but the file " +
              std::to_string(outputs) + " outputs");
  }
}

/// The donated_output lines' output indices, each a different output of the file.
std::vector<size_t> donated_outputs(const std::vector<std::string_view>& values, size_t outputs) {
  std::vector<size_t> indices;
  std::vector<bool> taken(values.empty() ? 0 : outputs);
  for (const std::string_view value : values) {
    size_t output = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), output);
    if (value.empty() || error != std::errc{} || end != value.data() + value.size() ||
        output >= outputs) {
      malformed("donated_output " + quoted(value) + " is not the index of one of the " +
                std::to_string(outputs) + " outputs");
    }
    if (taken[output]) malformed("donated_output " + std::string(value) + " appears twice");
    taken[output] = true;
    indices.push_back(output);
  }
  return indices;
}

/// The metadata lines into `file`; refuses what is not UTF-8 lines of `key value` with the
/// keys and values the format gives.
void parse_metadata(std::string_view text, ProgramFile& file) {
  for (size_t at = 0; at < text.size();) {
    const size_t length = utf8_length(text, at);
    if (length == 0) malformed("not UTF-8 text (at byte " + std::to_string(at) + ")");
    at += length;
  }
  if (!text.empty() && text.back() != '\n') malformed("the last line does not end with LF");
  // The keys that appear once at most, the first four required, and where they go.
  std::string tree;
  const std::pair<std::string_view, std::string*> single[] = {
      {"name", &file.name},
      {"platform", &file.platform},
      {"stablehlo_version", &file.stablehlo_version},
      {"cyxla_version", &file.cyxla_version},
      {"jax_version", &file.jax_version},
      {"jaxlib_version", &file.jaxlib_version},
      {"output_tree", &tree},
  };
  constexpr size_t kRequired = 4;
  constexpr size_t kTree = 6;
  bool seen[std::size(single)] = {};
  std::vector<std::string_view> donated;  // checked once the outputs are known
  for (size_t number = 1; !text.empty(); ++number) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = text.substr(end + 1);
    const auto bad = [&](const std::string& why) {
      malformed("line " + std::to_string(number) + " " + quoted(line) + ": " + why);
    };
    const size_t space = line.find(' ');
    if (space == 0 || space == std::string_view::npos || line.find('\r') != std::string_view::npos) {
      bad("expected 'key value'");
    }
    const std::string_view key = line.substr(0, space);
    const std::string_view value = line.substr(space + 1);
    if (key == "input") {
      file.inputs.push_back(tensor_spec(value, bad));
    } else if (key == "output") {
      file.outputs.push_back(tensor_spec(value, bad));
    } else if (key == "custom_call") {
      file.custom_calls.emplace_back(value);
    } else if (key == "donated_output") {
      donated.push_back(value);
    }
    for (size_t i = 0; i < std::size(single); ++i) {
      if (key != single[i].first) continue;
      if (seen[i]) malformed("the key " + quoted(key) + " appears twice");
      seen[i] = true;
      *single[i].second = value;
    }
    // Any other key is one a later cyxla added: ignored, as the format says.
  }
  for (size_t i = 0; i < kRequired; ++i) {
    if (!seen[i]) malformed("the required key " + quoted(single[i].first) + " is missing");
  }
  if (find_platform(file.platform) == nullptr) {
    std::string known;
    for (const Platform& p : kPlatforms) known.append(known.empty() ? "" : ", ").append(p.name);
    malformed("unknown platform " + quoted(file.platform) + " (known: " + known + ")");
  }
  file.donated_outputs = donated_outputs(donated, file.outputs.size());
  if (seen[kTree]) {
    check_output_tree(tree, file.outputs.size());
    file.output_tree = std::move(tree);
  }
}

/// `spec` as an input or output line's value, "F32 [4,8]".
std::string spec_text(const TensorSpec& spec) {
  const std::string_view type = element_type_spelling(spec.type);
  if (type.empty()) {
    throw Error(ErrorKind::InvalidArgument,
                "cannot write a program file: the element type " +
                    std::to_string(static_cast<int>(spec.type)) + " is not one cyxla carries");
  }
  std::string text = std::string(type) + " [";
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    if (i != 0) text += ',';
    text += std::to_string(spec.dims[i]);
  }
  return text + "]";
}

/// The custom calls the metadata claims, held against the program they describe. MLIR
/// bytecode keeps every string verbatim, so the name of a target the StableHLO calls is
/// among its bytes: a claim of one it never names is false, and refused. A claim of
/// cyxla's Python callbacks is refused too: they are functions of the process that
/// lowered the program, and no file carries them. Both doors read files here, so a file
/// gets one verdict and one text from Python and C alike.
void check_custom_call_claims(const ProgramFile& file) {
  for (const std::string& target : file.custom_calls) {
    if (target.empty()) malformed("a custom_call line names no target");
    if (target == pjrt::kPythonCallbackTarget) {
      refuse(Refusal::Metadata,
             "calls back into Python (the custom-call target " + quoted(target) +
                 "): its callbacks are functions of the Python process that lowered it, and "
                 "no other process has them; lower the function without its callbacks (for "
                 "Equinox's checks, set EQX_ON_ERROR=nan before tracing)");
    }
    if (file.stablehlo.find(target) == std::string::npos) {
      malformed("it claims the custom-call target " + quoted(target) +
                ", which its StableHLO never names");
    }
  }
}

}  // namespace

std::string_view refusal_word(Refusal refusal) noexcept {
  switch (refusal) {
    case Refusal::Magic: return "magic";
    case Refusal::Version: return "version";
    case Refusal::Size: return "size";
    case Refusal::Checksum: return "checksum";
    case Refusal::Reserved: return "reserved";
    case Refusal::Metadata: return "metadata";
  }
  return "metadata";  // GCOVR_EXCL_LINE: every refusal is a case above
}

ProgramFile parse(std::string_view bytes, std::string_view source) {
  try {
    const size_t size = bytes.size();
    // A file that ends within the magic is a truncated one.
    if (bytes.substr(0, kMagic.size()) != kMagic.substr(0, std::min(size, kMagic.size()))) {
      refuse(Refusal::Magic, "not a cyxla program file (it does not start with CYXLAPRG)");
    }
    if (size < kHeaderSize) {
      refuse(Refusal::Size, "truncated: " + std::to_string(size) + " bytes, shorter than the " +
                                std::to_string(kHeaderSize) + "-byte header");
    }
    const auto version = read_little_endian<uint32_t>(bytes, 8);
    if (version > kFormatVersion) {
      refuse(Refusal::Version, "written by a newer cyxla: format " + std::to_string(version) +
                                   ", this reads up to " + std::to_string(kFormatVersion) +
                                   "; upgrade cyxla");
    }
    if (version == 0) refuse(Refusal::Version, "format 0 does not exist (formats start at 1)");
    const auto crc = read_little_endian<uint32_t>(bytes, 12);
    const auto metadata_size = read_little_endian<uint64_t>(bytes, 16);
    const auto stablehlo_size = read_little_endian<uint64_t>(bytes, 24);
    const auto options_size = read_little_endian<uint64_t>(bytes, 32);
    const auto reserved = read_little_endian<uint64_t>(bytes, 40);
    for (const auto& [part, value] : {std::pair{"metadata", metadata_size},
                                      {"StableHLO", stablehlo_size},
                                      {"compile-options", options_size}}) {
      if (value > size) {
        refuse(Refusal::Size, std::string("malformed header: the ") + part + " size " +
                                  std::to_string(value) + " is larger than the file (" +
                                  std::to_string(size) + " bytes)");
      }
    }
    // Each size is at most the file's: the sum cannot overflow.
    const uint64_t expected = kHeaderSize + metadata_size + stablehlo_size + options_size;
    if (expected > size) {
      refuse(Refusal::Size, "truncated: " + std::to_string(size) + " bytes, the header describes " +
                                std::to_string(expected));
    }
    if (expected < size) {
      refuse(Refusal::Size, std::to_string(size - expected) + " trailing bytes after the " +
                                std::to_string(expected) + " the header describes");
    }
    if (crc32(bytes.substr(kCheckedFrom)) != crc) {
      refuse(Refusal::Checksum, "altered or corrupted (its CRC-32 does not match)");
    }
    if (reserved != 0) {
      refuse(Refusal::Reserved,
             "malformed header: the reserved field is " + std::to_string(reserved) + ", not 0");
    }
    ProgramFile file;
    parse_metadata(bytes.substr(kHeaderSize, metadata_size), file);
    file.stablehlo = bytes.substr(kHeaderSize + metadata_size, stablehlo_size);
    file.compile_options = bytes.substr(kHeaderSize + metadata_size + stablehlo_size);
    check_custom_call_claims(file);
    return file;
  } catch (const Refused& refused) {
    throw FileError(refused.refusal, std::string(source) + ": " + refused.why);
  }
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

std::string pack(const ProgramFile& file) {
  std::string metadata;
  const auto line = [&](std::string_view key, std::string_view value) {
    if (value.find_first_of("\r\n") != std::string_view::npos) {
      throw Error(ErrorKind::InvalidArgument,
                  "cannot write a program file: the program's " + std::string(key) +
                      " holds a line break, which a metadata line cannot");
    }
    metadata.append(key).append(" ").append(value).append("\n");
  };
  line("name", file.name);
  line("platform", file.platform);
  line("stablehlo_version", file.stablehlo_version);
  for (const TensorSpec& spec : file.inputs) line("input", spec_text(spec));
  for (const TensorSpec& spec : file.outputs) line("output", spec_text(spec));
  for (const std::string& target : file.custom_calls) line("custom_call", target);
  for (const size_t output : file.donated_outputs) line("donated_output", std::to_string(output));
  line("cyxla_version", file.cyxla_version);
  if (!file.jax_version.empty()) line("jax_version", file.jax_version);
  if (!file.jaxlib_version.empty()) line("jaxlib_version", file.jaxlib_version);
  if (file.output_tree) line("output_tree", *file.output_tree);
  try {
    ProgramFile checked;
    parse_metadata(metadata, checked);  // only what the reader reads back is written
  } catch (const Refused& refused) {
    throw Error(ErrorKind::InvalidArgument, "cannot write a program file: " + refused.why);
  }

  std::string bytes(kMagic);
  append_little_endian(bytes, kFormatVersion);
  append_little_endian(bytes, uint32_t{0});  // the CRC-32, once the rest is written
  append_little_endian(bytes, uint64_t{metadata.size()});
  append_little_endian(bytes, uint64_t{file.stablehlo.size()});
  append_little_endian(bytes, uint64_t{file.compile_options.size()});
  append_little_endian(bytes, uint64_t{0});  // reserved
  bytes += metadata;
  bytes += file.stablehlo;
  bytes += file.compile_options;
  const uint32_t crc = crc32(std::string_view(bytes).substr(kCheckedFrom));
  for (size_t i = 0; i < 4; ++i) bytes[12 + i] = static_cast<char>((crc >> (8 * i)) & 0xFF);
  return bytes;
}

}  // namespace cyxla::program
