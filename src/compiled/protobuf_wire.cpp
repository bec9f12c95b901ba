// The protobuf wire reader: every length and offset checked before it is used.
#include "compiled/protobuf_wire.hpp"

#include "common/error.hpp"
#include "common/little_endian.hpp"

namespace cyxla::compiled {

WireReader::WireReader(std::string_view bytes, std::string_view message, size_t offset,
                       int depth)
    : rest_(bytes), message_(message), offset_(offset), depth_(depth) {
  if (depth_ > kMaxMessageDepth) {
    fail(offset_, "messages nest deeper than " + std::to_string(kMaxMessageDepth) + " levels");
  }
}

void WireReader::fail(size_t offset, const std::string& what) const {
  throw Error(ErrorKind::Pjrt, std::string(message_) + " is malformed at byte " +
                                   std::to_string(offset) + ": " + what);
}

uint64_t WireReader::varint(std::string_view& rest, size_t& offset) const {
  const size_t start = offset;
  uint64_t value = 0;
  for (int shift = 0;; shift += 7) {
    if (rest.empty()) fail(start, "a varint is cut short by the end of the message");
    const auto byte = static_cast<unsigned char>(rest.front());
    rest.remove_prefix(1);
    ++offset;
    // The tenth byte holds the 64th bit alone: more, or a byte after it, would not fit.
    if (shift == 63 && byte > 1) fail(start, "a varint is longer than 64 bits");
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
}

bool WireReader::next(WireField& field) {
  if (rest_.empty()) return false;
  field.offset = offset_;
  const uint64_t tag = varint(rest_, offset_);
  const uint64_t number = tag >> 3;
  if (number == 0 || number > 0x1FFFFFFF) {
    fail(field.offset, "field number " + std::to_string(number) + " is out of range");
  }
  field.number = static_cast<uint32_t>(number);
  field.value = 0;
  field.bytes = {};
  field.bytes_offset = 0;
  const auto take = [&](uint64_t size) {
    if (size > rest_.size()) {
      fail(field.offset, "field " + std::to_string(field.number) + " needs " +
                             std::to_string(size) + " bytes, and " +
                             std::to_string(rest_.size()) + " are left");
    }
    const std::string_view bytes = rest_.substr(0, static_cast<size_t>(size));
    rest_.remove_prefix(static_cast<size_t>(size));
    offset_ += static_cast<size_t>(size);
    return bytes;
  };
  switch (tag & 7) {
    case 0:
      field.wire = WireType::Varint;
      field.value = varint(rest_, offset_);
      break;
    case 1:
      field.wire = WireType::Fixed64;
      field.value = read_little_endian<uint64_t>(take(8), 0);
      break;
    case 2: {
      field.wire = WireType::LengthDelimited;
      const uint64_t size = varint(rest_, offset_);
      field.bytes_offset = offset_;
      field.bytes = take(size);
      break;
    }
    case 5:
      field.wire = WireType::Fixed32;
      field.value = read_little_endian<uint32_t>(take(4), 0);
      break;
    case 3:
    case 4:
      fail(field.offset, "field " + std::to_string(field.number) +
                             " is a group (wire type " + std::to_string(tag & 7) +
                             "), which XLA's messages do not use");
    default:
      fail(field.offset, "field " + std::to_string(field.number) + " has wire type " +
                             std::to_string(tag & 7) + ", which protobuf does not define");
  }
  return true;
}

WireReader WireReader::nested(const WireField& field, std::string_view message) const {
  return WireReader(bytes_of(field), message, field.bytes_offset, depth_ + 1);
}

void WireReader::expect(const WireField& field, WireType wire) const {
  if (field.wire != wire) {
    fail(field.offset, "field " + std::to_string(field.number) + " has wire type " +
                           std::string(wire_type_name(field.wire)) + ", expected " +
                           std::string(wire_type_name(wire)));
  }
}

uint64_t WireReader::varint_of(const WireField& field) const {
  expect(field, WireType::Varint);
  return field.value;
}

std::string_view WireReader::bytes_of(const WireField& field) const {
  expect(field, WireType::LengthDelimited);
  return field.bytes;
}

void WireReader::append_varints(const WireField& field, std::vector<uint64_t>& out) const {
  if (field.wire == WireType::Varint) {
    out.push_back(field.value);
    return;
  }
  std::string_view packed = bytes_of(field);
  size_t offset = field.bytes_offset;
  while (!packed.empty()) out.push_back(varint(packed, offset));
}

std::string_view wire_type_name(WireType wire) noexcept {
  switch (wire) {
    case WireType::Varint: return "varint";
    case WireType::Fixed64: return "I64";
    case WireType::LengthDelimited: return "LEN";
    case WireType::Fixed32: return "I32";
  }
  return "unknown";
}

}  // namespace cyxla::compiled
