"""The compile options the core gives a platform's programs (runtime/platforms.hpp): on
the CPU, loops vectorized 128 bits wide in programs that hold an atan2, without which the
plugin's `jnp.arctan` of 64 or more elements returned other elements' values. Every door
compiles with them (Python's compile_program, the C loader), other programs keep XLA's
256 bits, a caller's option of the same name replaces them, and `python -m cyxla info`
names them."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx
from cyxla import _platforms

from support import load_from_c, run_from_c, table, x64_mode

#: Where the plugin's arctan went wrong at XLA's default vector width (float64 needs x64).
ARCTAN_CASES = [
    ((64,), "float32"),
    ((400,), "float32"),
    ((1000,), "float32"),
    ((33, 31), "float32"),
    ((8, 128), "float32"),
    ((20, 20), "float64"),
    ((64,), "float64"),
]


def _points(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Distinct values on both sides of 1 (atan's two branches), none alike in a vector."""
    return np.linspace(-7.0, 7.0, int(np.prod(shape))).reshape(shape).astype(dtype)


@pytest.mark.parametrize(("shape", "dtype"), ARCTAN_CASES, ids=str)
def test_arctan_is_jax_jits_at_sizes_xla_vectorizes(shape: tuple[int, ...], dtype: str) -> None:
    x = _points(shape, dtype)
    with x64_mode(dtype == "float64"):
        executable, _ = cx.compile_program(cx.lower(jnp.arctan, [x]))
        (ours,) = executable.run([x])
        theirs = np.asarray(jax.jit(jnp.arctan)(x))
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(ours, theirs, rtol=4 * eps, atol=0)
    np.testing.assert_allclose(ours, np.arctan(x), rtol=8 * eps, atol=0)


def test_the_c_loader_compiles_with_the_defaults(tmp_path: Path) -> None:
    x = _points((400,), "float32")
    path = tmp_path / "arctan.cyxla"
    cx.lower(jnp.arctan, [x]).save(path)
    status, handle, error = load_from_c(path)
    assert status == 0, error.message
    try:
        (out,) = run_from_c(handle, [x])
    finally:
        table().release_program(handle)
    np.testing.assert_allclose(out, jax.jit(jnp.arctan)(x), rtol=5e-7, atol=0)


def test_a_callers_option_replaces_the_default() -> None:
    # 256 bits is XLA's own default: the plugin's atan is wrong there, which is why cyxla
    # compiles at 128. Should this start to pass with a newer plugin, the default in
    # runtime/platforms.hpp can go.
    x = _points((64,), "float32")
    program = cx.lower(jnp.arctan, [x])
    (default,) = cx.compile_program(program)[0].run([x])
    (wide,) = cx.compile_program(program, options={"xla_cpu_prefer_vector_width": 256})[0].run([x])
    np.testing.assert_allclose(default, np.arctan(x), rtol=5e-7)
    assert np.abs(wide - np.arctan(x)).max() > 0.1, (
        "the plugin's arctan is right at 256 bits: the CPU's compile default may go"
    )


def _kernel_objects(executable: cx.Executable) -> list[bytes]:
    """The ELF objects of the kernels in the plugin's serialized executable, each as long
    as its header says (the section headers come last: e_shoff + e_shnum * e_shentsize)."""
    blob = executable._native.serialize()
    objects, start = [], blob.find(b"\x7fELF")
    while start >= 0:
        (section_headers,) = struct.unpack_from("<Q", blob, start + 0x28)
        entry_size, count = struct.unpack_from("<HH", blob, start + 0x3A)
        objects.append(blob[start : start + section_headers + count * entry_size])
        start = blob.find(b"\x7fELF", start + 4)
    assert objects, "no kernel object in the serialized executable"
    return objects


@pytest.mark.parametrize(
    ("fn", "width"), [(jnp.arctan, 128), (lambda x: 2 * x + 1, 256)], ids=["atan2", "other"]
)
def test_only_programs_with_an_atan2_get_128_bits(
    fn: object, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Kernels compiled at `width` bits are the default's, and those at the other width are
    # not: 2 * x + 1 on 1000 elements is vectorized otherwise at 128 bits. Compiled afresh:
    # an executable the plugin loaded from the disk cache serializes without its objects.
    monkeypatch.setenv("CYXLA_CACHE_DIR", "")
    program = cx.lower(fn, [_points((1000,), "float32")])

    def kernels(bits: int | None) -> list[bytes]:
        options = {} if bits is None else {"xla_cpu_prefer_vector_width": bits}
        return _kernel_objects(cx.compile_program(program, options=options)[0])

    assert kernels(None) == kernels(width)
    assert kernels(None) != kernels(384 - width)


def test_the_defaults_come_from_the_core_and_info_shows_them() -> None:
    (default,) = _platforms.COMPILE_DEFAULTS["cpu"]
    assert default == ("xla_cpu_prefer_vector_width", "128", "atan2")
    assert _platforms.COMPILE_DEFAULTS["cuda"] == ()
    info = subprocess.run(
        [sys.executable, "-m", "cyxla", "info"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert "compile defaults (cpu): xla_cpu_prefer_vector_width=128 (programs with atan2)" in info
