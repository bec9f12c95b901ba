// An ELF64 relocatable object as XLA's CPU compiler writes its kernels (x86-64, little-
// endian, ET_REL): sections, symbols and relocations, every offset, size and index checked
// against the object's bytes. Anything else is refused by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cyxla::compiled {

// Section types and special section indexes of the ELF specification.
inline constexpr uint32_t kShtProgbits = 1, kShtSymtab = 2, kShtStrtab = 3, kShtRela = 4,
                          kShtNobits = 8, kShtRel = 9;
inline constexpr uint16_t kShnUndef = 0, kShnAbs = 0xfff1, kShnCommon = 0xfff2;

struct ElfSection {
  std::string name;
  uint32_t type = 0;
  uint64_t flags = 0;
  /// Where its bytes lie in the object; a SHT_NOBITS section has none (only a size).
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t alignment = 0;
  uint32_t link = 0;
  uint32_t info = 0;
};

struct ElfSymbol {
  std::string name;
  uint8_t binding = 0;  // STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2
  uint8_t type = 0;     // STT_NOTYPE 0, OBJECT 1, FUNC 2, SECTION 3, FILE 4
  /// Its section's index, or kShnUndef (defined elsewhere), kShnAbs or kShnCommon.
  uint16_t section = 0;
  uint64_t value = 0;
  uint64_t size = 0;

  bool defined() const noexcept { return section != kShnUndef; }
};

struct ElfRelocation {
  uint64_t offset = 0;  // within the section it applies to
  uint32_t type = 0;    // R_X86_64_*
  uint32_t symbol = 0;  // index into ElfObject::symbols
  int64_t addend = 0;
};

/// The relocations of one SHT_RELA section, applied to section `target`.
struct ElfRelocations {
  uint32_t target = 0;
  std::vector<ElfRelocation> entries;
};

struct ElfObject {
  /// Every section by index; sections[0] is the null section.
  std::vector<ElfSection> sections;
  /// The symbol table by index (symbols[0] is the null symbol); empty without one.
  std::vector<ElfSymbol> symbols;
  std::vector<ElfRelocations> relocations;
  /// The names of the global and weak symbols the object uses and does not define.
  std::vector<std::string> undefined;
  /// The bytes the object spans: its section headers come last (e_shoff + e_shnum *
  /// e_shentsize), and so does every section's end.
  size_t size = 0;
};

/// `bytes` read as an ELF64 little-endian x86-64 relocatable object (trailing bytes are
/// allowed: ElfObject::size says where it ends). Throws cyxla::Error (Pjrt) saying what
/// is wrong and where.
ElfObject read_elf_object(std::string_view bytes);

/// The name of x86-64 relocation `type` ("R_X86_64_PC32"), or "type N" for one cyxla does
/// not name.
std::string relocation_type_name(uint32_t type);

/// Bytes of the field that relocation `type` writes: 8, 4, or 0 for a type cyxla does not
/// know (whose extent is not checked).
size_t relocation_width(uint32_t type) noexcept;

}  // namespace cyxla::compiled
