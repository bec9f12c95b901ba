"""export_aot: programs compiled ahead of time into C that calls their kernels, run from
ctypes, from a plain C program and from a CMake project, against jax.jit; the refusals of
programs that need XLA's runtime; and what the generated entry point checks."""

from __future__ import annotations

import ctypes
import dataclasses
import importlib.util
import shutil
import subprocess
import threading
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx
from cyxla._aot import c_source, kernel_plan, tfcompile

from support import SWEEP_FUNCTIONS, all_at_once, compare_with_jit, run_cyxla, sweep_values

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None,
    reason='the aot extra (tensorflow-cpu) is not installed: pip install "cyxla[aot]"',
)

F32 = jnp.float32


def spec(*shape: int, dtype: Any = F32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def mlp(x: jax.Array, w1: jax.Array, b1: jax.Array, w2: jax.Array, b2: jax.Array) -> jax.Array:
    return jnp.tanh(x @ w1 + b1) @ w2 + b2


_WEIGHTS = np.linspace(-1, 1, 64 * 64, dtype=np.float32).reshape(64, 64)

#: Programs that compile to kernels alone: name -> (function, argument specs).
QUALIFYING: dict[str, tuple[Callable[..., Any], list[jax.ShapeDtypeStruct]]] = {
    "sin3": (lambda x: jnp.sin(x) * 2, [spec(3)]),
    "mlp64": (mlp, [spec(64), spec(64, 64), spec(64), spec(64, 64), spec(64)]),
    "reductions": (lambda x: (x.sum(), x.max(axis=1), jnp.mean(x, axis=0)), [spec(32, 16)]),
    "captured_constant": (lambda x: x @ jnp.asarray(_WEIGHTS) + 1, [spec(64)]),
    "written_in_place": (lambda x: jnp.exp(x) * 2 + 1, [spec(1 << 16)]),
    "outputs_shared": (lambda x: (x, x * 2, x * 2), [spec(5)]),
    "integers_and_bools": (
        lambda i, b: (jnp.where(b, i * 3, -i), (i % 4 == 0) | b),
        [spec(7, dtype=jnp.int32), spec(7, dtype=jnp.bool_)],
    ),
    "scalar": (lambda a, x: a * x + jnp.cos(a), [spec(), spec(4)]),
    "fori_loop": (lambda x: jax.lax.fori_loop(0, 10, lambda i, v: v * 1.1 + i, x), [spec(8)]),
    # A data-dependent loop, which XLA runs inside one kernel (each seed's values end it).
    "while_loop": (
        lambda x: jax.lax.while_loop(lambda v: v.sum() < 100, lambda v: v * 2 + 1, jnp.abs(x)),
        [spec(4)],
    ),
    "no_inputs": (lambda: jnp.arange(6, dtype=F32) * 0.5, []),
}


def _arguments(specs: tuple[cx.TensorSpec, ...], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for s in specs:
        array = cx.empty(s.shape, s.dtype)
        if s.dtype == np.bool_:
            array[...] = rng.random(s.shape) < 0.5
        elif s.dtype.kind == "i":
            array[...] = rng.integers(-50, 50, s.shape)
        else:
            array[...] = rng.standard_normal(s.shape)
        arrays.append(array)
    return arrays


def _pointers(arrays: list[np.ndarray]) -> Any:
    return (ctypes.c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays])


def call(library: cx.AotLibrary, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> int:
    """The entry point's status, called through ctypes with its own scratch memory."""
    entry = getattr(ctypes.CDLL(str(library.shared_library)), library.name)
    scratch = cx.empty(max(library.scratch_bytes, 1), np.uint8)
    return int(entry(_pointers(inputs), _pointers(outputs), ctypes.c_void_p(scratch.ctypes.data)))


def _results(program: cx.Program, library: cx.AotLibrary, inputs: list[np.ndarray]) -> list:
    outputs = [cx.empty(s.shape, s.dtype) for s in program.outputs]
    assert call(library, inputs, outputs) == 0
    return outputs


def _expected(function: Callable[..., Any], inputs: list[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(r) for r in jax.tree.leaves(jax.jit(function)(*inputs))]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each qualifying program, lowered and exported once for the module."""
    directory = tmp_path_factory.mktemp("aot")
    done = {}
    for name, (function, specs) in QUALIFYING.items():
        program = cx.lower(function, specs)
        done[name] = (program, cx.export_aot(program, directory, name=name))
    return done


@pytest.mark.parametrize("name", list(QUALIFYING))
def test_exported_programs_compute_what_jax_jit_computes(
    exported: dict[str, Any], name: str
) -> None:
    function, _ = QUALIFYING[name]
    program, library = exported[name]
    for seed in (0, 1):
        inputs = _arguments(program.inputs, seed)
        for got, want in zip(
            _results(program, library, inputs), _expected(function, inputs), strict=True
        ):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-5)


def test_the_library_needs_libc_and_libm_alone(exported: dict[str, Any]) -> None:
    _, library = exported["mlp64"]
    needed = subprocess.run(
        ["readelf", "-d", str(library.shared_library)], capture_output=True, text=True, check=True
    ).stdout
    assert {
        line.split("[")[1].rstrip("]") for line in needed.splitlines() if "(NEEDED)" in line
    } <= {
        "libm.so.6",
        "libc.so.6",
    }
    undefined = subprocess.run(
        ["nm", "-u", str(library.object_file)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [s for s in undefined if "tensorflow" in s or "xla" in s.lower() or "absl" in s]


def test_the_header_gives_the_specs_and_the_scratch(exported: dict[str, Any]) -> None:
    program, library = exported["mlp64"]
    header = library.header.read_text()
    assert "#define MLP64_NUM_INPUTS 5" in header
    assert "#define MLP64_NUM_OUTPUTS 1" in header
    assert f"#define MLP64_SCRATCH_BYTES {library.scratch_bytes}" in header
    assert '#define MLP64_INPUT_1_DTYPE "float32"' in header
    assert "static const int64_t MLP64_INPUT_1_DIMS[2] = {64, 64};" in header
    assert f"#define MLP64_OUTPUT_0_BYTES {program.outputs[0].nbytes}" in header
    assert library.target_cpu == "generic" and "Target CPU: generic" in header


def test_a_program_file_exports_as_its_program(tmp_path: Path) -> None:
    function, specs = QUALIFYING["scalar"]
    program = cx.lower(function, specs)
    program.save(tmp_path / "scalar.cyxla")
    library = cx.export_aot(tmp_path / "scalar.cyxla", tmp_path / "out")
    assert library.name == "_lambda_" and library.header.name == "_lambda_.h"
    inputs = _arguments(program.inputs, 2)
    for got, want in zip(
        _results(program, library, inputs), _expected(function, inputs), strict=True
    ):
        np.testing.assert_allclose(got, want, rtol=2e-6)


def test_the_host_target_computes_the_same(tmp_path: Path) -> None:
    function, specs = QUALIFYING["mlp64"]
    program = cx.lower(function, specs)
    library = cx.export_aot(program, tmp_path, name="mlp_host", target="host")
    assert library.target_cpu not in ("", "generic")
    assert f"Target CPU: {library.target_cpu}" in library.header.read_text()
    inputs = _arguments(program.inputs, 3)
    (got,) = _results(program, library, inputs)
    np.testing.assert_allclose(got, _expected(function, inputs)[0], rtol=2e-6, atol=2e-5)


# ------------------------------------------------------------------ from C


_C_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include "sin3.h"

int main(void) {
  float* x = aligned_alloc(SIN3_ALIGNMENT, 64);
  float* y = aligned_alloc(SIN3_ALIGNMENT, 64);
  for (int i = 0; i < 3; ++i) x[i] = 0.5f * (float)i - 0.25f;
  const void* inputs[SIN3_NUM_INPUTS] = {x};
  void* outputs[SIN3_NUM_OUTPUTS] = {y};
  int status = sin3(inputs, outputs, NULL);
  if (status != SIN3_OK) {
    fprintf(stderr, "%s\n", sin3_status_text(status));
    return 1;
  }
  for (int i = 0; i < SIN3_INPUT_0_DIMS[0]; ++i) printf("%.9g\n", y[i]);
  free(x);
  free(y);
  return 0;
}
"""


def _printed(command: list[str], cwd: Path) -> np.ndarray:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return np.array([float(v) for v in result.stdout.split()], np.float32)


def _sin3_expected() -> np.ndarray:
    x = np.array([-0.25, 0.25, 0.75], np.float32)
    return np.asarray(jax.jit(QUALIFYING["sin3"][0])(x))


def test_the_object_runs_from_plain_c(exported: dict[str, Any], tmp_path: Path) -> None:
    _, library = exported["sin3"]
    (tmp_path / "main.c").write_text(_C_MAIN)
    build = [
        shutil.which("cc") or "gcc",
        "-std=c11",
        "-Wall",
        "-Werror",
        f"-I{library.header.parent}",
        "main.c",
        str(library.object_file),
        "-lm",
        "-o",
        "main",
    ]
    subprocess.run(build, cwd=tmp_path, check=True)
    np.testing.assert_allclose(_printed(["./main"], tmp_path), _sin3_expected(), rtol=1e-6)


def test_the_object_links_in_a_cmake_project(exported: dict[str, Any], tmp_path: Path) -> None:
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake is not installed")
    _, library = exported["sin3"]
    (tmp_path / "main.c").write_text(_C_MAIN)
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\n"
        "project(uses_sin3 C)\n"
        "add_library(sin3 OBJECT IMPORTED)\n"
        f'set_target_properties(sin3 PROPERTIES IMPORTED_OBJECTS "{library.object_file}")\n'
        f'target_include_directories(sin3 INTERFACE "{library.header.parent}")\n'
        "add_executable(main main.c)\n"
        "target_link_libraries(main PRIVATE sin3 m)\n"
    )
    subprocess.run([cmake, "-S", ".", "-B", "build"], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run([cmake, "--build", "build"], cwd=tmp_path, check=True, capture_output=True)
    np.testing.assert_allclose(_printed(["build/main"], tmp_path), _sin3_expected(), rtol=1e-6)


def test_threads_call_at_once_each_with_its_own_scratch(exported: dict[str, Any]) -> None:
    function, _ = QUALIFYING["mlp64"]
    program, library = exported["mlp64"]
    failures: list[int] = []

    def work(seed: int) -> None:
        inputs = _arguments(program.inputs, seed)
        want = _expected(function, inputs)[0]
        for _ in range(200):
            (got,) = _results(program, library, inputs)
            if not np.allclose(got, want, rtol=2e-6, atol=2e-5):
                failures.append(seed)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


# ------------------------------------------------------------------ the entry point's checks


def test_the_entry_point_refuses_null_unaligned_and_overlapping_memory(
    exported: dict[str, Any],
) -> None:
    program, library = exported["mlp64"]
    inputs = _arguments(program.inputs, 4)
    out = [cx.empty(s.shape, s.dtype) for s in program.outputs]
    entry = getattr(ctypes.CDLL(str(library.shared_library)), library.name)
    text = getattr(ctypes.CDLL(str(library.shared_library)), library.name + "_status_text")
    text.restype = ctypes.c_char_p
    scratch = cx.empty(library.scratch_bytes, np.uint8)

    def status(ins: Any, outs: Any, scratch_address: int | None) -> str:
        return text(entry(ins, outs, ctypes.c_void_p(scratch_address))).decode()

    good_scratch = scratch.ctypes.data
    assert status(_pointers(inputs), _pointers(out), good_scratch) == "the outputs hold the results"
    assert "must not be NULL" in status(None, _pointers(out), good_scratch)
    assert "must not be NULL" in status(_pointers(inputs), _pointers(out), None)
    holes = _pointers(inputs)
    holes[2] = None
    assert "must not be NULL" in status(holes, _pointers(out), good_scratch)
    raw = cx.empty(64 * 64 * 4 + 64, np.uint8)
    shifted = _pointers(inputs)
    shifted[1] = raw.ctypes.data + 16
    assert "not 64-byte aligned" in status(shifted, _pointers(out), good_scratch)
    assert "not 64-byte aligned" in status(_pointers(inputs), _pointers(out), good_scratch + 8)
    over = _pointers(inputs[2:3])  # the output over input 2 (b1, the same size)
    assert "overlaps" in status(_pointers(inputs), over, good_scratch)
    assert text(99) == b"not a status"


# ------------------------------------------------------------------ refusals


_REFUSED: dict[str, tuple[Callable[..., Any], list[jax.ShapeDtypeStruct], str]] = {
    "sort": (jnp.sort, [spec(100)], r"beyond kernel calls \(Copy thunk, Sort thunk\)"),
    "conditional": (
        lambda x: jax.lax.cond(x[0] > 0, jnp.sin, jnp.cos, x),
        [spec(8)],
        r"\(Conditional thunk\)",
    ),
    "large_dot": (
        lambda a, b: jnp.tanh(a @ b),
        [spec(100, 100)] * 2,
        r"tfcompile could not compile",
    ),
    "custom_call": (jnp.linalg.solve, [spec(3, 3), spec(3)], r"calls lapack_\w+.*custom calls"),
    "complex": (jnp.conj, [spec(3, dtype=jnp.complex64)], r"complex numbers \(complex64\[3\]"),
}


@pytest.mark.parametrize("kind", list(_REFUSED))
def test_programs_that_need_xlas_runtime_are_refused(kind: str, tmp_path: Path) -> None:
    function, specs, message = _REFUSED[kind]
    with pytest.raises(cx.UnsupportedProgramError, match=message):
        cx.export_aot(cx.lower(function, specs), tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_program_for_another_platform_is_refused(tmp_path: Path) -> None:
    program = dataclasses.replace(cx.lower(*QUALIFYING["sin3"]), platform="cuda")
    with pytest.raises(cx.UnsupportedProgramError, match="lowered for cuda"):
        cx.export_aot(program, tmp_path)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"name": "2fast"}, "name must be a C identifier"),
        ({"name": "static"}, "name must be a C identifier"),
        ({"target": "Host; rm"}, 'target is "generic", "host" or an LLVM CPU name'),
    ],
)
def test_names_and_targets_are_checked(
    arguments: dict[str, str], message: str, tmp_path: Path
) -> None:
    with pytest.raises(cx.InvalidArgumentError, match=message):
        cx.export_aot(cx.lower(*QUALIFYING["sin3"]), tmp_path, **arguments)


def test_a_cpu_llvm_does_not_know_is_refused_and_the_process_goes_on(tmp_path: Path) -> None:
    # LLVM aborts the process that compiles for it ("64-bit code requested on a subtarget
    # that doesn't support it"): tfcompile runs for a named CPU in a child.
    with pytest.raises(cx.InvalidArgumentError, match="LLVM does not know the CPU 'znver99'"):
        cx.export_aot(cx.lower(*QUALIFYING["sin3"]), tmp_path, target="znver99")
    library = cx.export_aot(cx.lower(*QUALIFYING["sin3"]), tmp_path, target="x86-64-v3")
    assert library.target_cpu == "x86-64-v3"


def test_a_missing_or_untested_tensorflow_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    program = cx.lower(*QUALIFYING["sin3"])
    real = metadata.version

    def missing(name: str) -> str:
        if name.startswith("tensorflow"):
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", missing)
    with pytest.raises(cx.AotToolchainError, match=r'pip install "cyxla\[aot\]"'):
        cx.export_aot(program, tmp_path)
    monkeypatch.setattr(
        metadata, "version", lambda name: "2.99.0" if "tensorflow" in name else real(name)
    )
    with pytest.raises(cx.AotToolchainError, match=r"tensorflow-cpu 2\.21\.x, and 2\.99\.0"):
        cx.export_aot(program, tmp_path)


def test_another_kernel_abi_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    changed = (
        *c_source.XLA_KERNEL_ABI[:2],
        "typedef struct XLA_CPU_KernelArg { void* data; } X;",
    )
    monkeypatch.setattr(c_source, "XLA_KERNEL_ABI", changed)
    with pytest.raises(cx.AotToolchainError, match=r"kernel ABI .* not the one this cyxla knows"):
        cx.export_aot(cx.lower(*QUALIFYING["sin3"]), tmp_path)


def test_a_header_of_another_form_is_refused(tmp_path: Path) -> None:
    program = cx.lower(*QUALIFYING["mlp64"])
    compiled = tfcompile.compile_program(program, "probe", "", tmp_path)
    plan = kernel_plan.read_plan(compiled.header, "probe")
    assert len(plan.calls) == 3 and len(plan.parameter_buffers) == 5
    for old, new in [
        ("XLA_CPU_KernelCallFrame call_frame", "XLA_CPU_KernelCallFrame frame"),
        ("kNumBuffers = ", "kNumBuffers = 1 + "),
        ("RngStateDeltas() {", "Deltas() {"),
    ]:
        assert old in compiled.header
        with pytest.raises(kernel_plan.UnknownHeaderError) as caught:
            kernel_plan.read_plan(compiled.header.replace(old, new, 1), "probe")
        assert isinstance(caught.value, cx.AotToolchainError)


# ------------------------------------------------------------------ the command line


def test_export_aot_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(
        "import jax.numpy as jnp\n\ndef predict(x):\n    return jnp.sin(x) * 2\n"
    )
    result = run_cyxla(
        "export",
        "model:predict",
        "--arg",
        "f32[3]",
        "--aot",
        "--name",
        "sin3",
        "-o",
        "out",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "sin3(float32[3]) for the generic CPU" in result.stdout
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"sin3.h", "sin3.o", "libsin3.so"}
    # A program file is compiled as it is; a refused one exits 1 saying why.
    cx.lower(jnp.sort, [spec(9)]).save(tmp_path / "sort.cyxla")
    refused = run_cyxla("export", "sort.cyxla", "--aot", "-o", "out", cwd=tmp_path)
    assert refused.returncode == 1 and "Sort thunk" in refused.stderr
    plain = run_cyxla("export", "sort.cyxla", "-o", "x.cyxla", cwd=tmp_path)
    assert plain.returncode == 2 and "is a program file already" in plain.stderr


# ------------------------------------------------------------------ the jnp sweep


#: The sweep's shapes, lowered together as one program per function and dtype.
_SWEEP_SHAPES = ((3,), (2, 3))


def _sweep_arguments(name: str, dtype_name: str) -> tuple[Callable[..., Any], list[np.ndarray]]:
    function, arity = SWEEP_FUNCTIONS[name]
    dtype = np.dtype(dtype_name)
    flat = [
        sweep_values(shape, dtype, operand) for shape in _SWEEP_SHAPES for operand in range(arity)
    ]
    return all_at_once(function, arity, len(_SWEEP_SHAPES)), flat


def _sweep_cases() -> list[Any]:
    """The sweep's functions on the real and integer dtypes where JAX traces them at these
    shapes (jnp.dot of two (2, 3) arrays does not); complex numbers are refused as a
    whole (test_programs_that_need_xlas_runtime_are_refused)."""
    cases = []
    for name in SWEEP_FUNCTIONS:
        for dtype_name in ("float32", "int32", "bool"):
            every, flat = _sweep_arguments(name, dtype_name)
            try:
                jax.eval_shape(every, *flat)
            except (TypeError, ValueError):
                continue
            cases.append(pytest.param(name, dtype_name, id=f"{name}-{dtype_name}"))
    return cases


@pytest.mark.parametrize(("name", "dtype_name"), _sweep_cases())
def test_the_jnp_sweep_exports_as_jax_jit_computes_or_is_refused(
    name: str, dtype_name: str, tmp_path: Path
) -> None:
    """Every function of the jnp sweep that jax.jit runs on the dtype, at two shapes in one
    program: exported, and equal to jax.jit, or refused as needing XLA's runtime."""
    every, flat = _sweep_arguments(name, dtype_name)
    want = [np.asarray(r) for r in jax.tree.leaves(jax.jit(every)(*flat))]
    program = cx.lower(every, flat)
    try:
        library = cx.export_aot(program, tmp_path, name="swept")
    except cx.UnsupportedProgramError as refusal:
        assert "XLA" in str(refusal) or "tfcompile" in str(refusal)
        return
    inputs = []
    for array in flat:
        copy = cx.empty(array.shape, array.dtype)
        copy[...] = array
        inputs.append(copy)
    for k, (got, expected) in enumerate(zip(_results(program, library, inputs), want, strict=True)):
        compare_with_jit(got, expected, f"{name} on {dtype_name}, output {k}")
