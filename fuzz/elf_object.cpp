// libFuzzer target: the ELF64 relocatable object reader (src/compiled/elf_object.cpp) on
// its own, from the kernels' objects of real executables, and the kernel loader
// (src/kernels/loaded_code.cpp) over what it accepts: loaded, never called. A refusal is a
// cyxla::Error; what the reader accepts must hold what it promises (indexes in range,
// relocations inside their sections), and what the loader loads is whole pages; anything
// else (a crash, a sanitizer report, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "compiled/elf_object.hpp"
#include "compiled/runner_verdict.hpp"
#include "kernels/loaded_code.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  using namespace cyxla::compiled;
  try {
    const ElfObject elf = read_elf_object(bytes);
    if (elf.size > bytes.size()) std::abort();
    for (const ElfSymbol& symbol : elf.symbols) {
      if (symbol.section != kShnUndef && symbol.section < 0xff00 &&
          symbol.section >= elf.sections.size()) {
        std::abort();
      }
    }
    for (const ElfRelocations& section : elf.relocations) {
      if (section.target >= elf.sections.size()) std::abort();
      const uint64_t target_size = elf.sections[section.target].size;
      for (const ElfRelocation& r : section.entries) {
        if (r.symbol >= elf.symbols.size()) std::abort();
        if (r.offset > target_size || relocation_width(r.type) > target_size - r.offset) {
          std::abort();
        }
      }
    }
    // The object alone, as a compiled form of one object would hold it.
    CompiledForm form;
    form.executable.objects.push_back({"fuzzed", std::string(bytes)});
    form.objects.push_back(elf);
    const cyxla::kernels::LoadedCode code = cyxla::kernels::LoadedCode::load(form);
    if (code.mapped_bytes() % 4096 != 0) std::abort();
  } catch (const cyxla::Error&) {
  }
  return 0;
}
