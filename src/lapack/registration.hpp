// Registering cyxla's LAPACK handlers with a CPU plugin.
#pragma once

#include "pjrt/plugin.hpp"

namespace cyxla::lapack {

/// Registers cyxla's handler of every LAPACK target (lapack/handlers.hpp) with `plugin`, a
/// CPU plugin, once per plugin in the process: every process that runs a CPU plugin,
/// Python or not, runs jnp.linalg through the same handlers. A plugin that cannot take
/// handlers (no FFI extension) is left without them; a program that calls one is then
/// refused by the loader, naming the target. Never throws.
void register_handlers(const pjrt::Plugin& plugin) noexcept;

}  // namespace cyxla::lapack
