"""A process that only loads and runs programs never imports JAX (nor jaxlib, nor
ml_dtypes): `import cyxla`, `load_program`, `compile_program` and `run`. What needs JAX
imports it when first needed: `lower`, a program's output structure, jaxlib's handlers
for a program that calls them, and the check of jaxlib against the plugin."""

from __future__ import annotations

import json
import pickle
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla as cx

from support import run_python

#: Prints the modules of JAX's that the process has imported, as JSON.
_IMPORTED = """
import json, sys
print(json.dumps(sorted(m for m in ("jax", "jaxlib", "ml_dtypes") if m in sys.modules)))
"""


def _lines(code: str, env: dict[str, str] | None = None, *, imports: bool = False) -> list[str]:
    """The output lines of `code` in a fresh process, then, with `imports`, `_IMPORTED`'s."""
    result = run_python(textwrap.dedent(code) + (_IMPORTED if imports else ""), env)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def _mlp(x: jax.Array, w: jax.Array) -> dict[str, jax.Array]:
    y = jnp.tanh(x @ w)
    return {"y": y, "sums": (y.sum(0), y.sum(1))}


@pytest.fixture(scope="module")
def mlp_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    f32 = jax.ShapeDtypeStruct((4, 8), jnp.float32)
    path = tmp_path_factory.mktemp("lean") / "mlp.cyxla"
    cx.lower(_mlp, [f32, jax.ShapeDtypeStruct((8, 8), jnp.float32)]).save(path)
    return path


def test_importing_cyxla_imports_no_jax() -> None:
    (imported,) = _lines("import cyxla", imports=True)
    assert json.loads(imported) == []


def test_load_compile_and_run_import_no_jax(mlp_file: Path, tmp_path: Path) -> None:
    """Twice in fresh processes: a compile, then a disk cache hit; jax.jit is the oracle."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 8), np.float32), rng.standard_normal((8, 8), np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    code = f"""
        import numpy as np
        import cyxla as cx
        program = cx.load_program({str(mlp_file)!r})
        executable, statistics = cx.compile_program(program)
        outputs = executable.run([np.load({str(tmp_path / "x.npy")!r}),
                                  np.load({str(tmp_path / "w.npy")!r})])
        for i, output in enumerate(outputs):
            np.save({str(tmp_path)!r} + f"/out{{i}}.npy", output)
        print(statistics.cache_hit)
    """
    env = {"CYXLA_CACHE_DIR": str(tmp_path / "cache")}
    for hit in ("False", "True"):
        assert _lines(code, env, imports=True) == [hit, "[]"]
        expected = jax.tree.leaves(jax.jit(_mlp)(x, w))
        for i, value in enumerate(expected):
            # atol: jax 0.12's XLA, newer than the plugin's, may differ in a last bit.
            np.testing.assert_allclose(
                np.load(tmp_path / f"out{i}.npy"), value, rtol=1e-6, atol=1e-6
            )


def test_large_unaligned_inputs_run_without_importing_jax(tmp_path: Path) -> None:
    """A dozen calls on a 4 MiB input 32 bytes past a 64-byte boundary, as NumPy may place
    it: past the count at which run asks for the variant that reads such inputs in place,
    which is written with jaxlib's MLIR. A process that never imported JAX keeps copying
    them instead, and its results are NumPy's."""
    n = 1 << 20
    path = tmp_path / "scale.cyxla"
    cx.lower(lambda x: x * 2.0 + 1.0, [jax.ShapeDtypeStruct((n,), jnp.float32)]).save(path)
    code = f"""
        import numpy as np
        import cyxla as cx
        from cyxla._run.aligned import empty_at
        executable, _ = cx.compile_program(cx.load_program({str(path)!r}))
        x = empty_at(32, {n}, np.float32)
        x[:] = np.arange({n}, dtype=np.float32)
        for _ in range(12):
            (y,) = executable.run([x])
        print(x.ctypes.data % 64, executable._variant_compile is None)
        print(np.array_equal(y, x * np.float32(2) + np.float32(1)))
    """
    env = {"CYXLA_CACHE_DIR": str(tmp_path / "cache")}
    assert _lines(code, env, imports=True) == ["32 True", "True", "[]"]


def test_the_output_structure_is_decoded_when_first_read(mlp_file: Path) -> None:
    """Pickling a loaded program imports no JAX either: the file's structure is kept."""
    lines = _lines(
        f"""
        import pickle, sys
        import cyxla as cx
        program = cx.load_program({str(mlp_file)!r})
        again = pickle.loads(pickle.dumps(program))  # written as the file held it
        print("jax" in sys.modules)
        print(program.output_tree)
        print(again.output_tree == program.output_tree)
        """
    )
    expected = jax.tree.structure(_mlp(jnp.zeros((4, 8)), jnp.zeros((8, 8))))
    assert lines == ["False", str(expected), "True"]
    program = cx.load_program(mlp_file)
    assert program.output_tree == expected
    assert pickle.loads(pickle.dumps(program)).output_tree == expected


def test_a_file_without_a_structure_gives_a_flat_tuple(mlp_file: Path, tmp_path: Path) -> None:
    import dataclasses

    flat = dataclasses.replace(cx.load_program(mlp_file), output_tree=None)
    flat.save(tmp_path / "flat.cyxla")
    assert flat.output_tree is None
    assert cx.load_program(tmp_path / "flat.cyxla").output_tree == jax.tree.structure((0, 0, 0))


def test_lower_is_imported_on_first_use() -> None:
    lines = _lines(
        """
        import sys
        import cyxla as cx
        print("jax" in sys.modules, "lower" in dir(cx))
        lower = cx.lower
        print("jax" in sys.modules, lower.__module__)
        print(hasattr(cx, "no_such_name"))
        """
    )
    assert lines == ["False True", "True cyxla._lower.lowering", "False"]
    assert cx.lower.__module__ == "cyxla._lower.lowering"
    lazy = {"lower", "lower_batched", "cache_key", "SUPPORTED_DTYPES", "verify_program_file"}
    assert lazy <= set(cx.__all__) and all(getattr(cx, name) for name in lazy)


def test_a_program_calling_jaxlib_handlers_gets_them_at_compile(tmp_path: Path) -> None:
    """jnp.linalg.solve calls LAPACK through jaxlib's handlers: a process that never
    imported JAX registers them when it compiles the program, and runs it right."""
    spec = jax.ShapeDtypeStruct((5, 5), jnp.float32)
    program = cx.lower(jnp.linalg.solve, [spec, jax.ShapeDtypeStruct((5, 2), jnp.float32)])
    assert any(name.startswith("lapack_") for name in program.custom_calls)
    program.save(tmp_path / "solve.cyxla")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 5), np.float32) + 5 * np.eye(5, dtype=np.float32)
    b = rng.standard_normal((5, 2), np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    lines = _lines(
        f"""
        import sys
        import numpy as np
        import cyxla as cx
        program = cx.load_program({str(tmp_path / "solve.cyxla")!r})
        cx.initialize()
        print("jaxlib" in sys.modules)
        executable, _ = cx.compile_program(program)
        a, b = np.load({str(tmp_path / "a.npy")!r}), np.load({str(tmp_path / "b.npy")!r})
        np.save({str(tmp_path / "x.npy")!r}, executable.run([a, b])[0])
        print("jaxlib" in sys.modules)
        """
    )
    assert lines == ["False", "True"]
    np.testing.assert_allclose(np.load(tmp_path / "x.npy"), np.linalg.solve(a, b), rtol=1e-4)


def test_jaxlib_is_checked_at_the_first_compile_after_jax_is_imported(
    mlp_file: Path,
) -> None:
    """A plugin loaded before JAX was imported is checked against jaxlib when a program
    is first compiled afterwards: the warning names the caller of compile_program."""
    lines = _lines(
        f"""
        import sys, warnings
        import cyxla as cx
        from cyxla._run import compat as _compat
        _compat.jaxlib_ffi_version = lambda: (0, 9)
        _compat._own_lapack_handlers = lambda: False  # as on a GPU: the gap is not bridged
        program = cx.load_program({str(mlp_file)!r})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cx.initialize()
            cx.compile_program(program)
            print(len(caught), "jax" in sys.modules)
            import jax
            cx.compile_program(program)
            cx.compile_program(program)
        skew = [w for w in caught if issubclass(w.category, cx.VersionSkewWarning)]
        print(len(skew), skew[0].filename)
        """
    )
    assert lines == ["0 False", "1 <string>"]


def test_registrations_made_before_cyxla_are_registered_at_compile(
    tmp_path: Path, handler_library: Path
) -> None:
    """Mirroring without the import-time hook: JAX imported after cyxla, a handler
    registered with jax.ffi after the plugin loaded, is registered when a program that
    calls it is compiled."""
    lines = _lines(
        f"""
        import ctypes
        import cyxla as cx
        cx.initialize()
        import jax
        from cyxla._ffi import checks, registry
        library = ctypes.CDLL({str(handler_library)!r})
        capsule = jax.ffi.pycapsule(library.CyxlaTestScaleAdd)
        jax.ffi.register_ffi_target("cyxla_lean_scale_add", capsule, platform="cpu")
        print("cyxla_lean_scale_add" in registry.registrations())
        checks.check_program(["cyxla_lean_scale_add"], "cpu")
        print(registry.registrations()["cyxla_lean_scale_add"].error)
        """
    )
    assert lines == ["False", "None"]
