// The table of cyxla's LAPACK targets: every routine in the four element types.
#include <array>

#include "lapack/handlers.hpp"

namespace cyxla::lapack {
namespace {

/// The four targets of one routine, "lapack_{s,d,c,z}<routine>_ffi".
#define CYXLA_LAPACK_TARGETS(real, complex, handler)                                     \
  Target{"lapack_s" real "_ffi", &handler<float>},                                        \
      Target{"lapack_d" real "_ffi", &handler<double>},                                   \
      Target{"lapack_c" complex "_ffi", &handler<c64>},                                   \
      Target{"lapack_z" complex "_ffi", &handler<c128>}

constexpr std::array kTargets = {
    CYXLA_LAPACK_TARGETS("getrf", "getrf", getrf),
    CYXLA_LAPACK_TARGETS("trsm", "trsm", trsm),
    CYXLA_LAPACK_TARGETS("potrf", "potrf", potrf),
    CYXLA_LAPACK_TARGETS("geqrf", "geqrf", geqrf),
    CYXLA_LAPACK_TARGETS("geqp3", "geqp3", geqp3),
    CYXLA_LAPACK_TARGETS("orgqr", "ungqr", orgqr),
    CYXLA_LAPACK_TARGETS("syevd", "heevd", syevd),
    CYXLA_LAPACK_TARGETS("gesdd", "gesdd", gesdd),
    CYXLA_LAPACK_TARGETS("geev", "geev", geev),
    CYXLA_LAPACK_TARGETS("gees", "gees", gees),
    CYXLA_LAPACK_TARGETS("gehrd", "gehrd", gehrd),
    CYXLA_LAPACK_TARGETS("sytrd", "hetrd", sytrd),
    CYXLA_LAPACK_TARGETS("gtsv", "gtsv", gtsv),
    CYXLA_LAPACK_TARGETS("gesvd", "gesvd", gesvd),
    CYXLA_LAPACK_TARGETS("ormqr", "unmqr", ormqr),
};

#undef CYXLA_LAPACK_TARGETS

}  // namespace

std::span<const Target> targets() { return kTargets; }

xla_ffi::Handler* handler_of(std::string_view name) {
  for (const Target& target : kTargets) {
    if (target.name == name) return target.handler;
  }
  return nullptr;
}

}  // namespace cyxla::lapack
