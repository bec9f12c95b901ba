"""Version skew between jaxlib (which lowers programs and builds the custom-call handlers)
and the loaded plugin (which compiles and runs them), found where it starts: at plugin
load. A plugin must be at least as new as jaxlib; the verdict names the packages (jax,
jaxlib, the plugin's wheel) as well as the StableHLO and XLA FFI versions, and says what to
install. `backend.initialize` warns with it, `python -m cyxla` lists it."""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cyxla import _core
from cyxla._errors import PluginVersionError, VersionSkewWarning
from cyxla._ffi.headers import header_ffi_version

__all__ = [
    "TESTED_PAIRINGS",
    "Verdict",
    "check_on_load",
    "distribution_of",
    "jaxlib_ffi_version",
    "jaxlib_stablehlo_version",
    "package_version",
    "tested_pairing",
    "verdict",
]

#: The pairings CI tests (README, "Supported versions"; .ci/run): Python, jax and jaxlib,
#: the CPU plugin wheel's version.
TESTED_PAIRINGS = (
    ("3.11", "0.10.2", "0.11.2"),
    ("3.12", "0.11.2", "0.11.2"),
    ("3.13", "0.12.0.1", "0.11.2"),
)
_CPU_PLUGIN_WHEEL = "lammps-jax-pjrt-cpu"

#: What to install when jaxlib is newer than the plugin; the supported range is
#: pyproject.toml's (README, "Supported versions").
_INSTALL_HINT = (
    "install a plugin at least as new as jaxlib (pip install 'cyxla[cpu]' picks a matching "
    "pair), or a jax and jaxlib no newer than the plugin"
)


def package_version(name: str) -> str | None:
    """The installed version of the distribution `name`, or None."""
    from importlib import metadata  # where JAX is imported: a lean start spares it

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def tested_pairing() -> str:
    """Whether this process's Python, jax, jaxlib and CPU plugin are a pairing CI tests:
    "yes (...)" naming it, or "no (...)" naming the ones it does test."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    jax, jaxlib = package_version("jax"), package_version("jaxlib")
    plugin = package_version(_CPU_PLUGIN_WHEEL)
    if jax == jaxlib and (python, jax, plugin) in TESTED_PAIRINGS:
        return (
            f"yes (Python {python}, jax and jaxlib {jax}, {_CPU_PLUGIN_WHEEL} {plugin}: CI "
            "runs the test suite on it)"
        )
    tested = "; ".join(
        f"Python {p}, jax {j}, {_CPU_PLUGIN_WHEEL} {w}" for p, j, w in TESTED_PAIRINGS
    )
    return f"no (CI tests {tested})"


def _named(name: str) -> str:
    return f"{name} {package_version(name) or '(not installed)'}"


def distribution_of(library: str) -> str | None:
    """The "name version" of the installed distribution that ships the file `library`, or None
    (a library given by path outside any wheel)."""
    from importlib import metadata

    path = Path(library).resolve()
    for entry in sys.path:
        try:
            relative = path.relative_to(Path(entry or ".").resolve())
        except ValueError:
            continue
        if not relative.parts:
            continue
        candidates = metadata.packages_distributions().get(relative.parts[0], [])
        for name in dict.fromkeys(candidates):
            files = metadata.files(name) or []
            if any(Path(str(f)) == relative for f in files):
                return f"{name} {package_version(name)}"
        if candidates:
            return f"{candidates[0]} {package_version(candidates[0])}"
    return None


def jaxlib_stablehlo_version() -> tuple[int, ...]:
    """The StableHLO version jaxlib writes."""
    from cyxla._jax.jaxlib import hlo  # imports JAX: `backend` asks only once JAX is imported

    return _version_tuple(str(hlo.get_current_version()))


def jaxlib_ffi_version() -> tuple[int, int] | None:
    """XLA_FFI_API_MAJOR.MINOR of the FFI headers jaxlib ships (and builds its handlers
    with), or None when jaxlib ships none."""
    import jax.ffi  # the public module; JAX is imported by now (see jaxlib_stablehlo_version)

    return header_ffi_version(jax.ffi.include_dir())


def _plugin_ffi_version(plugin: _core.Plugin) -> tuple[int, int] | None:
    """The XLA FFI version of the plugin's XLA (its FFI extension, probed), or None."""
    try:
        version = _core._ffi_version(plugin)
    except Exception:  # no FFI extension: no custom calls, so no FFI skew either
        return None
    return None if version is None else (int(version[0]), int(version[1]))


def _version_tuple(value: Any) -> tuple[int, ...]:
    if isinstance(value, str):
        return tuple(int(part) for part in value.split("."))
    return tuple(int(part) for part in value)


def _text(version: tuple[int, ...] | None) -> str:
    return "unknown" if version is None else ".".join(map(str, version))


@dataclass(frozen=True)
class Verdict:
    """How jaxlib and a plugin fit. `problems` are the gaps that stop whole kinds of
    programs (the load warns of them), `fatal` when the plugin can read nothing jaxlib
    writes; `notes` are the gaps cyxla bridges, where only a program that needs what
    the plugin lacks is refused, naming it."""

    library: str
    plugin_package: str | None
    jaxlib_stablehlo: tuple[int, ...]
    plugin_stablehlo: tuple[int, ...] | None
    jaxlib_ffi: tuple[int, int] | None
    plugin_ffi: tuple[int, int] | None
    problems: tuple[str, ...]
    fatal: bool
    notes: tuple[str, ...] = ()

    @property
    def in_step(self) -> bool:
        """No gap at all: the plugin is at least as new as jaxlib."""
        return not self.problems and not self.notes

    @property
    def usable(self) -> bool:
        """No gap that stops whole kinds of programs (notes allowed)."""
        return not self.problems

    def summary(self) -> str:
        """One line: the versions on both sides."""
        return (
            f"StableHLO {_text(self.jaxlib_stablehlo)} (jaxlib) / "
            f"{_text(self.plugin_stablehlo)} (plugin), XLA FFI {_text(self.jaxlib_ffi)} "
            f"(jaxlib) / {_text(self.plugin_ffi)} (plugin)"
        )

    def message(self) -> str:
        """The whole verdict for a skew: packages, API versions, what to install."""
        return f"{self._packages()}: {'; '.join(self.problems)}; {_INSTALL_HINT}"

    def bridged(self) -> str:
        """The gaps cyxla bridges, for a plugin older than jaxlib that is still usable."""
        return f"{self._packages()}, and cyxla bridges the gap: {'; '.join(self.notes)}"

    def _packages(self) -> str:
        return (
            f"{_named('jax')} and {_named('jaxlib')} are newer than the plugin "
            f"{self.plugin_package or self.library}"
        )


def verdict(plugin: _core.Plugin, library: str, platform: str | None = None) -> Verdict:
    """How jaxlib and the loaded `plugin` (from the file `library`, for cyxla's
    `platform` where known) fit."""
    attributes = plugin.attributes
    current = attributes.get("stablehlo_current_version")
    minimum = attributes.get("stablehlo_minimum_version")
    plugin_stablehlo = None if current is None else _version_tuple(current)
    ours = jaxlib_stablehlo_version()
    jaxlib_ffi = jaxlib_ffi_version()
    plugin_ffi = _plugin_ffi_version(plugin)
    problems = []
    notes = []
    fatal = False
    if minimum is not None and _version_tuple(minimum) > ours:
        fatal = True
        problems.append(
            f"the plugin reads StableHLO {_text(_version_tuple(minimum))} and newer, and "
            f"jaxlib writes at most {_text(ours)}, so no program can be compiled"
        )
    if plugin_stablehlo is not None and ours > plugin_stablehlo:
        # Lowering serializes at the plugin's version (cyxla._jax.stablehlo), and refuses a
        # program whose operations that version lacks.
        notes.append(
            f"jaxlib writes StableHLO {_text(ours)}, the plugin reads at most "
            f"{_text(plugin_stablehlo)}: programs are written at "
            f"{_text(plugin_stablehlo)}, and lower refuses one that uses a newer operation"
        )
    if jaxlib_ffi is not None and plugin_ffi is not None and jaxlib_ffi > plugin_ffi:
        if platform == "cpu" and _own_lapack_handlers():
            notes.append(
                f"jaxlib's custom-call handlers are built against XLA FFI {_text(jaxlib_ffi)} "
                f"and the plugin's XLA runs XLA FFI {_text(plugin_ffi)} and older: cyxla's "
                "own handlers run jnp.linalg's LAPACK targets, and a program that calls "
                "another handler built against the newer FFI (jaxlib's sparse kernel, or "
                "one built with jaxlib's headers) is refused, naming the handler"
            )
        else:
            problems.append(
                f"jaxlib's custom-call handlers are built against XLA FFI {_text(jaxlib_ffi)}, "
                f"the plugin's XLA runs XLA FFI {_text(plugin_ffi)} and older (custom calls "
                "such as jnp.linalg's fail to compile)"
            )
    package = distribution_of(library) if problems or notes else None
    return Verdict(
        library,
        package,
        ours,
        plugin_stablehlo,
        jaxlib_ffi,
        plugin_ffi,
        tuple(problems),
        fatal,
        tuple(notes),
    )


def _own_lapack_handlers() -> bool:
    """Whether this build of cyxla carries its own LAPACK handlers (src/lapack/), which
    it registers with every CPU plugin in place of jaxlib's."""
    return bool(_core.lapack_targets())


#: Libraries whose skew this process has warned about: each once.
_warned: set[str] = set()


def check_on_load(
    plugin: _core.Plugin, library: str, platform: str | None = None, stacklevel: int = 3
) -> Verdict:
    """Warns (VersionSkewWarning, once per library, at `stacklevel` as `warnings.warn`
    counts it from here) when jaxlib is newer than the plugin just loaded in a way that
    stops whole kinds of programs; raises PluginVersionError when the plugin can compile
    nothing jaxlib writes. Returns the verdict."""
    found = verdict(plugin, library, platform)
    if found.fatal:
        raise PluginVersionError(found.message())
    if not found.usable and library not in _warned:
        _warned.add(library)
        warnings.warn(found.message(), VersionSkewWarning, stacklevel=stacklevel)
    return found
