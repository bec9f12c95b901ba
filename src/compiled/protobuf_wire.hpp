// A bounded reader of protobuf's wire format, for the messages of a plugin's serialized
// executable: varints, fixed 32/64-bit fields and length-delimited fields (groups are
// refused), every length checked against the bytes left, and nesting limited.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cyxla::compiled {

/// How deep messages may nest: far beyond XLA's thunk sequences (a loop inside a loop
/// inside a conditional is about a dozen), far below the stack's limit.
inline constexpr int kMaxMessageDepth = 64;

enum class WireType : uint8_t { Varint = 0, Fixed64 = 1, LengthDelimited = 2, Fixed32 = 5 };

/// One field of a message: a varint's or fixed field's value, or a length-delimited
/// field's bytes. Offsets count from the start of the outermost bytes read.
struct WireField {
  uint32_t number = 0;
  WireType wire = WireType::Varint;
  uint64_t value = 0;
  std::string_view bytes;
  size_t offset = 0;        // of its tag
  size_t bytes_offset = 0;  // of its bytes' first byte
};

/// The fields of one message, in order. Errors are cyxla::Error (Pjrt) naming the
/// message, the field and the byte offset where the bytes went wrong ("ThunkProto is
/// malformed at byte 1234: field 1 needs 5 bytes, and 2 are left").
class WireReader {
 public:
  /// A reader of `bytes`, a message named `message` (e.g. "ThunkProto") that starts at
  /// `offset` in the outermost bytes, `depth` messages deep.
  WireReader(std::string_view bytes, std::string_view message, size_t offset = 0,
             int depth = 0);

  /// The next field into `field`; false at the end of the message.
  bool next(WireField& field);

  /// A reader of the length-delimited `field` as the message `message`, one level deeper.
  WireReader nested(const WireField& field, std::string_view message) const;

  /// Throws unless `field` has wire type `wire`.
  void expect(const WireField& field, WireType wire) const;
  /// `field`'s value, which must be a varint.
  uint64_t varint_of(const WireField& field) const;
  /// `field`'s bytes, which must be length-delimited.
  std::string_view bytes_of(const WireField& field) const;
  /// Appends the varints of a repeated field, packed (one length-delimited field) or not.
  void append_varints(const WireField& field, std::vector<uint64_t>& out) const;

  /// Throws a cyxla::Error saying that the message is malformed at `offset`: `what`.
  [[noreturn]] void fail(size_t offset, const std::string& what) const;

 private:
  uint64_t varint(std::string_view& rest, size_t& offset) const;

  std::string_view rest_;
  std::string_view message_;
  size_t offset_;  // of rest_'s first byte in the outermost bytes
  int depth_;
};

/// The name of a wire type as protobuf's documentation spells it ("varint", "I64", ...).
std::string_view wire_type_name(WireType wire) noexcept;

}  // namespace cyxla::compiled
