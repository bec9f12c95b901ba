"""`lower`: a JAX function and argument shapes in, a portable StableHLO program out."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax
import numpy as np

from cyxla._errors import PluginNotFoundError, UnsupportedProgramError
from cyxla._ffi import checks
from cyxla._ffi.targets import HOST_CALLBACK_REFUSAL, custom_calls_of
from cyxla._jax.stablehlo import (
    serialize,
    stablehlo_target_of,
    without_locations,
    written_version,
)
from cyxla._lower.callbacks import CallbackLowering
from cyxla._platforms import normalize_platform, platform_of_device
from cyxla._program.dtypes import SUPPORTED_NAMES, element_type_of
from cyxla._program.program import Program, TensorSpec
from cyxla._run import backend, plugins

__all__ = ["choose_platform", "lower", "stablehlo_target"]


def choose_platform(leaves: Iterable[Any] = ()) -> str:
    """The platform a program is lowered for, decided as JAX decides where to run.

    In order: the device the arguments are committed to, `jax.default_device`, the plugin
    this process loaded (or that CYXLA_PJRT_PLUGIN / CYXLA_PLATFORM name: a library named
    by path is loaded here, since only its client knows its platform), the first entry of
    `jax_platforms`, then the first installed of cpu, cuda, rocm and tpu.
    """
    for leaf in leaves:
        if isinstance(leaf, jax.Array) and getattr(leaf, "committed", False):
            return platform_of_device(next(iter(leaf.devices())))
    default = jax.config.jax_default_device
    if default is not None:
        return (
            platform_of_device(default)
            if hasattr(default, "platform")
            else (normalize_platform(str(default)))
        )
    loaded = backend.loaded()
    if loaded is not None:
        return loaded.platform
    if os.environ.get(plugins.PLATFORM_ENVIRONMENT_VARIABLE):
        return normalize_platform(os.environ[plugins.PLATFORM_ENVIRONMENT_VARIABLE])
    if os.environ.get(plugins.PLUGIN_ENVIRONMENT_VARIABLE):
        return backend.initialize().platform
    platforms = jax.config.jax_platforms
    if platforms:
        return normalize_platform(platforms.split(",")[0])
    installed = plugins.installed_platforms()
    if not installed:
        raise PluginNotFoundError(
            "no PJRT plugin is installed to lower for; install one with: pip install 'cyxla[cpu]'"
        )
    return installed[0]


def stablehlo_target(platform: str) -> str:
    """The StableHLO version to serialize at: the older of the plugin's and jaxlib's."""
    loaded = backend.loaded()
    if loaded is not None and loaded.platform == platform:
        plugin = loaded.plugin
    else:
        plugin = plugins.load_library(plugins.entry_for(platform).library_path())
    return stablehlo_target_of(plugin)


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
                f"{role}[{index}] has dtype {aval.dtype}, which cyxla cannot carry; "
                f"supported: {SUPPORTED_NAMES}"
            )
        specs.append(TensorSpec(tuple(int(d) for d in aval.shape), dtype))
    return tuple(specs)


def _argument_paths(args: Sequence[Any]) -> list[str]:
    """The name of each leaf of `args`, as messages write it: "args[0]", "args[1]['w']"."""
    with_paths, _ = jax.tree_util.tree_flatten_with_path(list(args))
    return [f"args{jax.tree_util.keystr(p)}" for p, _ in with_paths]


def _argument_specs(args: Sequence[Any]) -> tuple[list[Any], Any, list[jax.ShapeDtypeStruct]]:
    """The leaves of `args`, their tree, and a spec per leaf; a dtype cyxla cannot carry
    raises UnsupportedProgramError naming the argument's path."""
    leaves, tree = jax.tree.flatten(list(args))
    paths = _argument_paths(args)
    specs = [_spec_of(leaf, path) for leaf, path in zip(leaves, paths, strict=True)]
    for spec, path in zip(specs, paths, strict=True):
        if _carried_dtype(spec.dtype) is None:
            raise UnsupportedProgramError(
                f"{path} has dtype {spec.dtype}, which cyxla cannot carry"
            )
    return leaves, tree, specs


def _warn_narrowed(
    name: str, paths: Sequence[str], requested: Sequence[Any], lowered: Sequence[Any]
) -> None:
    """One warning for the arguments JAX lowered to a narrower dtype than requested (64-bit
    types without 64-bit mode): the program takes, and run() casts to, the lowered ones."""
    changes = [
        f"{path} {np.dtype(want.dtype).name} as {np.dtype(got.dtype).name}"
        for path, want, got in zip(paths, requested, lowered, strict=True)
        if np.dtype(want.dtype) != np.dtype(got.dtype)
    ]
    if changes:
        warnings.warn(
            f"lower({name}): JAX's 64-bit mode is off, so it lowered {', '.join(changes)}; "
            "the program takes those dtypes and Executable.run casts 64-bit inputs to them. "
            "To keep 64-bit types, turn 64-bit mode on before lowering: "
            'jax.config.update("jax_enable_x64", True) or JAX_ENABLE_X64=1',
            UserWarning,
            stacklevel=3,
        )


# The start of the warning JAX 0.11 gives for each 64-bit spec that 32-bit mode truncates.
_JAX_TRUNCATION_WARNING = r"Explicitly requested dtype \S+ requested in"


#: Outputs of at least this many bytes are written in place on the CPU: the plugin's
#: own result buffer (an allocation of that size and its page faults) and the copy out of
#: it cost more than the extra donated parameter (about 1 us a call). Measured on x * 2 + 1
#: (in place against copied, 31 interleaved rounds): 1.15x at 4 KiB, 1.04x at 16 KiB,
#: 0.93x at 64 KiB, 0.61x at 256 KiB.
IN_PLACE_MIN_BYTES = 1 << 16


def _keeping_every_argument(fn: Callable[..., Any], arguments: int, donors: int = 0) -> Any:
    """`fn` jitted so that the program takes every one of its `arguments`, used or not,
    and `donors` more that it ignores, donated (each aliases the output of its spec: see `_donors`).

    The program's signature is the specs the caller gave: native callers pass the inputs
    they declared. A fresh `jax.jit(..., keep_unused=True)` around `fn` keeps them even
    when `fn` is itself jitted without it (as `jnp.imag` is: on a real array it ignores
    its argument), where `jax.export` would drop the arguments the result does not use.
    """

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        return fn(*args[: len(args) - donors])

    if donors:
        del call.__wrapped__  # JAX would check the donated positions against fn's signature
    donated = tuple(range(arguments, arguments + donors))
    return jax.jit(call, keep_unused=True, donate_argnums=donated)


def _export(
    fn: Callable[..., Any],
    arguments: list[Any],
    platform: str,
    trusted: Iterable[str],
    donors: Sequence[Any] = (),
    callbacks: CallbackLowering | None = None,
) -> Any:
    """`jax.export` of `fn` at `arguments` for `platform`, trusting the custom calls
    `trusted`, with the donated parameters `donors` (specs) after the arguments, and
    Python callbacks lowered by `callbacks` (None: JAX's way, which it refuses to export);
    its refusals of host callbacks and unnamed custom calls explained."""
    name = getattr(fn, "__name__", "the function")
    rules = None if callbacks is None else callbacks.rules()
    checks_off = [jax.export.DisabledSafetyCheck.custom_call(t) for t in sorted(trusted)]
    jitted = _keeping_every_argument(fn, len(arguments), len(donors))
    arguments = [*arguments, *donors]
    try:
        with warnings.catch_warnings():
            # JAX 0.11 warns per leaf when 64-bit mode truncates a spec; `_warn_narrowed`
            # gives one warning that names every such argument instead.
            warnings.filterwarnings("ignore", _JAX_TRUNCATION_WARNING, UserWarning)
            return jax.export.export(
                jitted,
                platforms=[platform],
                disabled_checks=checks_off,
                _override_lowering_rules=rules,
            )(*arguments)
    except (NotImplementedError, ValueError) as error:
        # Host callbacks and custom calls nobody named, explained with their targets.
        checks.explain_export_error(error, name, lambda: jax.make_jaxpr(jitted)(*arguments))
        # jax.export refuses host callbacks before the effects check could.
        if "host_callbacks" not in str(error):
            raise
        raise UnsupportedProgramError(
            f"{name} calls back into Python: {HOST_CALLBACK_REFUSAL} (jax.debug.print, "
            "jax.pure_callback and the like)"
        ) from error


def _check_exported(exported: Any, name: str, callbacks: CallbackLowering | None) -> None:
    """Refuses what an export may hold that a plugin cannot run: effects other than those
    of the Python callbacks that `callbacks` lowered, dropped arguments (which
    `_keeping_every_argument` prevents: a JAX that dropped them anyway would give native
    callers another signature than the one they declared)."""
    called_back = callbacks is not None and bool(callbacks.names)
    if exported.ordered_effects or (exported.unordered_effects and not called_back):
        effects = [*exported.ordered_effects, *exported.unordered_effects]
        raise UnsupportedProgramError(
            f"{name} has side effects cyxla cannot run: {effects} (effects come from host "
            f"callbacks such as jax.debug.print: {HOST_CALLBACK_REFUSAL})"
        )
    if len(exported.module_kept_var_idx) != len(exported.in_avals):
        raise UnsupportedProgramError(
            f"internal error in cyxla: jax.export dropped unused arguments of {name} "
            f"(kept {list(exported.module_kept_var_idx)} of {len(exported.in_avals)}) "
            "although cyxla jitted it with keep_unused=True"
        )


#: MLIR's words for an operation that the target version of StableHLO lacks.
_NEWER_OPERATION = re.compile(r"failed to legalize operation '([^']+)'")


def _serialized(text: str, target: str, platform: str, name: str) -> bytes:
    """`text` serialized at `target`, the plugin's StableHLO version; an operation newer
    than that version (jaxlib newer than the plugin) is refused by name."""
    try:
        return serialize(text, target)
    except Exception as error:  # jaxlib's runtime error, whose class moved between versions
        newest = written_version()
        if target == newest:
            raise
        found = _NEWER_OPERATION.search(str(error))
        operation = f"an operation ({found.group(1)})" if found else "an operation"
        raise UnsupportedProgramError(
            f"{name} uses {operation} newer than StableHLO {target}, the newest version "
            f"the {platform} plugin reads (jaxlib writes {newest}): install a plugin at "
            "least as new as jaxlib, or a jax and jaxlib no newer than the plugin"
        ) from error


def _program(
    exported: Any, text: str, target: str, platform: str, name: str, donated: tuple[int, ...]
) -> Program:
    """The Program of an export whose checked StableHLO is `text`, serialized at `target`;
    its last parameters receive the outputs `donated`, the others are the caller's."""
    inputs = len(exported.in_avals) - len(donated)
    return Program(
        stablehlo=_serialized(text, target, platform, name),
        stablehlo_version=target,
        platform=platform,
        inputs=_specs(exported.in_avals[:inputs], "input"),
        outputs=_specs(exported.out_avals, "output"),
        custom_calls=tuple(sorted({t for t, _ in custom_calls_of(text)})),
        name=name,
        output_tree=exported.out_tree,
        donated_outputs=donated,
    )


def _target_names(custom_calls: Sequence[str]) -> set[str]:
    """The names in `custom_calls`; TypeError for a str (a sequence parameter, which would
    otherwise be read as one target per character) or anything but a sequence of str."""
    if isinstance(custom_calls, (str, bytes)) or not isinstance(custom_calls, Iterable):
        raise TypeError(
            "lower: custom_calls must be a sequence of target names (e.g. ['my_target']), "
            f"given {type(custom_calls).__name__} {custom_calls!r}"
        )
    names = list(custom_calls)
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise TypeError(
                f"lower: custom_calls[{index}] must be a str (a target name), given "
                f"{type(name).__name__} {name!r}"
            )
    return set(names)


def lower(
    fn: Callable[..., Any], args: Sequence[Any], *, custom_calls: Sequence[str] = ()
) -> Program:
    """Lowers `fn(*args)` to a program for `compile_program`.

    Python host callbacks (`jax.pure_callback`, `jax.experimental.io_callback`,
    `jax.debug.callback`, `jax.debug.print`, and Equinox's runtime checks through them)
    lower, on the CPU, to a handler of cyxla's that calls the function in this process;
    the program then runs only here (`Program.callbacks` names the functions, and saving
    it raises UnsupportedProgramError).

    The program's inputs are the dtypes JAX lowers to: without 64-bit mode
    (`jax_enable_x64`) a 64-bit spec becomes its 32-bit type, and `lower` warns
    (UserWarning) naming each such argument.

    Args:
        fn: A JAX function, jitted or not.
        args: One entry per positional argument of `fn`: a `jax.ShapeDtypeStruct`, an
            array (only its shape and dtype count), or a pytree of them.
        custom_calls: Custom-call targets that `fn` may call beyond those `jax.export`
            already trusts.

    Returns:
        The program: its StableHLO, input and output specs, platform and custom calls.

    Raises:
        TypeError: `custom_calls` is a lone str, or holds names that are not str.
        UnsupportedProgramError: `fn` calls what a plugin cannot run (an untyped custom
            call, a Python callback with `ordered=True` or on a platform other than the
            CPU), naming it.
    """
    name = getattr(fn, "__name__", "the function")
    targets = _target_names(custom_calls)
    leaves, tree, specs = _argument_specs(args)
    platform = choose_platform(leaves)
    target = stablehlo_target(platform)
    trusted = {*targets, *checks.trusted_targets(platform)}
    arguments = jax.tree.unflatten(tree, specs)
    callbacks = _callback_lowering(name, platform)
    exported = _export(fn, arguments, platform, trusted, callbacks=callbacks)
    _check_exported(exported, name, callbacks)
    _warn_narrowed(name, _argument_paths(args), specs, exported.in_avals)
    donated = _donated_outputs(exported, platform)
    if donated:
        donors = [_donor(exported.out_avals[k]) for k in donated]
        callbacks = _callback_lowering(name, platform)
        exported = _export(fn, arguments, platform, trusted, donors, callbacks)
        _check_exported(exported, name, callbacks)
    text = without_locations(exported.mlir_module())
    checks.check_lowered(text, name, platform)
    program = _program(
        exported, text, target, platform, getattr(fn, "__name__", "program"), donated
    )
    if callbacks is not None and callbacks.names:
        program = dataclasses.replace(program, callbacks=tuple(dict.fromkeys(callbacks.names)))
    return program


def _callback_lowering(name: str, platform: str) -> CallbackLowering | None:
    """cyxla's lowering of Python callbacks for one export, on the platform whose plugin
    gets cyxla's handler (the CPU's, where XLA hands it host memory); None elsewhere."""
    return CallbackLowering(name) if platform == "cpu" else None


def _donated_outputs(exported: Any, platform: str) -> tuple[int, ...]:
    """The outputs that the program should write in place, in order: on the CPU (where
    the plugin aliases host memory), those of IN_PLACE_MIN_BYTES or more. JAX aliases each
    donated parameter to the first output of its spec not yet aliased, so donors given in
    this order alias exactly these outputs (`compile_program` checks that against the
    compiled executable)."""
    if platform != "cpu":
        return ()
    donated = []
    for index, aval in enumerate(exported.out_avals):
        dtype = _carried_dtype(aval.dtype)  # None: refused by `_program` with its message
        if dtype is not None and aval.size * dtype.itemsize >= IN_PLACE_MIN_BYTES:
            donated.append(index)
    return tuple(donated)


def _donor(aval: Any) -> jax.ShapeDtypeStruct:
    """The parameter that receives the output of `aval`."""
    dtype = _carried_dtype(aval.dtype)
    assert dtype is not None, "_donated_outputs takes carried dtypes only"
    return jax.ShapeDtypeStruct(aval.shape, dtype)
