// Registering cyxla's LAPACK handlers, in place of jaxlib's.
//
// Why always, and not only where jaxlib's cannot run: one path in every process. A
// program then computes the same bits whether a Python process or a C++ application runs
// it (both find the same LAPACK: lapack/library.hpp), the handlers follow the plugin's XLA
// FFI version rather than jaxlib's (jaxlib 0.12's are built for an FFI the 0.11.2 plugin
// does not run), and a Python process needs neither jaxlib's initialize() nor SciPy
// imported before a cached program runs. XLA keeps the first handler of a name, so these
// are registered as the runtime is created, before Python's registry sees the plugin,
// and the registry leaves these names to them (cyxla._ffi.registry).
#include "lapack/registration.hpp"

#include "lapack/handlers.hpp"
#include "pjrt/ffi.hpp"

namespace cyxla::lapack {

void register_handlers(const pjrt::Plugin& plugin) noexcept {
  try {
    for (const Target& target : targets()) {
      if (pjrt::has_ffi_handler(plugin, target.name)) continue;
      pjrt::register_ffi_handler(plugin, target.name,
                                 reinterpret_cast<const void*>(target.handler), "Host", 0);
    }
  } catch (...) {
    // A plugin without the FFI extension (or out of memory): the loader's check of
    // custom calls names the target a program needs.
  }
}

}  // namespace cyxla::lapack
