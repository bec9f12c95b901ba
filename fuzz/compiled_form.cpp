// libFuzzer target: the readers of the CPU plugin's serialized executable (src/compiled/):
// the protobuf envelope, the CompilationResultProto with its thunks and buffers, each ELF
// object it holds, and the runner verdict over what they read. judge() turns every
// refusal into a `pjrt` verdict; anything else (a crash, a sanitizer report, an exception
// escaping it) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "compiled/runner_verdict.hpp"

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
  return 0;
}
