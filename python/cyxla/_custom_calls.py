"""Custom calls: the typed XLA FFI handlers that programs call, registered with the plugin.

Three sources feed one table of targets:

- jaxlib's CPU kernels (`jaxlib.cpu._lapack`, `jaxlib.cpu._sparse`, ...), which
  `jnp.linalg` and `jax.scipy.linalg` call; registered whenever a CPU plugin loads;
- `jax.ffi.register_ffi_target`, mirrored: importing cyxla wraps the function that it
  calls (`xla_client.register_custom_call_target`), and loading the plugin registers the
  targets that JAX already holds (unless `CYXLA_MIRROR_JAX=0`);
- `cyxla.register_ffi_target`, for libraries that do not use JAX.

XLA drops the error of a registration it rejects, so every batch of registrations is
verified by compiling a probe program that calls each target; a rejected target is
recorded with the XLA FFI versions of both sides, and `compile_program` raises that
explanation for a program that calls it. Targets the plugin cannot run at all (untyped
custom calls, handler bundles with more stages than `execute`, Python callbacks) are
recorded too, and `lower` names them.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import inspect
import os
import pkgutil
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from jax._src.lib import _jax, xla_client

from cyxla import _core
from cyxla._errors import CompileError, UnsupportedProgramError

__all__ = [
    "JAXLIB_CPU_MODULES",
    "MIRROR_ENVIRONMENT_VARIABLE",
    "PYTHON_CALLBACK_TARGETS",
    "XLA_BUILTIN_TARGETS",
    "Registration",
    "check_lowered",
    "check_program",
    "custom_calls_of",
    "explain_compile_errors",
    "explain_export_error",
    "jaxlib_targets",
    "mirror_jax_registrations",
    "mirroring_enabled",
    "register_ffi_target",
    "register_jax_targets",
    "register_on_load",
    "registrations",
    "trusted_targets",
]

#: Set to "0" to keep cyxla from mirroring the FFI registrations of JAX.
MIRROR_ENVIRONMENT_VARIABLE = "CYXLA_MIRROR_JAX"
#: The jaxlib modules whose typed FFI handlers a CPU plugin gets, besides any other
#: module of `jaxlib.cpu` with a `registrations()` function.
JAXLIB_CPU_MODULES = ("jaxlib.cpu._lapack", "jaxlib.cpu._sparse")
#: The targets of JAX's Python host callbacks (`jax.pure_callback`,
#: `jax.experimental.io_callback`, `jax.debug.print`, `jax.debug.callback`).
PYTHON_CALLBACK_TARGETS = frozenset(
    f"{prefix}_python_{device}_callback"
    for prefix in ("xla_ffi", "xla_ffi_partitioned", "xla_buffer", "xla")
    for device in ("cpu", "gpu")
)
#: Custom calls that XLA expands itself, whatever their api_version.
XLA_BUILTIN_TARGETS = frozenset(
    {
        "AllocateBuffer",
        "ApproxTopK",
        "Eigh",
        "LuDecomposition",
        "ProductOfElementaryHouseholderReflectors",
        "Qr",
        "SPMDFullToShardShape",
        "SPMDShardToFullShape",
        "Sharding",
        "annotate_device_placement",
        "shape_assertion",
        "stablehlo.dynamic_approx_top_k",
        "stablehlo.dynamic_reduce_window",
        "stablehlo.dynamic_rng_bit_generator",
        "stablehlo.dynamic_top_k",
    }
)

#: XLA's platform names, as the FFI registry knows them.
_XLA_PLATFORMS = {"cpu": "Host", "cuda": "CUDA", "rocm": "ROCM"}
#: The JAX primitives of Python host callbacks, and the API a user wrote.
_CALLBACK_PRIMITIVES = {
    "pure_callback": "jax.pure_callback",
    "io_callback": "jax.experimental.io_callback",
    "debug_callback": "jax.debug.callback",
    "debug_print": "jax.debug.print",
}
_TARGET_NAME = re.compile(r"[^\"\\\x00-\x1f]+")
_CUSTOM_CALL_OP = re.compile(r'stablehlo\.custom_call\s+@(?:"([^"]+)"|([\w.$-]+))')
_MISSING_FFI = re.compile(r"No FFI handler registered for (\S+) on a platform (\S+)")
_MISSING_UNTYPED = re.compile(r"No registered implementation for untyped custom call to (\S+)")


@dataclass(frozen=True)
class _Target:
    """A target some source asked cyxla to register."""

    name: str
    #: cyxla's platform: "cpu", "cuda" or "rocm".
    platform: str
    #: The XLA_FFI_Handler* of the execute stage; 0 for a target the plugin cannot take.
    handler: int
    traits: int
    #: Who registered it: "jaxlib", "jax.ffi" or "cyxla".
    origin: str
    #: Why no plugin can run it, or None.
    unsupported: str | None = None
    #: The objects that own the handler (capsules), kept alive with the registration.
    owner: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Registration:
    """A target as the loaded plugin holds it."""

    name: str
    origin: str
    #: The XLA FFI API version the handler was built with, as its metadata says.
    handler_ffi_version: tuple[int, int] | None
    #: The XLA FFI API version of the plugin's XLA.
    plugin_ffi_version: tuple[int, int] | None
    #: Why the plugin does not run the target, or None when it does.
    error: str | None


_lock = threading.RLock()
#: Every target known, by (platform, name); the first handler of a name wins, as in XLA.
_targets: dict[tuple[str, str], _Target] = {}
#: Targets as the loaded plugin holds them, by name.
_registered: dict[str, Registration] = {}
_jaxlib_targets: dict[str, _Target] | None = None
#: jaxlib's modules by target, for their initialize() before a program calls one.
_jaxlib_modules: dict[str, Any] = {}


@dataclass(frozen=True)
class _Loaded:
    """The plugin that registrations go to, set when it loads."""

    plugin: _core.Plugin
    runtime: _core.Runtime
    platform: str


_loaded: _Loaded | None = None


# ------------------------------------------------------------------ public API


def mirroring_enabled() -> bool:
    """Whether cyxla mirrors JAX's FFI registrations (`CYXLA_MIRROR_JAX` is not 0)."""
    value = os.environ.get(MIRROR_ENVIRONMENT_VARIABLE, "1").strip().lower()
    return value not in ("0", "false", "no", "off")


def register_ffi_target(
    name: str,
    target: Any,
    platform: str = "cpu",
    api_version: int = 1,
    *,
    traits: int = 0,
) -> None:
    """Registers a typed XLA FFI handler as the custom-call target `name`.

    Takes the arguments of `jax.ffi.register_ffi_target`: `target` is a PyCapsule that
    holds an `XLA_FFI_Handler*` (for example from `jax.ffi.pycapsule`), or a dict from
    stage names to capsules; `platform` is "cpu", "cuda" or "rocm"; `api_version` must be
    1 (the typed FFI); `traits` are XLA FFI handler traits. The handler is registered
    with the plugin now if the plugin of `platform` is loaded, and when it loads
    otherwise.

    A handler that the loaded plugin rejects raises UnsupportedProgramError, naming the
    XLA FFI versions of the handler and of the plugin. A target the plugin cannot take
    (api_version 0, or stages beyond `execute`) is recorded, and `lower` and
    `compile_program` name it in the error they raise for a program that calls it.
    Registering another handler under a name that already has one raises ValueError.
    """
    entry = _target_from(name, target, platform, api_version, int(traits), origin="cyxla")
    with _lock:
        existing = _targets.get((entry.platform, name))
        if existing is not None and existing.handler != entry.handler:
            raise ValueError(
                f"the custom-call target '{name}' ({entry.platform}) already has a handler, "
                f"registered by {existing.origin}; XLA keeps the first handler of a name, so "
                "register the new one under another name"
            )
        _targets[(entry.platform, name)] = entry
        registrations = _register_with_loaded([entry])
    failed = [r for r in registrations if r.error is not None]
    if failed:
        raise UnsupportedProgramError(failed[0].error)


def register_jax_targets() -> list[str]:
    """Registers jaxlib's CPU handlers and every typed FFI target that JAX holds.

    This is what loading a plugin does; call it by hand after registering targets with
    JAX when `CYXLA_MIRROR_JAX=0`. Registers with the loaded plugin, or records the
    targets for the plugin when none is loaded yet. Raises UnsupportedProgramError when
    the loaded plugin rejects one. Returns the names of the targets it registered.
    """
    with _lock:
        entries = _record([*jaxlib_targets().values(), *_jax_held_targets()])
        registrations = _register_with_loaded(entries)
    failed = [r for r in registrations if r.error is not None]
    if failed:
        raise UnsupportedProgramError("; ".join(r.error or "" for r in failed))
    return sorted({e.name for e in entries if e.unsupported is None})


def mirror_jax_registrations() -> None:
    """Mirrors every later `jax.ffi.register_ffi_target` to cyxla (importing cyxla does
    this unless `CYXLA_MIRROR_JAX=0`). JAX's own behaviour is unchanged: the wrapper
    calls through to the function it replaces first. Idempotent."""
    current = xla_client.register_custom_call_target
    if getattr(current, "_cyxla_mirror", False):
        return
    signature = inspect.signature(current)

    @functools.wraps(current)
    def register_custom_call_target(*args: Any, **kwargs: Any) -> Any:
        result = current(*args, **kwargs)
        try:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            _mirror(**bound.arguments)
        except Exception as error:  # never break JAX's registration
            warnings.warn(
                f"cyxla could not mirror a JAX FFI registration: {error}",
                RuntimeWarning,
                stacklevel=2,
            )
        return result

    register_custom_call_target._cyxla_mirror = True  # type: ignore[attr-defined]
    xla_client.register_custom_call_target = register_custom_call_target


def registrations() -> dict[str, Registration]:
    """The targets the loaded plugin holds (or rejected), by name."""
    with _lock:
        return dict(_registered)


def jaxlib_targets() -> dict[str, _Target]:
    """jaxlib's typed FFI handlers for the CPU, by target name."""
    global _jaxlib_targets
    with _lock:
        if _jaxlib_targets is None:
            found: dict[str, _Target] = {}
            for module in _jaxlib_cpu_modules():
                for name, capsule in module.registrations().items():
                    found[name] = _target_from(name, capsule, "cpu", 1, 0, origin="jaxlib")
                    _jaxlib_modules[name] = module
            _jaxlib_targets = found
        return _jaxlib_targets


def _prepare(targets: Iterable[str]) -> None:
    """Runs the initialize() of the jaxlib modules whose handlers `targets` name: the
    LAPACK handlers call through function pointers that it reads from SciPy (which JAX
    does when it lowers linear algebra, and a program from a cache never did)."""
    jaxlib_targets()
    modules = {id(m): m for t in targets if (m := _jaxlib_modules.get(t)) is not None}
    for module in modules.values():
        if hasattr(module, "initialize"):
            module.initialize()


# ------------------------------------------------------------------ lower and compile


def trusted_targets(platform: str) -> frozenset[str]:
    """Targets that `lower` lets through jax.export's checks without being named: the
    handlers cyxla registers from jaxlib."""
    return frozenset(jaxlib_targets()) if platform == "cpu" else frozenset()


def custom_calls_of(text: str) -> list[tuple[str, bool]]:
    """(target, whether it is a typed FFI call) of each custom call in StableHLO text.

    A typed FFI call has api_version 4, or a dictionary as `mhlo.backend_config` (the
    form jax.export writes); untyped calls have a string backend_config."""
    calls = []
    for line in text.splitlines():
        if match := _CUSTOM_CALL_OP.search(line):
            typed = "api_version = 4 " in line or "mhlo.backend_config = {" in line
            calls.append((match.group(1) or match.group(2), typed))
    return calls


def check_lowered(text: str, function: str, platform: str) -> None:
    """Raises UnsupportedProgramError for a custom call in `text`, a program for
    `platform`, that no plugin runs."""
    for target, typed in custom_calls_of(text):
        if target in XLA_BUILTIN_TARGETS:
            continue
        if target in PYTHON_CALLBACK_TARGETS:
            raise UnsupportedProgramError(
                f"{function} calls the custom-call target '{target}', a Python host "
                "callback, which needs JAX's own runtime and cannot run on a PJRT plugin"
            )
        if not typed:
            raise UnsupportedProgramError(
                f"{function} calls '{target}' as an untyped custom call; PJRT plugins run "
                "only typed XLA FFI handlers (jax.ffi.ffi_call with its default "
                "custom_call_api_version=4, registered with api_version=1)"
            )
        with _lock:
            entry = _targets.get((platform, target))
        if entry is not None and entry.unsupported is not None:
            raise UnsupportedProgramError(f"{function} calls '{target}': {entry.unsupported}")


def explain_export_error(error: Exception, function: str, trace: Callable[[], Any]) -> None:
    """Raises UnsupportedProgramError from `error`, a failure of jax.export, when the
    function uses Python host callbacks (found in the jaxpr that `trace` makes) or custom
    calls that nobody named; returns otherwise."""
    message = str(error)
    if isinstance(error, NotImplementedError) and "host_callbacks" in message:
        try:
            primitives = set(_primitives(trace()))
        except Exception:  # tracing again failed: fall back to the caller's message
            return
        apis = sorted({api for name, api in _CALLBACK_PRIMITIVES.items() if name in primitives})
        if apis:
            raise UnsupportedProgramError(
                f"{function} uses {' and '.join(apis)}: a Python host callback, which lowers "
                "to the custom-call target 'xla_ffi_python_cpu_callback' (on GPUs "
                "'xla_ffi_python_gpu_callback'), needs JAX's own runtime and cannot run on a "
                "PJRT plugin"
            ) from error
    if "custom calls whose targets have no compatibility guarantees" in message:
        names = sorted(set(re.findall(r'stablehlo\.custom_call @"?([\w.$-]+)', message)))
        raise UnsupportedProgramError(
            f"{function} calls the custom-call targets {names}, which jax.export does not "
            "trust; name those that have a registered handler in "
            f"cyxla.lower(..., custom_calls={names})"
        ) from error


def _primitives(jaxpr: Any) -> Iterator[str]:
    """The names of the primitives in `jaxpr` and in the jaxprs its equations hold."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)  # a ClosedJaxpr holds a Jaxpr
    for equation in jaxpr.eqns:
        yield equation.primitive.name
        for value in equation.params.values():
            for item in value if isinstance(value, tuple | list) else (value,):
                if hasattr(getattr(item, "jaxpr", item), "eqns"):
                    yield from _primitives(item)


def check_program(targets: Iterable[str], platform: str) -> None:
    """Raises UnsupportedProgramError for a target that the loaded plugin of `platform`
    is known not to run, and readies jaxlib's handlers that the others need."""
    targets = list(targets)
    _prepare(targets)
    with _lock:
        for target in targets:
            registration = _registered.get(target)
            if registration is not None and registration.error is not None:
                raise UnsupportedProgramError(registration.error)
            entry = _targets.get((platform, target))
            if entry is not None and entry.unsupported is not None:
                raise UnsupportedProgramError(f"'{target}': {entry.unsupported}")


@contextlib.contextmanager
def explain_compile_errors() -> Iterator[None]:
    """Turns the plugin's "no handler" compile errors into UnsupportedProgramError naming
    the target; `check_program` ran before."""
    try:
        yield
    except CompileError as error:
        message = str(error)
        if match := _MISSING_FFI.search(message):
            raise UnsupportedProgramError(
                f"no XLA FFI handler is registered for the custom-call target "
                f"'{match.group(1)}' on the {match.group(2)} plugin: register one with "
                "jax.ffi.register_ffi_target or cyxla.register_ffi_target"
            ) from error
        if match := _MISSING_UNTYPED.search(message):
            raise UnsupportedProgramError(
                f"'{match.group(1)}' is an untyped custom call, which PJRT plugins do not "
                "run; only typed XLA FFI handlers (api_version=1) can be registered"
            ) from error
        raise


# ------------------------------------------------------------------ plugin loading


def register_on_load(plugin: _core.Plugin, runtime: _core.Runtime, platform: str) -> None:
    """Registers what the newly loaded plugin of `platform` should hold: jaxlib's CPU
    handlers, the targets JAX holds (when mirroring), and those recorded so far.
    Rejections are recorded, not raised: a program that needs one raises at compile."""
    global _loaded
    entries: list[_Target] = []
    if platform == "cpu":
        entries += jaxlib_targets().values()
    if mirroring_enabled():
        entries += _jax_held_targets()
    with _lock:
        _record(entries)
        _loaded = _Loaded(plugin, runtime, platform)
        _register_with_loaded(list(_targets.values()))


def _record(entries: list[_Target]) -> list[_Target]:
    """Adds `entries` to the table where their names are new, and returns the entries
    the table holds under their names: the first handler of a name wins, as in XLA.
    Called with `_lock` held."""
    return [_targets.setdefault((e.platform, e.name), e) for e in entries]


def _register_with_loaded(entries: list[_Target]) -> list[Registration]:
    """Registers those of `entries` that are for the loaded plugin's platform with it
    (none before it loads). Called with `_lock` held."""
    if _loaded is None:
        return []
    wanted = [e for e in entries if e.platform == _loaded.platform]
    return _register(_loaded.plugin, _loaded.runtime, _loaded.platform, wanted)


def _register(
    plugin: _core.Plugin, runtime: _core.Runtime, platform: str, entries: list[_Target]
) -> list[Registration]:
    """Registers `entries` that the plugin does not hold yet, then verifies them all with
    one probe compile (one more per rejected target). Called with `_lock` held."""
    results: dict[str, Registration] = {}
    versions: dict[str, tuple[Any, Any]] = {}
    for entry in entries:
        if entry.unsupported is not None or entry.name in results:
            continue
        if entry.name in _registered:
            results[entry.name] = _registered[entry.name]
            continue
        try:
            versions[entry.name] = _core.register_ffi_handler(
                plugin, entry.name, entry.handler, _XLA_PLATFORMS[platform], entry.traits
            )
        except Exception as error:  # the handler refused its metadata call, or no FFI
            results[entry.name] = Registration(
                entry.name, entry.origin, None, None, _rejected(entry, str(error))
            )
    by_name = {e.name: e for e in entries}
    pending = list(versions)
    while pending:
        try:
            missing = _probe(plugin, runtime, pending)
        except Exception as error:  # the probe itself failed: nothing is verified
            for name in pending:
                results[name] = Registration(
                    name,
                    by_name[name].origin,
                    *versions[name],
                    _rejected(by_name[name], f"the probe compile failed: {error}"),
                )
            pending = []
            break
        if missing is None:
            break
        # XLA rejects every handler newer than itself: drop them all with the first.
        plugin_version = versions[missing][1]
        newer = [n for n in pending if _newer(versions[n][0], plugin_version)]
        for name in newer if missing in newer else [missing]:
            reason = _version_reason(*versions[name])
            results[name] = Registration(
                name,
                by_name[name].origin,
                *versions[name],
                _rejected(by_name[name], f"XLA rejected it{reason}"),
            )
            pending.remove(name)
    for name in pending:
        handler_version, plugin_version = versions[name]
        results[name] = Registration(
            name, by_name[name].origin, handler_version, plugin_version, None
        )
    _registered.update(results)
    return list(results.values())


def _probe(plugin: _core.Plugin, runtime: _core.Runtime, names: list[str]) -> str | None:
    """Compiles a program that calls each target of `names` and returns the first one
    the plugin has no handler for, or None when it has them all."""
    from cyxla import _lowering

    calls = "".join(
        f'    stablehlo.custom_call @"{name}"() '
        "{api_version = 4 : i32, has_side_effect = true} : () -> ()\n"
        for name in names
    )
    text = f"module @cyxla_ffi_probe {{\n  func.func public @main() {{\n{calls}    return\n  }}\n}}"
    code = _jax.mlir.serialize_portable_artifact(text, _lowering.stablehlo_target_of(plugin))
    options = xla_client.CompileOptions().SerializeAsString()
    try:
        runtime.compile(code, options, [])
    except CompileError as error:
        match = _MISSING_FFI.search(str(error))
        if match is None or match.group(1) not in names:
            raise
        return match.group(1)
    return None


def _newer(handler: Any, plugin: Any) -> bool:
    """Whether a handler of XLA FFI version `handler` is newer than the plugin's XLA."""
    return handler is not None and plugin is not None and tuple(handler) > tuple(plugin)


def _version_text(version: Any) -> str:
    return "unknown" if version is None else f"{version[0]}.{version[1]}"


def _version_reason(handler: Any, plugin: Any) -> str:
    text = f" (handler built against XLA FFI {_version_text(handler)}, plugin's XLA FFI " + (
        f"{_version_text(plugin)})"
    )
    if _newer(handler, plugin):
        return (
            f"{text}: the handler is newer than the plugin; install a plugin built from "
            "an XLA at least as new as the library that built the handler"
        )
    return f"{text}: another handler may hold the name in the plugin"


def _rejected(entry: _Target, reason: str) -> str:
    source = {
        "jaxlib": "jaxlib's",
        "jax.ffi": "the jax.ffi.register_ffi_target",
        "cyxla": "the cyxla.register_ffi_target",
    }[entry.origin]
    return (
        f"the {entry.platform} plugin does not run {source} handler of the custom-call "
        f"target '{entry.name}': {reason}"
    )


# ------------------------------------------------------------------ JAX's registrations


def _mirror(
    name: str, fn: Any, platform: str = "cpu", api_version: int = 0, traits: Any = 0, **_: Any
) -> None:
    """Records one registration that JAX just took, and registers it with the plugin."""
    entry = _target_from(name, fn, platform, api_version, int(traits), origin="jax.ffi")
    with _lock:
        (kept,) = _record([entry])
        results = _register_with_loaded([kept])
    if kept.handler != entry.handler:
        warnings.warn(
            f"cyxla keeps the handler of the custom-call target '{name}' that "
            f"{kept.origin} registered first, and ignores the one jax.ffi just registered",
            RuntimeWarning,
            stacklevel=4,
        )
    for registration in results:
        if registration.error is not None:
            warnings.warn(registration.error, RuntimeWarning, stacklevel=4)


def _jax_held_targets() -> list[_Target]:
    """The targets JAX holds: registrations waiting for JAX's own client, and the typed
    handlers in jaxlib's FFI registry. Python callbacks come back as unsupported."""
    held: list[tuple[str, Any, str, int, Any]] = []
    pending: Mapping[str, list[Any]] = getattr(xla_client, "_custom_callback", {})
    for xla_platform, items in list(pending.items()):
        held += [
            (name, fn, xla_platform, version, traits) for name, fn, version, traits, *_ in items
        ]
    targets_of = getattr(xla_client, "custom_call_targets", None)
    for xla_platform in ("Host", "CUDA", "ROCM") if targets_of is not None else ():
        try:
            registry = targets_of(xla_platform)
        except Exception:  # a platform this jaxlib does not know
            continue
        held += [(name, stages, xla_platform, 1, 0) for name, stages in registry.items()]
    entries = []
    for name, fn, platform, api_version, traits in held:
        try:
            entries.append(_target_from(name, fn, platform, api_version, int(traits), "jax.ffi"))
        except (TypeError, ValueError):  # a platform or handler that cyxla cannot pass on
            continue
    return entries


def _jaxlib_cpu_modules() -> list[Any]:
    names = list(JAXLIB_CPU_MODULES)
    with contextlib.suppress(ImportError):
        package = importlib.import_module("jaxlib.cpu")
        names += [f"jaxlib.cpu.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
    modules = []
    for name in dict.fromkeys(names):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if callable(getattr(module, "registrations", None)):
            modules.append(module)
    return modules


# ------------------------------------------------------------------ handlers


def _target_from(
    name: str, fn: Any, platform: str, api_version: int, traits: int, origin: str
) -> _Target:
    """A _Target from the arguments of a registration; raises TypeError or ValueError
    for arguments that are wrong whatever the plugin."""
    if not isinstance(name, str) or not _TARGET_NAME.fullmatch(name):
        raise ValueError(f"invalid custom-call target name {name!r}")
    from cyxla import _plugins

    cyxla_platform = _plugins.normalize_platform(platform)
    if name in PYTHON_CALLBACK_TARGETS:
        return _Target(
            name,
            cyxla_platform,
            0,
            traits,
            origin,
            "a Python host callback needs JAX's own runtime and cannot run on a PJRT plugin",
        )
    if cyxla_platform not in _XLA_PLATFORMS:
        raise ValueError(
            f"cannot register '{name}' for the platform '{platform}': custom calls are "
            f"registered for {', '.join(_XLA_PLATFORMS)}"
        )
    if api_version != 1:
        return _Target(
            name,
            cyxla_platform,
            0,
            traits,
            origin,
            f"it was registered as an untyped custom call (api_version={api_version}), "
            "and PJRT plugins run only typed XLA FFI handlers (api_version=1)",
        )
    if isinstance(fn, Mapping):
        extra = sorted(set(fn) - {"execute"})
        if "execute" not in fn:
            raise ValueError(f"the handler bundle of '{name}' has no 'execute' stage")
        if extra:
            return _Target(
                name,
                cyxla_platform,
                0,
                traits,
                origin,
                f"its handler has the stages {extra} besides 'execute', and the PJRT FFI "
                "extension registers an execute handler only",
            )
        return _Target(
            name, cyxla_platform, _capsule_pointer(name, fn["execute"]), traits, origin, owner=fn
        )
    return _Target(name, cyxla_platform, _capsule_pointer(name, fn), traits, origin, owner=fn)


_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _capsule_pointer(name: str, capsule: Any) -> int:
    """The pointer a PyCapsule holds (whatever the capsule's name)."""
    if type(capsule).__name__ != "PyCapsule":
        raise TypeError(
            f"the handler of '{name}' must be a PyCapsule holding an XLA_FFI_Handler* (for "
            f"example jax.ffi.pycapsule(library.handler)), not {type(capsule).__name__}"
        )
    capsule_name = _get_name(capsule)
    pointer = _get_pointer(capsule, capsule_name)
    if not pointer:
        raise ValueError(f"the capsule of '{name}' holds a null pointer")
    return int(pointer)


if mirroring_enabled():
    mirror_jax_registrations()
