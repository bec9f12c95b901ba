"""Where custom-call targets come from besides cyxla.register_ffi_target: the typed FFI
handlers of jaxlib's CPU modules, and the targets JAX's own registry holds."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import pkgutil
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from cyxla import _core
from cyxla._ffi.callbacks import PYTHON_CALLBACK_TARGET, install_dispatcher
from cyxla._ffi.targets import Target, target_from
from cyxla._platforms import XLA_PLATFORMS

__all__ = [
    "JAXLIB_CPU_MODULES",
    "MIRROR_ENVIRONMENT_VARIABLE",
    "cyxla_lapack_targets",
    "cyxla_targets",
    "jax_held_targets",
    "jax_imported",
    "jaxlib_targets",
    "mirroring_enabled",
    "prepare_jaxlib",
    "scipy_lapack",
]

#: The package of jaxlib's CPU kernels (LAPACK, sparse, ...), imported by name: the
#: modules that `jnp.linalg` and `jax.scipy.linalg` call through typed FFI handlers.
_CPU_KERNEL_PACKAGE = "jaxlib.cpu"
#: The jaxlib modules whose typed FFI handlers a CPU plugin gets, besides any other
#: module of `jaxlib.cpu` with a `registrations()` function.
JAXLIB_CPU_MODULES = ("jaxlib.cpu._lapack", "jaxlib.cpu._sparse")
#: Set to "0" to keep cyxla from mirroring the FFI registrations of JAX.
MIRROR_ENVIRONMENT_VARIABLE = "CYXLA_MIRROR_JAX"

_lock = threading.Lock()
_jaxlib_targets: dict[str, Target] | None = None
#: jaxlib's modules by target, for their initialize() before a program calls one.
_jaxlib_modules: dict[str, Any] = {}


def mirroring_enabled() -> bool:
    """Whether cyxla mirrors JAX's FFI registrations (`CYXLA_MIRROR_JAX` is not 0): the
    targets JAX holds are then a source, and later registrations are mirrored."""
    value = os.environ.get(MIRROR_ENVIRONMENT_VARIABLE, "1").strip().lower()
    return value not in ("0", "false", "no", "off")


def cyxla_targets(platform: str) -> list[Target]:
    """cyxla's own handlers for a plugin of `platform`: Python host callbacks, on the CPU
    (where XLA hands the handler host memory)."""
    if platform != "cpu":
        return []
    install_dispatcher()
    handler = _core.python_callback_handler()
    return [Target(PYTHON_CALLBACK_TARGET, "cpu", handler, 0, origin="cyxla")]


def cyxla_lapack_targets() -> frozenset[str]:
    """The LAPACK targets that cyxla's own handlers run (src/lapack/): the core registers
    them with every CPU plugin as its runtime is created, so jaxlib's handlers of these
    names are never registered, in any process."""
    return frozenset(_core.lapack_targets())


def scipy_lapack() -> str | None:
    """The OpenBLAS that SciPy carries (scipy.libs/libscipy_openblas*.so, 32-bit
    integers, symbols prefixed scipy_), found without importing SciPy, or None. jaxlib's
    LAPACK handlers call this library, so cyxla's handlers prefer it: the same bits as
    jax.jit's."""
    spec = importlib.util.find_spec("scipy")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        libs = os.path.join(os.path.dirname(location), "scipy.libs")
        with contextlib.suppress(OSError):
            for name in sorted(os.listdir(libs)):
                if name.startswith("libscipy_openblas") and "64_" not in name:
                    return os.path.join(libs, name)
    return None


def jax_imported() -> bool:
    """Whether this process imported JAX: before that, JAX holds no registrations, and
    cyxla imports it only where it lowers or a program calls a target it does not hold."""
    return "jax" in sys.modules


def jaxlib_targets() -> dict[str, Target]:
    """jaxlib's typed FFI handlers for the CPU, by target name."""
    global _jaxlib_targets
    with _lock:
        if _jaxlib_targets is None:
            found: dict[str, Target] = {}
            for module in _jaxlib_cpu_modules():
                for name, capsule in module.registrations().items():
                    found[name] = target_from(name, capsule, "cpu", 1, 0, origin="jaxlib")
                    _jaxlib_modules[name] = module
            _jaxlib_targets = found
        return _jaxlib_targets


def prepare_jaxlib(targets: Iterable[str]) -> None:
    """Runs the initialize() of the jaxlib modules whose handlers `targets` name: the
    LAPACK handlers call through function pointers that it reads from SciPy (which JAX
    does when it lowers linear algebra, and a program from a cache never did)."""
    jaxlib_targets()
    ours = cyxla_lapack_targets()
    modules = {
        id(m): m for t in targets if t not in ours and (m := _jaxlib_modules.get(t)) is not None
    }
    for module in modules.values():
        if hasattr(module, "initialize"):
            module.initialize()


def jax_held_targets() -> list[Target]:
    """The targets JAX holds: registrations waiting for JAX's own client, and the typed
    handlers in jaxlib's FFI registry. Python callbacks come back as unsupported. None
    before JAX is imported."""
    if not jax_imported():
        return []
    from cyxla._jax.jaxlib import xla_client

    held: list[tuple[str, Any, str, int, Any]] = []
    pending: Mapping[str, list[Any]] = getattr(xla_client, "_custom_callback", {})
    for xla_platform, items in list(pending.items()):
        held += [
            (name, fn, xla_platform, version, traits) for name, fn, version, traits, *_ in items
        ]
    targets_of = getattr(xla_client, "custom_call_targets", None)
    for xla_platform in XLA_PLATFORMS.values() if targets_of is not None else ():
        try:
            registry = targets_of(xla_platform)
        except Exception:  # a platform this jaxlib does not know
            continue
        held += [(name, stages, xla_platform, 1, 0) for name, stages in registry.items()]
    entries = []
    for name, fn, platform, api_version, traits in held:
        try:
            entries.append(target_from(name, fn, platform, api_version, int(traits), "jax.ffi"))
        except (TypeError, ValueError):  # a platform or handler that cyxla cannot pass on
            continue
    return entries


def _jaxlib_cpu_modules() -> list[Any]:
    """jaxlib's CPU modules that have a `registrations()` function."""
    names = list(JAXLIB_CPU_MODULES)
    with contextlib.suppress(ImportError):
        package = importlib.import_module(_CPU_KERNEL_PACKAGE)
        names += [f"{_CPU_KERNEL_PACKAGE}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
    modules = []
    for name in dict.fromkeys(names):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if callable(getattr(module, "registrations", None)):
            modules.append(module)
    return modules
