"""`lower`: a JAX function and argument shapes in, a portable StableHLO program out."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax
import numpy as np
from jax._src.interpreters import mlir
from jax._src.lib import _jax  # serialize_portable_artifact: a chosen StableHLO version
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import hlo

from cyxla import _core, _ffi_checks, _plugins
from cyxla._dtypes import element_type_of
from cyxla._errors import PluginNotFoundError, UnsupportedProgramError
from cyxla._program import Program, TensorSpec

__all__ = ["choose_platform", "lower", "stablehlo_target"]


def _device_platform(device: Any) -> str:
    """The cyxla platform of a JAX device ("gpu" devices are cuda or rocm)."""
    platform = device.platform
    if platform == "gpu":  # pragma: no cover  (a JAX GPU device: no GPU on the test machines)
        version = str(getattr(device.client, "platform_version", "")).lower()
        return "rocm" if "rocm" in version else "cuda"
    return _plugins.normalize_platform(platform)


def choose_platform(leaves: Iterable[Any] = ()) -> str:
    """The platform a program is lowered for, decided as JAX decides where to run.

    In order: the device the arguments are committed to, `jax.default_device`, the plugin
    this process loaded (or that CYXLA_PJRT_PLUGIN / CYXLA_PLATFORM name), the first
    entry of `jax_platforms`, then the first installed of cpu, cuda, rocm and tpu.
    """
    for leaf in leaves:
        if isinstance(leaf, jax.Array) and getattr(leaf, "committed", False):
            return _device_platform(next(iter(leaf.devices())))
    default = jax.config.jax_default_device
    if default is not None:
        return (
            _device_platform(default)
            if hasattr(default, "platform")
            else (_plugins.normalize_platform(str(default)))
        )
    loaded = _plugins.loaded()
    if loaded is not None:
        return loaded.platform
    if os.environ.get(_plugins.PLATFORM_ENVIRONMENT_VARIABLE):
        return _plugins.normalize_platform(os.environ[_plugins.PLATFORM_ENVIRONMENT_VARIABLE])
    if os.environ.get(_plugins.PLUGIN_ENVIRONMENT_VARIABLE):
        return _plugins.initialize().platform
    platforms = jax.config.jax_platforms
    if platforms:
        return _plugins.normalize_platform(platforms.split(",")[0])
    installed = _plugins.installed_platforms()
    if not installed:
        raise PluginNotFoundError(
            "no PJRT plugin is installed to lower for; install one with: pip install 'cyxla[cpu]'"
        )
    return installed[0]


def _version_text(version: Sequence[int]) -> str:
    return ".".join(str(int(v)) for v in version)


def _parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def stablehlo_target(platform: str) -> str:
    """The StableHLO version to serialize at: the older of the plugin's and jaxlib's."""
    loaded = _plugins.loaded()
    if loaded is not None and loaded.platform == platform:
        plugin = loaded.plugin
    else:
        plugin = _plugins.load_library(_plugins.entry_for(platform).library_path())
    return stablehlo_target_of(plugin)


def stablehlo_target_of(plugin: _core.Plugin) -> str:
    """The StableHLO version to serialize at for `plugin`."""
    ours = str(hlo.get_current_version())
    theirs = plugin.attributes.get("stablehlo_current_version")
    if theirs is None:
        return ours
    return min(ours, _version_text(theirs), key=_parse_version)


def _spec_of(leaf: Any, where: str) -> jax.ShapeDtypeStruct:
    if isinstance(leaf, jax.ShapeDtypeStruct):
        return leaf
    if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
        return jax.ShapeDtypeStruct(tuple(leaf.shape), leaf.dtype)
    try:
        array = np.asarray(leaf)
    except Exception as error:
        raise TypeError(
            f"{where}: expected a jax.ShapeDtypeStruct or an array, got {type(leaf).__name__}"
        ) from error
    return jax.ShapeDtypeStruct(array.shape, array.dtype)


def _carried_dtype(dtype: Any) -> np.dtype | None:
    """`dtype` as NumPy's, or None when cyxla cannot carry it (PRNG keys among them)."""
    if jax.dtypes.issubdtype(dtype, jax.dtypes.extended):
        return None
    dtype = np.dtype(dtype)
    return dtype if element_type_of(dtype) is not None else None


def _specs(avals: Sequence[Any], role: str) -> tuple[TensorSpec, ...]:
    specs = []
    for index, aval in enumerate(avals):
        dtype = _carried_dtype(aval.dtype)
        if dtype is None:
            raise UnsupportedProgramError(
                f"{role}[{index}] has dtype {aval.dtype}, which cyxla cannot carry; supported: "
                "bool, int8-int64, uint8-uint64, float16, bfloat16, float32, float64, "
                "complex64, complex128"
            )
        specs.append(TensorSpec(tuple(int(d) for d in aval.shape), dtype))
    return tuple(specs)


def _without_locations(text: str) -> str:
    """The module without source locations, so that the same function lowers to the same
    bytes wherever it is defined (the disk cache keys on them)."""
    with mlir.make_ir_context():
        return ir.Module.parse(text).operation.get_asm(enable_debug_info=False)


def lower(
    fn: Callable[..., Any], args: Sequence[Any], *, custom_calls: Sequence[str] = ()
) -> Program:
    """Lowers `fn(*args)` to a program for `compile_program`.

    `args` holds one entry per positional argument of `fn`: a `jax.ShapeDtypeStruct`, an
    array (only its shape and dtype count), or a pytree of them. `custom_calls` names
    custom-call targets that `fn` may call beyond those `jax.export` already trusts.
    """
    leaves, tree = jax.tree.flatten(list(args))
    with_paths, _ = jax.tree_util.tree_flatten_with_path(list(args))
    paths = [jax.tree_util.keystr(p) for p, _ in with_paths]
    specs = [_spec_of(leaf, f"args{path}") for leaf, path in zip(leaves, paths, strict=True)]
    for spec, path in zip(specs, paths, strict=True):
        if _carried_dtype(spec.dtype) is None:
            raise UnsupportedProgramError(
                f"args{path} has dtype {spec.dtype}, which cyxla cannot carry"
            )
    platform = choose_platform(leaves)
    target = stablehlo_target(platform)

    trusted = {*custom_calls, *_ffi_checks.trusted_targets(platform)}
    checks = [jax.export.DisabledSafetyCheck.custom_call(name) for name in sorted(trusted)]
    jitted = fn if hasattr(fn, "trace") else jax.jit(fn, keep_unused=True)
    try:
        exported = jax.export.export(jitted, platforms=[platform], disabled_checks=checks)(
            *jax.tree.unflatten(tree, specs)
        )
    except (NotImplementedError, ValueError) as error:
        # Host callbacks and custom calls nobody named, explained with their targets.
        _ffi_checks.explain_export_error(
            error,
            getattr(fn, "__name__", "the function"),
            lambda: jax.make_jaxpr(jitted)(*jax.tree.unflatten(tree, specs)),
        )
        # jax.export refuses host callbacks before the effects check below could.
        if "host_callbacks" not in str(error):
            raise
        raise UnsupportedProgramError(
            f"{getattr(fn, '__name__', 'the function')} calls back into Python, which cyxla "
            "cannot run (host callbacks such as jax.debug.print and jax.pure_callback need "
            "JAX's own runtime)"
        ) from error
    if exported.ordered_effects or exported.unordered_effects:
        effects = [*exported.ordered_effects, *exported.unordered_effects]
        raise UnsupportedProgramError(
            f"{getattr(fn, '__name__', 'the function')} has side effects cyxla cannot run: "
            f"{effects} (host callbacks such as jax.debug.print need JAX's own runtime)"
        )
    if len(exported.module_kept_var_idx) != len(exported.in_avals):
        raise UnsupportedProgramError(
            "the function was lowered with unused arguments dropped; wrap it in "
            "jax.jit(fn, keep_unused=True)"
        )
    text = _without_locations(exported.mlir_module())
    _ffi_checks.check_lowered(text, getattr(fn, "__name__", "the function"), platform)
    targets = sorted({target for target, _ in _ffi_checks.custom_calls_of(text)})
    return Program(
        stablehlo=_jax.mlir.serialize_portable_artifact(text, target),
        stablehlo_version=target,
        platform=platform,
        inputs=_specs(exported.in_avals, "input"),
        outputs=_specs(exported.out_avals, "output"),
        custom_calls=tuple(targets),
        name=getattr(fn, "__name__", "program"),
        output_tree=exported.out_tree,
    )
