// The ELF64 relocatable object reader. Every field that locates bytes (an offset, a size,
// an entry size, an index) is checked against the object before anything is read there.
#include "compiled/elf_object.hpp"

#include <algorithm>
#include <optional>

#include "common/checked.hpp"
#include "common/error.hpp"
#include "common/little_endian.hpp"

namespace cyxla::compiled {
namespace {

constexpr size_t kHeaderSize = 64, kSectionHeaderSize = 64, kSymbolSize = 24, kRelaSize = 24;
constexpr uint16_t kEtRel = 1, kEmX86_64 = 62, kShnLoreserve = 0xff00, kShnXindex = 0xffff;

[[noreturn]] void refuse(const std::string& what) {
  throw Error(ErrorKind::Pjrt, "the ELF object is not one cyxla reads: " + what);
}

/// The bytes [offset, offset + size) of `object`, or a refusal naming `what`.
std::string_view span(std::string_view object, uint64_t offset, uint64_t size,
                      const std::string& what) {
  const auto end = checked_sum(offset, size);
  if (!end || *end > object.size()) {
    refuse(what + " (" + std::to_string(size) + " bytes at offset " + std::to_string(offset) +
           ") runs past the object's " + std::to_string(object.size()) + " bytes");
  }
  return object.substr(offset, size);
}

/// The NUL-terminated name at `offset` in the string table `table` (the section `what`).
std::string name_at(std::string_view table, uint64_t offset, const std::string& what) {
  if (offset >= table.size()) {
    refuse(what + "'s name at " + std::to_string(offset) + " lies past its string table's " +
           std::to_string(table.size()) + " bytes");
  }
  const size_t end = table.find('\0', offset);
  if (end == std::string_view::npos) refuse(what + "'s name runs off its string table's end");
  return std::string(table.substr(offset, end - offset));
}

std::string section_label(size_t index) { return "section " + std::to_string(index); }

void check_header(std::string_view object) {
  if (object.size() < kHeaderSize) {
    refuse("it is " + std::to_string(object.size()) + " bytes, shorter than an ELF64 header");
  }
  if (object.substr(0, 4) != "\x7f" "ELF") refuse("it does not start with \\x7fELF");
  if (object[4] != 2) refuse("it is not ELF64 (class " + std::to_string(object[4]) + ")");
  if (object[5] != 1) refuse("it is not little-endian (data " + std::to_string(object[5]) + ")");
  if (object[6] != 1) refuse("its ELF version is " + std::to_string(object[6]) + ", not 1");
  const auto type = read_little_endian<uint16_t>(object, 16);
  if (type != kEtRel) refuse("it is not relocatable (ET_REL), its type is " + std::to_string(type));
  const auto machine = read_little_endian<uint16_t>(object, 18);
  if (machine != kEmX86_64) {
    refuse("it is for machine " + std::to_string(machine) + ", not x86-64 (62)");
  }
}

std::vector<ElfSymbol> read_symbols(std::string_view object, const ElfObject& elf,
                                     size_t index) {
  const ElfSection& symtab = elf.sections[index];
  const std::string what = section_label(index) + " (" + symtab.name + ")";
  if (symtab.size % kSymbolSize != 0) {
    refuse(what + "'s size " + std::to_string(symtab.size) + " is not a multiple of 24");
  }
  if (symtab.link >= elf.sections.size() || elf.sections[symtab.link].type != kShtStrtab) {
    refuse(what + " links to section " + std::to_string(symtab.link) + ", not a string table");
  }
  const ElfSection& strtab = elf.sections[symtab.link];
  const std::string_view names =
      span(object, strtab.offset, strtab.size, section_label(symtab.link));
  const std::string_view table = span(object, symtab.offset, symtab.size, what);
  std::vector<ElfSymbol> symbols;
  symbols.reserve(table.size() / kSymbolSize);
  for (size_t at = 0; at < table.size(); at += kSymbolSize) {
    const std::string label = "symbol " + std::to_string(at / kSymbolSize);
    ElfSymbol symbol;
    symbol.name = name_at(names, read_little_endian<uint32_t>(table, at), label);
    const auto info = static_cast<uint8_t>(table[at + 4]);
    symbol.binding = static_cast<uint8_t>(info >> 4);
    symbol.type = static_cast<uint8_t>(info & 0xf);
    symbol.section = read_little_endian<uint16_t>(table, at + 6);
    symbol.value = read_little_endian<uint64_t>(table, at + 8);
    symbol.size = read_little_endian<uint64_t>(table, at + 16);
    if (symbol.section == kShnXindex) {
      refuse(label + " ('" + symbol.name + "') uses extended section indexes");
    }
    if (symbol.section != kShnUndef && symbol.section < kShnLoreserve) {
      if (symbol.section >= elf.sections.size()) {
        refuse(label + " ('" + symbol.name + "') is in section " +
               std::to_string(symbol.section) + " of " + std::to_string(elf.sections.size()));
      }
      // A defined symbol lies within its section (its end may be the section's end).
      const ElfSection& home = elf.sections[symbol.section];
      const auto end = checked_sum(symbol.value, symbol.size);
      if (!end || *end > home.size) {
        refuse(label + " ('" + symbol.name + "', " + std::to_string(symbol.size) +
               " bytes at " + std::to_string(symbol.value) + ") runs past its section " +
               std::to_string(symbol.section) + "'s " + std::to_string(home.size) + " bytes");
      }
    } else if (symbol.section >= kShnLoreserve && symbol.section != kShnAbs &&
               symbol.section != kShnCommon) {
      refuse(label + " ('" + symbol.name + "') has the reserved section index " +
             std::to_string(symbol.section));
    }
    symbols.push_back(std::move(symbol));
  }
  return symbols;
}

ElfRelocations read_relocations(std::string_view object, const ElfObject& elf, size_t index,
                                size_t symtab) {
  const ElfSection& rela = elf.sections[index];
  const std::string what = section_label(index) + " (" + rela.name + ")";
  if (rela.size % kRelaSize != 0) {
    refuse(what + "'s size " + std::to_string(rela.size) + " is not a multiple of 24");
  }
  if (rela.link != symtab) {
    refuse(what + " links to section " + std::to_string(rela.link) + ", not the symbol table");
  }
  if (rela.info == 0 || rela.info >= elf.sections.size()) {
    refuse(what + " applies to section " + std::to_string(rela.info) + " of " +
           std::to_string(elf.sections.size()));
  }
  const ElfSection& target = elf.sections[rela.info];
  const std::string_view table = span(object, rela.offset, rela.size, what);
  ElfRelocations relocations{rela.info, {}};
  relocations.entries.reserve(table.size() / kRelaSize);
  for (size_t at = 0; at < table.size(); at += kRelaSize) {
    ElfRelocation r;
    r.offset = read_little_endian<uint64_t>(table, at);
    const auto info = read_little_endian<uint64_t>(table, at + 8);
    r.type = static_cast<uint32_t>(info & 0xffffffff);
    r.symbol = static_cast<uint32_t>(info >> 32);
    r.addend = static_cast<int64_t>(read_little_endian<uint64_t>(table, at + 16));
    const std::string label = what + "'s relocation " + std::to_string(at / kRelaSize);
    if (r.symbol >= elf.symbols.size()) {
      refuse(label + " names symbol " + std::to_string(r.symbol) + " of " +
             std::to_string(elf.symbols.size()));
    }
    const auto end = checked_sum(r.offset, relocation_width(r.type));
    if (!end || *end > target.size) {
      refuse(label + " (" + relocation_type_name(r.type) + " at " + std::to_string(r.offset) +
             ") writes past section " + std::to_string(rela.info) + "'s " +
             std::to_string(target.size) + " bytes");
    }
    relocations.entries.push_back(r);
  }
  return relocations;
}

}  // namespace

ElfObject read_elf_object(std::string_view object) {
  check_header(object);
  const auto shoff = read_little_endian<uint64_t>(object, 40);
  const auto shentsize = read_little_endian<uint16_t>(object, 58);
  const auto shnum = read_little_endian<uint16_t>(object, 60);
  const auto shstrndx = read_little_endian<uint16_t>(object, 62);
  if (shentsize != kSectionHeaderSize) {
    refuse("its section headers are " + std::to_string(shentsize) + " bytes, not 64");
  }
  // Extended numbering (e_shnum 0 and the count in section 0) is for 65,280+ sections.
  if (shnum == 0) refuse("it has no section headers (or uses extended section numbering)");
  if (shstrndx >= shnum) {
    refuse("its section names are in section " + std::to_string(shstrndx) + " of " +
           std::to_string(shnum));
  }
  const std::string_view headers =
      span(object, shoff, static_cast<uint64_t>(shnum) * kSectionHeaderSize, "the section headers");
  ElfObject elf;
  elf.size = static_cast<size_t>(shoff) + headers.size();
  elf.sections.resize(shnum);
  for (size_t i = 0; i < shnum; ++i) {
    const size_t at = i * kSectionHeaderSize;
    ElfSection& s = elf.sections[i];
    s.type = read_little_endian<uint32_t>(headers, at + 4);
    s.flags = read_little_endian<uint64_t>(headers, at + 8);
    s.offset = read_little_endian<uint64_t>(headers, at + 24);
    s.size = read_little_endian<uint64_t>(headers, at + 32);
    s.link = read_little_endian<uint32_t>(headers, at + 40);
    s.info = read_little_endian<uint32_t>(headers, at + 44);
    s.alignment = read_little_endian<uint64_t>(headers, at + 48);
    if (s.type != kShtNobits && i != 0) {
      (void)span(object, s.offset, s.size, section_label(i));
      elf.size = std::max(elf.size, static_cast<size_t>(s.offset + s.size));
    }
  }
  const ElfSection& names = elf.sections[shstrndx];
  if (names.type != kShtStrtab) {
    refuse("its section names are in section " + std::to_string(shstrndx) +
           ", which is not a string table");
  }
  const std::string_view name_table =
      span(object, names.offset, names.size, section_label(shstrndx));
  for (size_t i = 0; i < shnum; ++i) {
    elf.sections[i].name =
        name_at(name_table, read_little_endian<uint32_t>(headers, i * kSectionHeaderSize),
                section_label(i));
  }
  std::optional<size_t> symtab;
  for (size_t i = 0; i < shnum; ++i) {
    const uint32_t type = elf.sections[i].type;
    if (type == kShtRel) refuse(section_label(i) + " holds relocations without addends (SHT_REL)");
    if (type != kShtSymtab) continue;
    if (symtab) refuse("it has two symbol tables, sections " + std::to_string(*symtab) + " and " +
                       std::to_string(i));
    symtab = i;
  }
  if (symtab) elf.symbols = read_symbols(object, elf, *symtab);
  for (size_t i = 0; i < shnum; ++i) {
    if (elf.sections[i].type != kShtRela) continue;
    if (!symtab) refuse(section_label(i) + " holds relocations, and there is no symbol table");
    elf.relocations.push_back(read_relocations(object, elf, i, *symtab));
  }
  for (const ElfSymbol& symbol : elf.symbols) {
    if (!symbol.defined() && !symbol.name.empty() && symbol.binding != 0) {
      elf.undefined.push_back(symbol.name);
    }
  }
  return elf;
}

std::string relocation_type_name(uint32_t type) {
  switch (type) {
    case 0: return "R_X86_64_NONE";
    case 1: return "R_X86_64_64";
    case 2: return "R_X86_64_PC32";
    case 3: return "R_X86_64_GOT32";
    case 4: return "R_X86_64_PLT32";
    case 5: return "R_X86_64_COPY";
    case 6: return "R_X86_64_GLOB_DAT";
    case 7: return "R_X86_64_JUMP_SLOT";
    case 8: return "R_X86_64_RELATIVE";
    case 9: return "R_X86_64_GOTPCREL";
    case 10: return "R_X86_64_32";
    case 11: return "R_X86_64_32S";
    case 12: return "R_X86_64_16";
    case 13: return "R_X86_64_PC16";
    case 14: return "R_X86_64_8";
    case 15: return "R_X86_64_PC8";
    case 16: return "R_X86_64_DTPMOD64";
    case 17: return "R_X86_64_DTPOFF64";
    case 18: return "R_X86_64_TPOFF64";
    case 19: return "R_X86_64_TLSGD";
    case 20: return "R_X86_64_TLSLD";
    case 21: return "R_X86_64_DTPOFF32";
    case 22: return "R_X86_64_GOTTPOFF";
    case 23: return "R_X86_64_TPOFF32";
    case 24: return "R_X86_64_PC64";
    case 25: return "R_X86_64_GOTOFF64";
    case 26: return "R_X86_64_GOTPC32";
    case 27: return "R_X86_64_GOT64";
    case 28: return "R_X86_64_GOTPCREL64";
    case 29: return "R_X86_64_GOTPC64";
    case 32: return "R_X86_64_SIZE32";
    case 33: return "R_X86_64_SIZE64";
    case 41: return "R_X86_64_GOTPCRELX";
    case 42: return "R_X86_64_REX_GOTPCRELX";
    default: return "relocation type " + std::to_string(type);
  }
}

size_t relocation_width(uint32_t type) noexcept {
  switch (type) {
    case 1: case 8: case 16: case 17: case 18: case 24: case 25: case 27: case 28: case 29:
    case 33:
      return 8;
    case 2: case 3: case 4: case 9: case 10: case 11: case 19: case 20: case 21: case 22:
    case 23: case 26: case 32: case 41: case 42:
      return 4;
    case 12: case 13: return 2;
    case 14: case 15: return 1;
    default: return 0;
  }
}

}  // namespace cyxla::compiled
