// The loader: a plan drawn from the objects alone (which sections load where, which
// symbols resolve to what, which GOT slots and stubs the relocations need), then one
// mapping filled, relocated and protected. Every index, offset and size it takes from an
// object is checked where it is used: the objects come from disk.
#include "kernels/loaded_code.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#if defined(__x86_64__) && defined(__linux__)
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "common/checked.hpp"
#include "common/error.hpp"
#include "compiled/host_symbols.hpp"

namespace cyxla::kernels {

using compiled::CompiledForm;
using compiled::ElfObject;
using compiled::ElfRelocation;
using compiled::ElfRelocations;
using compiled::ElfSection;
using compiled::ElfSymbol;

[[noreturn]] static void refuse(const std::string& why) { throw Error(ErrorKind::Pjrt, why); }

#if defined(__x86_64__) && defined(__linux__)

namespace detail {

Mapping::Mapping(size_t bytes) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) {
    refuse("the system would not map " + std::to_string(bytes) + " bytes for its kernels (" +
           std::strerror(errno) + ")");
  }
  data_ = static_cast<std::byte*>(data);
  size_ = bytes;
}

Mapping::Mapping(Mapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    Mapping old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Mapping::~Mapping() {
  if (data_ != nullptr) munmap(data_, size_);
}

}  // namespace detail

namespace {

constexpr uint64_t kShfWrite = 0x1, kShfAlloc = 0x2, kShfExecinstr = 0x4, kShfTls = 0x400;
constexpr uint32_t kShtInitArray = 14, kShtFiniArray = 15, kShtPreinitArray = 16;
constexpr uint16_t kShnLoreserve = 0xff00;
constexpr uint8_t kStbGlobal = 1, kStbWeak = 2;
constexpr uint8_t kSttTls = 6, kSttGnuIfunc = 10;

// The relocation types of compiled::applies_relocation.
constexpr uint32_t kR64 = 1, kPc32 = 2, kPlt32 = 4, kGotpcrel = 9, kR32 = 10, kR32s = 11,
                   kPc64 = 24, kGotoff64 = 25, kGotpcrelx = 41, kRexGotpcrelx = 42;

constexpr size_t kSlotBytes = 8;
// A stub is `jmp *slot(%rip)` (ff 25 rel32), padded with int3 to 8 bytes.
constexpr size_t kStubBytes = 8;
// At most 2 GiB mapped, so that any two places in the mapping (a stub and its slot, code
// and its constants) are within a rel32's reach of each other.
constexpr size_t kMaxMappedBytes = size_t{1} << 31;

// Values are computed wider than any field, so that a range check sees the true value.
__extension__ typedef __int128 Wide;

enum class Region { Code, ReadOnly, Writable };

/// What a symbol resolves to before the mapping exists: a place in a loaded section
/// (object, section, value), an absolute address (object kAbsolute, value), or the GOT
/// (object kGot).
struct Target {
  static constexpr size_t kAbsolute = SIZE_MAX, kGot = SIZE_MAX - 1;
  size_t object = kAbsolute;
  size_t section = 0;
  uint64_t value = 0;
  auto operator<=>(const Target&) const = default;
};

/// A global or weak symbol's definition: what it is, which object gives it.
struct Definition {
  Target target;
  size_t object = 0;
  bool weak = false;
};

/// Where a loaded section goes.
struct Placement {
  Region region = Region::Code;
  size_t offset = 0;  // within its region until laid out, then within the mapping
};

std::optional<size_t> aligned_up(size_t offset, size_t alignment) {
  const auto end = checked_sum(offset, alignment - 1);
  if (!end) return std::nullopt;
  return *end & ~(alignment - 1);
}

bool fits_signed_32(Wide v) { return v >= INT32_MIN && v <= INT32_MAX; }
bool fits_unsigned_32(Wide v) { return v >= 0 && v <= UINT32_MAX; }

class Loader {
 public:
  explicit Loader(const CompiledForm& form) : form_(form) {}

  /// The whole load: plan, map, fill, relocate, protect.
  void run(detail::Mapping& mapping, std::map<std::string, void*, std::less<>>& symbols);

 private:
  std::string object_label(size_t i) const {
    return "its object '" + form_.executable.objects[i].name + "'";
  }
  std::string section_label(size_t i, size_t k) const {
    return "section " + std::to_string(k) + " ('" + form_.objects[i].sections[k].name + "')";
  }

  void place_sections();
  void collect_globals();
  void resolve_undefined();
  Target target_of(size_t i, uint32_t index) const;
  void plan_relocations();
  void lay_out();
  uint64_t address_of(const Target& target) const;
  void fill();
  void write_got_and_stubs();
  void relocate(size_t i, const ElfRelocations& relocations);
  void protect() const;

  const CompiledForm& form_;
  size_t page_ = 4096;
  /// placements_[i][k]: where section k of object i goes; none when it is not loaded.
  std::vector<std::vector<std::optional<Placement>>> placements_;
  /// The global and weak symbols the objects define (in loaded sections, or absolute).
  std::map<std::string, Definition, std::less<>> globals_;
  /// The undefined names resolved (a weak one that nothing defines is absent: 0).
  std::map<std::string, Target, std::less<>> externals_;
  /// GOT slot and stub indexes by target.
  std::map<Target, size_t> slots_, stubs_;
  size_t region_end_[3] = {0, 0, 0};
  size_t stubs_at_ = 0, got_at_ = 0, read_only_at_ = 0, writable_at_ = 0, total_ = 0;
  std::byte* base_ = nullptr;
};

void Loader::place_sections() {
  placements_.resize(form_.objects.size());
  for (size_t i = 0; i < form_.objects.size(); ++i) {
    const ElfObject& object = form_.objects[i];
    placements_[i].resize(object.sections.size());
    // Section 0 is the null section, whatever its flags say.
    for (size_t k = 1; k < object.sections.size(); ++k) {
      const ElfSection& s = object.sections[k];
      // Nothing unwinds through a kernel: its unwinding tables stay behind.
      if ((s.flags & kShfAlloc) == 0 || s.name == ".eh_frame") continue;
      const std::string what = object_label(i) + "'s " + section_label(i, k);
      if ((s.flags & kShfTls) != 0) {
        refuse(what + " holds thread-local data, which cyxla does not load");
      }
      if (s.type == kShtInitArray || s.type == kShtFiniArray || s.type == kShtPreinitArray) {
        refuse(what + " lists initializers or finalizers, which cyxla does not run");
      }
      if ((s.flags & kShfWrite) != 0 && (s.flags & kShfExecinstr) != 0) {
        refuse(what + " is both writable and executable, which cyxla does not map");
      }
      const uint64_t alignment = std::max<uint64_t>(s.alignment, 1);
      if (!std::has_single_bit(alignment) || alignment > page_) {
        refuse(what + " asks for an alignment of " + std::to_string(s.alignment) +
               " bytes, not a power of two up to a page");
      }
      // Read-only data stays read-only: a kernel that wrote to its constants by mistake
      // would otherwise change them for every later call.
      const Region region = (s.flags & kShfExecinstr) != 0 ? Region::Code
                            : (s.flags & kShfWrite) != 0   ? Region::Writable
                                                           : Region::ReadOnly;
      size_t& end = region_end_[static_cast<size_t>(region)];
      const auto start = aligned_up(end, static_cast<size_t>(alignment));
      const auto next = start ? checked_sum(*start, s.size) : std::nullopt;
      if (!next || *next > kMaxMappedBytes) {
        refuse(what + " takes the objects past the " + std::to_string(kMaxMappedBytes >> 20) +
               " MiB cyxla maps for kernels");
      }
      placements_[i][k] = Placement{region, *start};
      end = *next;
    }
  }
}

void Loader::collect_globals() {
  for (size_t i = 0; i < form_.objects.size(); ++i) {
    const ElfObject& object = form_.objects[i];
    for (const ElfSymbol& s : object.symbols) {
      if (s.section == compiled::kShnCommon) {
        refuse(object_label(i) + " has the common symbol '" + s.name +
               "', which cyxla does not allocate");
      }
      if (!s.defined() || s.name.empty() || (s.binding != kStbGlobal && s.binding != kStbWeak)) {
        continue;
      }
      Definition definition{Target{Target::kAbsolute, 0, s.value}, i, s.binding == kStbWeak};
      if (s.section != compiled::kShnAbs) {
        // Not a place this process holds: it stays out of the table.
        if (s.section >= kShnLoreserve || s.section >= placements_[i].size() ||
            !placements_[i][s.section]) {
          continue;
        }
        definition.target = Target{i, s.section, s.value};
      }
      const auto [at, inserted] = globals_.emplace(s.name, definition);
      // The first definition stands, unless a global one follows a weak one.
      if (inserted || definition.weak) continue;
      if (!at->second.weak) {
        refuse("its symbol '" + s.name + "' is defined twice, by its objects '" +
               form_.executable.objects[at->second.object].name + "' and '" +
               form_.executable.objects[i].name + "'");
      }
      at->second = definition;
    }
  }
}

void Loader::resolve_undefined() {
  for (size_t i = 0; i < form_.objects.size(); ++i) {
    for (const ElfSymbol& s : form_.objects[i].symbols) {
      if (s.defined() || s.name.empty() || externals_.contains(s.name)) continue;
      if (const auto global = globals_.find(s.name); global != globals_.end()) {
        externals_.emplace(s.name, global->second.target);
        continue;
      }
      // The name a static linker gives the GOT's address (position-independent code
      // reaches it as an undefined symbol).
      if (s.name == "_GLOBAL_OFFSET_TABLE_") {
        externals_.emplace(s.name, Target{Target::kGot, 0, 0});
        continue;
      }
      if (compiled::is_host_symbol(s.name)) {
        if (void* address = dlsym(RTLD_DEFAULT, s.name.c_str()); address != nullptr) {
          const auto value = reinterpret_cast<uint64_t>(address);
          externals_.emplace(s.name, Target{Target::kAbsolute, 0, value});
          continue;
        }
      }
      // A weak reference nothing defines is null, as a static linker makes it.
      if (s.binding == kStbWeak) continue;
      refuse(object_label(i) + " needs the symbol '" + s.name +
             "', which this process does not provide");
    }
  }
}

Target Loader::target_of(size_t i, uint32_t index) const {
  const ElfObject& object = form_.objects[i];
  if (index >= object.symbols.size()) {
    refuse(object_label(i) + " relocates against symbol " + std::to_string(index) + " of " +
           std::to_string(object.symbols.size()));
  }
  const ElfSymbol& s = object.symbols[index];
  if (s.section == compiled::kShnAbs) return Target{Target::kAbsolute, 0, s.value};
  if (!s.defined()) {
    if (s.name.empty()) return Target{};  // the null symbol: 0
    const auto external = externals_.find(s.name);
    return external != externals_.end() ? external->second : Target{};
  }
  if (s.type == kSttTls || s.type == kSttGnuIfunc) {
    refuse(object_label(i) + "'s symbol '" + s.name + "' is " +
           (s.type == kSttTls ? "thread-local" : "an indirect function") +
           ", which cyxla does not resolve");
  }
  if (s.section >= kShnLoreserve || s.section >= placements_[i].size() ||
      !placements_[i][s.section]) {
    refuse(object_label(i) + " refers to the symbol '" + s.name + "' of section " +
           std::to_string(s.section) + ", which cyxla does not load");
  }
  return Target{i, s.section, s.value};
}

void Loader::plan_relocations() {
  for (size_t i = 0; i < form_.objects.size(); ++i) {
    for (const ElfRelocations& relocations : form_.objects[i].relocations) {
      // Relocations of a section that stays behind (.eh_frame) are not applied.
      if (relocations.target >= placements_[i].size() || !placements_[i][relocations.target]) {
        continue;
      }
      for (const ElfRelocation& r : relocations.entries) {
        if (!compiled::applies_relocation(r.type)) {
          refuse(object_label(i) + " has a " + compiled::relocation_type_name(r.type) +
                 " relocation, which cyxla does not apply");
        }
        const Target target = target_of(i, r.symbol);
        if (r.type == kGotpcrel || r.type == kGotpcrelx || r.type == kRexGotpcrelx) {
          slots_.emplace(target, slots_.size());
        } else if ((r.type == kPc32 || r.type == kPlt32) && target.object == Target::kAbsolute) {
          // An address outside the mapping may lie beyond a rel32's reach: a stub in
          // reach jumps there through a slot (used only where the direct value does not fit).
          slots_.emplace(target, slots_.size());
          stubs_.emplace(target, stubs_.size());
        }
      }
    }
  }
}

void Loader::lay_out() {
  // Code, then the stubs; from the next page, read-only data, then the GOT; from the next
  // page, writable data. Every region is at most kMaxMappedBytes (2^31) and so is each
  // term below: the sums cannot wrap a size_t, and the last check bounds the total (so
  // that a stub always reaches its slot).
  const auto too_big = [] {
    refuse("its objects need more than the " + std::to_string(kMaxMappedBytes >> 20) +
           " MiB cyxla maps for kernels");
  };
  if (stubs_.size() > kMaxMappedBytes / kStubBytes ||
      slots_.size() > kMaxMappedBytes / kSlotBytes) {
    too_big();
  }
  const size_t code = region_end_[static_cast<size_t>(Region::Code)];
  const size_t read_only = region_end_[static_cast<size_t>(Region::ReadOnly)];
  const size_t writable = region_end_[static_cast<size_t>(Region::Writable)];
  stubs_at_ = *aligned_up(code, kStubBytes);
  read_only_at_ = *aligned_up(stubs_at_ + stubs_.size() * kStubBytes, page_);
  got_at_ = *aligned_up(read_only_at_ + read_only, kSlotBytes);
  writable_at_ = *aligned_up(got_at_ + slots_.size() * kSlotBytes, page_);
  const auto total = aligned_up(writable_at_ + writable, page_);
  if (!total || *total > kMaxMappedBytes) too_big();
  total_ = *total;
  for (auto& object : placements_) {
    for (auto& placement : object) {
      if (!placement) continue;
      placement->offset += placement->region == Region::Code       ? 0
                           : placement->region == Region::ReadOnly ? read_only_at_
                                                                   : writable_at_;
    }
  }
}

uint64_t Loader::address_of(const Target& target) const {
  if (target.object == Target::kAbsolute) return target.value;
  if (target.object == Target::kGot) return reinterpret_cast<uint64_t>(base_ + got_at_);
  // Modulo 2^64: a symbol's value lies within its section (the reader checked).
  return reinterpret_cast<uint64_t>(base_) + placements_[target.object][target.section]->offset +
         target.value;
}

void Loader::fill() {
  for (size_t i = 0; i < form_.objects.size(); ++i) {
    const std::string& contents = form_.executable.objects[i].contents;
    const ElfObject& object = form_.objects[i];
    for (size_t k = 0; k < object.sections.size(); ++k) {
      const auto& placement = placements_[i][k];
      const ElfSection& s = object.sections[k];
      if (!placement || s.type == compiled::kShtNobits) continue;  // zero-filled by mmap
      const auto end = checked_sum(s.offset, s.size);
      if (!end || *end > contents.size()) {
        refuse(object_label(i) + "'s " + section_label(i, k) + " runs past the object's end");
      }
      std::memcpy(base_ + placement->offset, contents.data() + s.offset, s.size);
    }
  }
}

void Loader::write_got_and_stubs() {
  for (const auto& [target, slot] : slots_) {
    const uint64_t address = address_of(target);
    std::memcpy(base_ + got_at_ + slot * kSlotBytes, &address, sizeof address);
  }
  for (const auto& [target, stub] : stubs_) {
    const size_t from = stubs_at_ + stub * kStubBytes + 6;  // the jump's end
    const size_t slot = got_at_ + slots_.at(target) * kSlotBytes;
    // The slot follows the stub in the mapping, under 2 GiB (kMaxMappedBytes) after it.
    const auto displacement = static_cast<int32_t>(slot - from);
    std::byte* const at = base_ + stubs_at_ + stub * kStubBytes;
    const unsigned char jump[2] = {0xff, 0x25};
    std::memcpy(at, jump, 2);
    std::memcpy(at + 2, &displacement, 4);
    std::memset(at + 6, 0xcc, kStubBytes - 6);
  }
}

void Loader::relocate(size_t i, const ElfRelocations& relocations) {
  const ElfObject& object = form_.objects[i];
  if (relocations.target >= placements_[i].size() || !placements_[i][relocations.target]) return;
  const ElfSection& section = object.sections[relocations.target];
  std::byte* const start = base_ + placements_[i][relocations.target]->offset;
  const uint64_t got = reinterpret_cast<uint64_t>(base_ + got_at_);
  for (const ElfRelocation& r : relocations.entries) {
    const size_t width = r.type == kR64 || r.type == kPc64 || r.type == kGotoff64 ? 8 : 4;
    const auto end = checked_sum(r.offset, width);
    const auto where = [&] {
      return compiled::relocation_type_name(r.type) + " relocation at offset " +
             std::to_string(r.offset) + " of " + section_label(i, relocations.target) + " of " +
             object_label(i);
    };
    if (!end || *end > section.size) refuse("the " + where() + " writes past the section's end");
    const Target target = target_of(i, r.symbol);
    const Wide s = address_of(target), a = r.addend;
    const Wide p = reinterpret_cast<uint64_t>(start + r.offset);
    const auto slot = [&] {
      return Wide{reinterpret_cast<uint64_t>(base_ + got_at_ + slots_.at(target) * kSlotBytes)};
    };
    Wide value = 0;
    bool fits = true;
    switch (r.type) {
      case kR64: value = s + a; break;
      case kPc64: value = s + a - p; break;
      case kGotoff64: value = s + a - Wide{got}; break;
      case kPc32:
      case kPlt32:
        value = s + a - p;
        if (!fits_signed_32(value)) {
          if (const auto stub = stubs_.find(target); stub != stubs_.end()) {
            const std::byte* const jump = base_ + stubs_at_ + stub->second * kStubBytes;
            value = Wide{reinterpret_cast<uint64_t>(jump)} + a - p;
          }
        }
        fits = fits_signed_32(value);
        break;
      case kGotpcrel:
      case kGotpcrelx:
      case kRexGotpcrelx:
        value = slot() + a - p;
        fits = fits_signed_32(value);
        break;
      case kR32:
        value = s + a;
        fits = fits_unsigned_32(value);
        break;
      case kR32s:
        value = s + a;
        fits = fits_signed_32(value);
        break;
      default:
        refuse(object_label(i) + " has a " + compiled::relocation_type_name(r.type) +
               " relocation, which cyxla does not apply");
    }
    if (!fits) {
      // A section's symbol has no name: its section's stands for it.
      const ElfSymbol& symbol = object.symbols[r.symbol];
      const std::string against =
          !symbol.name.empty() || symbol.section >= object.sections.size()
              ? "'" + symbol.name + "'"
              : section_label(i, symbol.section);
      refuse("the " + where() + " against " + against +
             " has a value that does not fit its 32-bit field");
    }
    // A 64-bit field holds its value modulo 2^64, as the ELF specification computes it.
    if (width == 8) {
      const auto field = static_cast<uint64_t>(value);
      std::memcpy(start + r.offset, &field, 8);
    } else {
      const auto field = static_cast<uint32_t>(static_cast<uint64_t>(value));
      std::memcpy(start + r.offset, &field, 4);
    }
  }
}

void Loader::protect() const {
  const auto set = [&](size_t from, size_t to, int protection, const char* what) {
    if (from == to) return;
    if (mprotect(base_ + from, to - from, protection) != 0) {
      refuse(std::string("the system would not protect its ") + what + " (" +
             std::strerror(errno) + ")");
    }
  };
  set(0, read_only_at_, PROT_READ | PROT_EXEC, "code");
  set(read_only_at_, writable_at_, PROT_READ, "read-only data");
}

void Loader::run(detail::Mapping& mapping, std::map<std::string, void*, std::less<>>& symbols) {
  if (form_.objects.size() != form_.executable.objects.size()) {
    refuse("its " + std::to_string(form_.executable.objects.size()) + " objects were read as " +
           std::to_string(form_.objects.size()));
  }
  page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  place_sections();
  collect_globals();
  resolve_undefined();
  plan_relocations();
  lay_out();
  if (total_ == 0) return;  // nothing to load
  mapping = detail::Mapping(total_);
  base_ = mapping.data();
  fill();
  write_got_and_stubs();
  for (size_t i = 0; i < form_.objects.size(); ++i) {
    for (const ElfRelocations& relocations : form_.objects[i].relocations) relocate(i, relocations);
  }
  protect();
  for (const auto& [name, definition] : globals_) {
    // Only places in the mapping: an absolute symbol is nothing loaded here.
    if (definition.target.object == Target::kAbsolute) continue;
    symbols.emplace(name, reinterpret_cast<void*>(address_of(definition.target)));
  }
}

}  // namespace

LoadedCode LoadedCode::load(const CompiledForm& form) {
  LoadedCode code;
  Loader(form).run(code.mapping_, code.symbols_);
  return code;
}

#else  // not x86-64 Linux

namespace detail {

Mapping::Mapping(size_t) { refuse("cyxla loads kernels on x86-64 Linux only"); }
Mapping::Mapping(Mapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
Mapping& Mapping::operator=(Mapping&& other) noexcept {
  data_ = std::exchange(other.data_, nullptr);
  size_ = std::exchange(other.size_, 0);
  return *this;
}
Mapping::~Mapping() = default;

}  // namespace detail

LoadedCode LoadedCode::load(const CompiledForm&) {
  refuse("cyxla loads kernels on x86-64 Linux only");
}

#endif

void* LoadedCode::symbol(std::string_view name) const noexcept {
  const auto found = symbols_.find(name);
  return found != symbols_.end() ? found->second : nullptr;
}

}  // namespace cyxla::kernels
