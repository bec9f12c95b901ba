"""Custom calls: jaxlib's handlers on the plugin, user FFI targets, mirroring jax.ffi, and
the errors for what a plugin cannot run.

The user handler (tests/native/handlers.cc) is built here against the FFI headers
that jaxlib ships, computes y = x * factor + 1, and is compared with jax.jit running the
same handler through JAX's own registration."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.lib import xla_client

import cyxla as cx
from cyxla import _core
from cyxla._ffi import checks as ffi_checks
from cyxla._ffi import mirror, registry
from cyxla._ffi import plugin as ffi_plugin
from cyxla._ffi import sources as ffi_sources
from cyxla._ffi.headers import header_ffi_version
from cyxla._lower import lowering as cx_lowering

from support import (
    F32,
    FACTOR,
    NATIVE_SOURCES,
    OK,
    Error,
    Input,
    ProgramSpec,
    compile_cxx,
    last_json,
    run_python,
    scale_add,
    table,
)

HERE = Path(__file__).resolve().parent


SRC = HERE.parent / "src"


@pytest.fixture(scope="session")
def handlers(handler_library: Path) -> ctypes.CDLL:
    return ctypes.CDLL(str(handler_library))


def sample(shape: tuple[int, ...] = (2, 3)) -> np.ndarray:
    return np.linspace(-1.0, 2.0, int(np.prod(shape)), dtype=np.float32).reshape(shape)


def jaxlib_ffi_version() -> tuple[int, int]:
    """XLA_FFI_API_MAJOR.MINOR of the FFI headers that jaxlib ships (and was built with)."""
    header = (Path(jax.ffi.include_dir()) / "xla/ffi/api/c_api.h").read_text()
    major = re.search(r"#define XLA_FFI_API_MAJOR (\d+)", header)
    minor = re.search(r"#define XLA_FFI_API_MINOR (\d+)", header)
    assert major and minor
    return int(major.group(1)), int(minor.group(1))


def built_ffi_version() -> tuple[int, int]:
    """The XLA FFI version the user handler (tests/native/handlers.cc) is built with:
    jaxlib's, or on jax 0.12 the older headers the plugin runs (cx.ffi_include_dir)."""
    version = header_ffi_version(cx.ffi_include_dir())
    assert version is not None
    return version


# ---------------------------------------------------------------- headers to build with


def test_ffi_include_dir_names_headers_the_plugin_runs() -> None:
    plugin = _core._ffi_version(cx.initialize().plugin)
    include = cx.ffi_include_dir()
    version = header_ffi_version(include)
    assert version is not None and plugin is not None and version <= tuple(plugin)
    assert (Path(include) / "xla/ffi/api/ffi.h").is_file()
    if jaxlib_ffi_version() <= tuple(plugin):
        assert include == jax.ffi.include_dir()


def _newer_jaxlib_headers(directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """jaxlib's headers replaced by ones that say XLA FFI 0.99."""
    (directory / "xla/ffi/api").mkdir(parents=True)
    (directory / "xla/ffi/api/c_api.h").write_text(
        "#define XLA_FFI_API_MAJOR 0\n#define XLA_FFI_API_MINOR 99\n"
    )
    monkeypatch.setattr(jax.ffi, "include_dir", lambda: str(directory))


def test_ffi_include_dir_takes_older_headers_beside_a_newer_jaxlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _newer_jaxlib_headers(tmp_path, monkeypatch)
    include = cx.ffi_include_dir()
    assert include != str(tmp_path) and Path(include).parts[-2:] == ("tensorflow", "include")
    assert header_ffi_version(include) == (0, 2)  # tensorflow-cpu 2.21's XLA


def test_ffi_include_dir_without_older_headers_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cyxla._run import ffi_headers

    _newer_jaxlib_headers(tmp_path, monkeypatch)
    monkeypatch.setattr(ffi_headers, "_OLDER_HEADERS", ("cyxla_no_such_package",))
    with pytest.raises(cx.PluginVersionError) as caught:
        cx.ffi_include_dir()
    message = str(caught.value)
    assert f"jaxlib's XLA FFI headers ({tmp_path}) are version 0.99, newer than" in message
    assert "install 'cyxla[aot]'" in message


# ---------------------------------------------------------------- jaxlib's handlers


def test_cyxla_declares_the_xla_ffi_structs_as_jaxlib_does(tmp_path: Path) -> None:
    result = compile_cxx(NATIVE_SOURCES / "layout_check.cc", f"-I{SRC}", "-fsyntax-only")
    assert result.returncode == 0, result.stderr


def test_loading_the_plugin_registers_jaxlib_handlers_beside_cyxlas_lapack() -> None:
    plugin = cx.initialize().plugin
    registrations = registry.registrations()
    jaxlib = ffi_sources.jaxlib_targets()
    names = set(jaxlib)
    assert "lapack_spotrf_ffi" in names and "cpu_csr_sparse_dense_ffi" in names
    assert len([n for n in names if n.startswith("lapack_")]) == 60
    plugin_version = _core._ffi_version(plugin)
    assert plugin_version is not None
    # The LAPACK targets that cyxla's own handlers cover are theirs (built for the
    # plugin's FFI): jaxlib's handlers of those names are never registered.
    ours = ffi_sources.cyxla_lapack_targets()
    assert ours and ours < names
    for name in names:
        registration = registrations[name]
        assert registration.plugin_ffi_version == plugin_version
        if name in ours:
            assert registration.error is None, registration.error
            assert registration.origin == "cyxla"
            assert registration.handler_ffi_version == plugin_version
            continue
        assert registration.origin == "jaxlib"
        assert registration.handler_ffi_version == jaxlib_ffi_version()
        if jaxlib_ffi_version() <= plugin_version:
            assert registration.error is None, registration.error
        else:  # jaxlib 0.12's sparse handler on the 0.11.2 plugin: refused, saying why
            assert registration.error is not None
            newer = f"{jaxlib_ffi_version()[0]}.{jaxlib_ffi_version()[1]}"
            assert f"handler built against XLA FFI {newer}" in registration.error


def test_jaxlib_targets_come_from_the_listed_modules() -> None:
    from jaxlib.cpu import _lapack, _sparse

    expected = {*_lapack.registrations(), *_sparse.registrations()}
    assert set(ffi_sources.jaxlib_targets()) >= expected
    assert ffi_sources.JAXLIB_CPU_MODULES == ("jaxlib.cpu._lapack", "jaxlib.cpu._sparse")


def test_jax_held_targets_skip_what_cyxla_cannot_take(monkeypatch: pytest.MonkeyPatch) -> None:
    real = xla_client.custom_call_targets

    def targets_of(platform: str) -> Any:
        if platform == "ROCM":
            raise RuntimeError("unknown platform")
        return real(platform)

    monkeypatch.setattr(xla_client, "custom_call_targets", targets_of)
    pending = {"TPU": [("cyxla_test_tpu_pending", object(), 1, 0)]}
    monkeypatch.setattr(xla_client, "_custom_callback", pending, raising=False)
    held = {t.name for t in ffi_sources.jax_held_targets()}
    assert "cyxla_test_tpu_pending" not in held
    assert set(real("Host")) <= held


def test_a_jaxlib_module_that_does_not_import_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = "jaxlib.cpu._cyxla_missing"
    monkeypatch.setattr(ffi_sources, "JAXLIB_CPU_MODULES", (missing, "jaxlib.cpu._lapack"))
    names = [m.__name__ for m in ffi_sources._jaxlib_cpu_modules()]
    assert "jaxlib.cpu._lapack" in names and missing not in names


def test_a_linalg_program_from_the_cache_runs_in_a_fresh_process(tmp_path: Path) -> None:
    """A process that never lowers linear algebra still readies jaxlib's LAPACK."""
    env = {"CYXLA_CACHE_DIR": str(tmp_path)}
    store = run_python(
        """
        import jax, jax.numpy as jnp, cyxla as cx
        program = cx.lower(jnp.linalg.inv, [jax.ShapeDtypeStruct((3, 3), jnp.float32)])
        cx.compile_program(program)
        assert cx.store_lowered("inv", program)
        """,
        env,
    )
    assert store.returncode == 0, store.stderr
    load = run_python(
        """
        import numpy as np, cyxla as cx
        program = cx.load_lowered("inv")
        executable, statistics = cx.compile_program(program)
        a = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]], np.float32)
        (inverse,) = executable.run([a])
        assert statistics.cache_hit, statistics
        assert np.allclose(inverse @ a, np.eye(3), atol=1e-5), inverse
        print("ok")
        """,
        env,
    )
    assert load.returncode == 0, load.stderr
    assert load.stdout.strip() == "ok"


# ---------------------------------------------------------------- the extension's layouts


def fake_plugin(layout: int, directory: Path) -> Path:
    """tests/native/fake_plugin.c built for one layout of the FFI extension."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    assert compiler, "the custom-call tests need a C compiler (cc)"
    output = directory / f"libcyxla_fake_plugin_{layout}.so"
    command = [compiler, "-std=c11", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror"]
    command += [f"-DLAYOUT={layout}", f"-I{HERE.parent / 'include'}", f"-I{SRC}"]
    command += [
        "-isystem",
        jax.ffi.include_dir(),
        str(NATIVE_SOURCES / "fake_plugin.c"),
        "-o",
        str(output),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return output


@pytest.mark.parametrize(
    ("layout", "api_version", "traits"),
    [(1, 1, None), (2, 1, 1), (3, None, 1)],
    ids=["api_version", "api_version+traits", "typed"],
)
def test_every_layout_of_the_ffi_extension(
    layout: int,
    api_version: int | None,
    traits: int | None,
    handlers: ctypes.CDLL,
    tmp_path: Path,
) -> None:
    library = fake_plugin(layout, tmp_path)
    plugin = _core.Plugin.load(str(library))
    assert _core._ffi_version(plugin) == (0, 2)
    handler = ctypes.cast(handlers.CyxlaTestScaleAdd, ctypes.c_void_p).value
    versions = _core.register_ffi_handler(plugin, "fake_target", handler, "Host", 1)
    assert versions == (built_ffi_version(), (0, 2))
    fake = ctypes.CDLL(str(library))
    fake.fake_target.restype = fake.fake_platform.restype = ctypes.c_char_p
    fake.fake_handler.restype = ctypes.c_void_p
    fake.fake_traits.restype = ctypes.c_long
    assert (fake.fake_target(), fake.fake_platform()) == (b"fake_target", b"Host")
    assert fake.fake_handler() == handler
    assert fake.fake_api_version() == (-1 if api_version is None else api_version)
    assert fake.fake_traits() == (-1 if traits is None else traits)
    assert fake.fake_handler_minor() == built_ffi_version()[1]  # it asked the handler
    assert fake.fake_registrations() == 2  # cyxla's version probe, then the target


def test_a_plugin_without_the_ffi_extension(tmp_path: Path) -> None:
    plugin = _core.Plugin.load(str(fake_plugin(0, tmp_path)))
    with pytest.raises(cx.PluginVersionError, match="has no PJRT FFI extension"):
        _core._ffi_version(plugin)


def test_an_unknown_layout_of_the_ffi_extension(tmp_path: Path) -> None:
    plugin = _core.Plugin.load(str(fake_plugin(4, tmp_path)))
    with pytest.raises(cx.PluginVersionError) as info:
        _core._ffi_version(plugin)
    assert "cyxla knows the 40, 60 and 52-byte layouts" in str(info.value)
    assert "expected 48, got 0" in str(info.value)


def test_plugin_without_register_handler(scripted: tuple[_core.Plugin, ctypes.CDLL]) -> None:
    with pytest.raises(cx.PluginVersionError) as caught:
        _core._ffi_version(scripted[0])
    assert str(caught.value) == (
        f"the PJRT FFI extension of {scripted[0].path} cannot register handlers (it predates "
        "register_handler, added to XLA in 2025-08); install a newer plugin"
    )


# ---------------------------------------------------------------- a user handler


def test_user_handler_through_jax_ffi(handlers: ctypes.CDLL) -> None:
    """Registered with jax.ffi after cyxla's import: mirrored to the plugin."""
    jax.ffi.register_ffi_target(
        "cyxla_test_scale_add", jax.ffi.pycapsule(handlers.CyxlaTestScaleAdd), platform="cpu"
    )
    fn = scale_add("cyxla_test_scale_add")
    for shape in [(2, 3), (5,)]:
        x = sample(shape)
        program = cx.lower(fn, [x], custom_calls=["cyxla_test_scale_add"])
        assert program.custom_calls == ("cyxla_test_scale_add",)
        executable, _ = cx.compile_program(program)
        (ours,) = executable.run([x])
        np.testing.assert_array_equal(ours, jax.jit(fn)(x))
        np.testing.assert_allclose(ours, x * FACTOR + 1, rtol=1e-6)


def test_user_handler_through_cyxla(handlers: ctypes.CDLL) -> None:
    """Registered with cyxla only; JAX runs the same handler under its own registration."""
    capsule = jax.ffi.pycapsule(handlers.CyxlaTestScaleAdd)
    cx.register_ffi_target("cyxla_test_scale_add_cx", capsule, platform="cpu", api_version=1)
    cx.register_ffi_target("cyxla_test_scale_add_cx", capsule)  # the same again: no-op
    jax.ffi.register_ffi_target("cyxla_test_scale_add_jit", capsule)
    x = sample((4, 2))
    program = cx.lower(
        scale_add("cyxla_test_scale_add_cx"), [x], custom_calls=["cyxla_test_scale_add_cx"]
    )
    executable, _ = cx.compile_program(program)
    (ours,) = executable.run([x])
    np.testing.assert_array_equal(ours, jax.jit(scale_add("cyxla_test_scale_add_jit"))(x))
    registration = registry.registrations()["cyxla_test_scale_add_cx"]
    assert registration.error is None
    assert registration.handler_ffi_version == built_ffi_version()


def test_user_handler_native_execute(handlers: ctypes.CDLL) -> None:
    """The user handler run through the native API (cyxla.h `execute`), as C code does."""
    capsule = jax.ffi.pycapsule(handlers.CyxlaTestScaleAdd)
    cx.register_ffi_target("cyxla_test_scale_add_native", capsule)
    jax.ffi.register_ffi_target("cyxla_test_scale_add_native_jit", capsule)
    x = sample((3, 3))
    program = cx.lower(
        scale_add("cyxla_test_scale_add_native"), [x], custom_calls=["cyxla_test_scale_add_native"]
    )
    executable, _ = cx.compile_program(program)
    spec, error = ProgramSpec(), Error()
    spec.struct_size = ctypes.sizeof(ProgramSpec)
    api = table()
    assert api.get_spec(executable.handle, ctypes.byref(spec), ctypes.byref(error)) == OK
    try:
        y = np.empty_like(x)
        inputs = (Input * 1)(Input(x.ctypes.data, F32, x.nbytes))
        outputs = (ctypes.c_void_p * 1)(y.ctypes.data)
        status = api.execute(ctypes.byref(spec), inputs, 1, outputs, 1, ctypes.byref(error))
        assert status == OK, error.message
    finally:
        api.release_spec(ctypes.byref(spec))
    np.testing.assert_array_equal(y, jax.jit(scale_add("cyxla_test_scale_add_native_jit"))(x))


# ---------------------------------------------------------------- mirroring and order


def _scenario(code: str, handler_library: Path, env: dict[str, str] | None = None) -> Any:
    """Runs `code` after a common prelude in a fresh process; returns what it printed
    last (JSON)."""
    prelude = f"""
        import ctypes, json
        import jax, numpy as np
        lib = ctypes.CDLL({str(handler_library)!r})
        capsule = jax.ffi.pycapsule(lib.CyxlaTestScaleAdd)
        def fn(x):
            return jax.ffi.ffi_call("scale", jax.ShapeDtypeStruct(x.shape, x.dtype))(
                x, factor=np.float32(2.5))
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        def run():
            import cyxla as cx
            program = cx.lower(fn, [x], custom_calls=["scale"])
            return cx.compile_program(program)[0].run([x])[0].tolist()
    """
    result = run_python(textwrap.dedent(prelude) + textwrap.dedent(code), env)
    return last_json(result)


EXPECTED = (np.arange(6, dtype=np.float32).reshape(2, 3) * FACTOR + 1).tolist()


def test_jax_registration_before_importing_cyxla(handler_library: Path) -> None:
    result = _scenario(
        """
        jax.ffi.register_ffi_target("scale", capsule, platform="cpu")
        import cyxla
        print(json.dumps(run()))
        """,
        handler_library,
    )
    assert result == EXPECTED


def test_jax_registration_after_the_plugin_loaded(handler_library: Path) -> None:
    result = _scenario(
        """
        import cyxla as cx
        cx.initialize()
        jax.ffi.register_ffi_target("scale", capsule, platform="cpu")
        print(json.dumps(run()))
        """,
        handler_library,
    )
    assert result == EXPECTED


def test_cyxla_registration_before_the_plugin_loads(handler_library: Path) -> None:
    result = _scenario(
        """
        import cyxla as cx
        from cyxla._run import backend as _backend
        cx.register_ffi_target("scale", capsule)
        assert _backend.loaded() is None
        print(json.dumps(run()))
        """,
        handler_library,
    )
    assert result == EXPECTED


def test_mirroring_off(handler_library: Path) -> None:
    """CYXLA_MIRROR_JAX=0: nothing mirrored, until the by-hand calls."""
    result = _scenario(
        """
        import cyxla as cx
        from jax._src.lib import xla_client
        wrapped = hasattr(xla_client.register_custom_call_target, "_cyxla_mirror")
        jax.ffi.register_ffi_target("scale", capsule, platform="cpu")
        try:
            run()
            missing = None
        except cx.UnsupportedProgramError as error:
            missing = str(error)
        registered = cx.register_jax_targets()
        after = run()
        cx.mirror_jax_registrations()
        jax.ffi.register_ffi_target("scale_later", capsule, platform="cpu")
        later = "scale_later" in cx._ffi.registry.registrations()
        print(json.dumps([wrapped, missing, "scale" in registered, after, later]))
        """,
        handler_library,
        {cx.MIRROR_ENVIRONMENT_VARIABLE: "0"},
    )
    wrapped, missing, registered, after, later = result
    assert not wrapped
    assert "calls the custom-call target 'scale', which no handler in this process" in missing
    assert registered and after == EXPECTED and later


def test_a_rejected_handler_fails_the_compile_with_both_versions(handler_library: Path) -> None:
    """Registered before the plugin loads: the load records the rejection, the compile
    of a program that calls it raises it."""
    result = _scenario(
        """
        import cyxla as cx
        cx.register_ffi_target("future", jax.ffi.pycapsule(lib.CyxlaTestFutureHandler))
        def call_future(x):
            return jax.ffi.ffi_call("future", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
        program = cx.lower(call_future, [x], custom_calls=["future"])
        try:
            cx.compile_program(program)
        except cx.UnsupportedProgramError as error:
            print(json.dumps(str(error)))
        """,
        handler_library,
    )
    plugin = ".".join(map(str, _core._ffi_version(cx.initialize().plugin) or ()))
    assert "'future'" in result and "XLA FFI 0.99" in result
    assert f"plugin's XLA FFI {plugin}" in result and "newer than the plugin" in result


def test_a_rejected_jax_registration_warns_and_is_refused_where_called(
    handlers: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JAX's own client refuses the handler too; cyxla warns for a mirrored one. One that
    JAX holds, built against a newer XLA FFI than the plugin runs (as jax 0.12's own are
    beside the 0.11.2 plugin), does not stop register_jax_targets: a program that calls
    it is refused, naming both versions."""
    cx.initialize()
    capsule = jax.ffi.pycapsule(handlers.CyxlaTestFutureHandler)
    with pytest.warns(RuntimeWarning, match=r"'cyxla_test_future_mirrored'.*XLA FFI 0\.99"):
        mirror._mirror("cyxla_test_future_mirrored", capsule, "cpu", 1)
    pending = {"cpu": [("cyxla_test_future_held", capsule, 1, 0)]}
    monkeypatch.setattr(xla_client, "_custom_callback", pending, raising=False)
    assert "cyxla_test_future_held" in cx.register_jax_targets()
    error = registry.registrations()["cyxla_test_future_held"].error
    assert error is not None and "XLA FFI 0.99" in error
    with pytest.raises(cx.UnsupportedProgramError, match=r"'cyxla_test_future_held'.*0\.99"):
        ffi_checks.check_program(["cyxla_test_future_held"], "cpu")


def test_register_jax_targets_raises_for_a_handler_the_plugin_refuses_otherwise(
    handlers: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rejection that is not a newer XLA FFI (here an untyped registration) still
    raises at register_jax_targets."""
    loaded = cx.initialize()
    capsule = jax.ffi.pycapsule(handlers.CyxlaTestScaleAdd)
    pending = {"cpu": [("cyxla_test_held_refused", capsule, 1, 0)]}
    monkeypatch.setattr(xla_client, "_custom_callback", pending, raising=False)

    def rejects(plugin: Any, runtime: Any, versions: Any) -> tuple[dict[str, str], bool]:
        return {name: "XLA rejected it for a test" for name in versions}, True

    monkeypatch.setattr(ffi_plugin, "_verify", rejects)
    monkeypatch.setattr(ffi_plugin.probes, "source", lambda *_: None)
    assert loaded.platform == "cpu"
    with pytest.raises(cx.UnsupportedProgramError, match=r"'cyxla_test_held_refused'.*a test"):
        cx.register_jax_targets()


def test_a_second_handler_from_jax_is_ignored_with_a_warning(handlers: ctypes.CDLL) -> None:
    first = jax.ffi.pycapsule(handlers.CyxlaTestScaleAdd)
    cx.register_ffi_target("cyxla_test_twice", first)
    other = jax.ffi.pycapsule(handlers.CyxlaTestFutureHandler)
    with pytest.warns(RuntimeWarning, match="keeps the handler .* 'cyxla_test_twice' that cyxla"):
        mirror._mirror("cyxla_test_twice", other, "cpu", 1)  # as jax.ffi would
    x = sample()
    program = cx.lower(scale_add("cyxla_test_twice"), [x], custom_calls=["cyxla_test_twice"])
    (ours,) = cx.compile_program(program)[0].run([x])
    np.testing.assert_allclose(ours, x * FACTOR + 1, rtol=1e-6)


def test_a_failed_mirror_warns_and_jax_still_registers(
    handlers: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**_: Any) -> None:
        raise RuntimeError("mirror broke")

    monkeypatch.setattr(mirror, "_mirror", broken)
    capsule = jax.ffi.pycapsule(handlers.CyxlaTestScaleAdd)
    with pytest.warns(RuntimeWarning, match="could not mirror a JAX FFI registration: mirror"):
        jax.ffi.register_ffi_target("cyxla_test_unmirrored", capsule, platform="cpu")
    x = sample()
    np.testing.assert_allclose(
        jax.jit(scale_add("cyxla_test_unmirrored"))(x), x * FACTOR + 1, rtol=1e-6
    )


def test_mirroring_keeps_jax_behaviour() -> None:
    assert getattr(xla_client.register_custom_call_target, "_cyxla_mirror", False)
    assert cx.MIRROR_ENVIRONMENT_VARIABLE == "CYXLA_MIRROR_JAX"
    cx.mirror_jax_registrations()  # idempotent: still wrapped once
    wrapped = xla_client.register_custom_call_target
    assert not getattr(wrapped.__wrapped__, "_cyxla_mirror", False)


# ---------------------------------------------------------------- what cannot run: Python callbacks


def _lower_error(fn: Callable[..., Any], custom_calls: tuple[str, ...] = ()) -> str:
    with pytest.raises(cx.UnsupportedProgramError) as info:
        cx.lower(fn, [jax.ShapeDtypeStruct((3,), jnp.float32)], custom_calls=custom_calls)
    return str(info.value)


@pytest.fixture
def no_callback_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    """`lower` as on a platform without cyxla's callback handler (any but the CPU): JAX
    lowers the callbacks its own way, which jax.export refuses."""
    monkeypatch.setattr(cx_lowering, "_callback_lowering", lambda name, platform: None)


@pytest.mark.usefixtures("no_callback_handler")
def test_pure_callback_is_refused_without_the_handler() -> None:
    def fn(x: jax.Array) -> jax.Array:
        return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    message = _lower_error(fn)
    assert "fn uses jax.pure_callback (numpy.sin)" in message
    assert "on the CPU plugin only" in message
    assert "'xla_ffi_python_cpu_callback'" in message


@pytest.mark.usefixtures("no_callback_handler")
def test_io_callback_is_refused_without_the_handler() -> None:
    from jax.experimental import io_callback

    def fn(x: jax.Array) -> jax.Array:
        return io_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    message = _lower_error(fn)
    assert "jax.experimental.io_callback" in message
    assert "'xla_ffi_python_cpu_callback'" in message


@pytest.mark.usefixtures("no_callback_handler")
def test_debug_print_is_refused_without_the_handler() -> None:
    def fn(x: jax.Array) -> jax.Array:
        jax.debug.print("x = {}", x)
        return x * 2

    message = _lower_error(fn)
    assert "jax.debug.print (jax.debug.print('x = {}'))" in message
    assert "'xla_ffi_python_cpu_callback'" in message


@pytest.mark.usefixtures("no_callback_handler")
def test_debug_callback_is_refused_without_the_handler() -> None:
    def record(value: jax.Array) -> None:
        del value

    def fn(x: jax.Array) -> jax.Array:
        jax.debug.callback(record, x)
        return x * 2

    message = _lower_error(fn)
    assert "jax.debug.callback" in message and "record" in message


@pytest.mark.usefixtures("no_callback_handler")
def test_an_equinox_check_is_refused_with_the_way_out() -> None:
    import equinox as eqx

    def fn(x: jax.Array) -> jax.Array:
        return eqx.error_if(x, x > 1, "too large")

    message = _lower_error(fn)
    assert "equinox." in message and "EQX_ON_ERROR=nan" in message


def _call(target: str, config: str = "api_version = 4 : i32") -> str:
    return f"    %0 = stablehlo.custom_call @{target}(%arg0) {{{config}}} : (tensor<3xf32>) -> ()"


def test_check_lowered_lets_xla_builtins_through_and_names_callbacks() -> None:
    ffi_checks.check_lowered(_call("Sharding", 'backend_config = ""'), "f", "cpu")
    with pytest.raises(cx.UnsupportedProgramError) as info:
        ffi_checks.check_lowered(_call("xla_ffi_python_cpu_callback"), "f", "cpu")
    assert "f calls the custom-call target 'xla_ffi_python_cpu_callback'" in str(info.value)
    assert "Python host callback" in str(info.value)


def test_explain_export_error_falls_back_when_tracing_fails() -> None:
    def trace() -> Any:
        raise RuntimeError("cannot trace again")

    error = NotImplementedError("host_callbacks are not supported")
    assert ffi_checks.explain_export_error(error, "f", trace) is None
    assert ffi_checks.explain_export_error(ValueError("other"), "f", trace) is None


# ---------------------------------------------------------------- what cannot run: targets


def test_an_untyped_custom_call_is_refused() -> None:
    def fn(x: jax.Array) -> jax.Array:
        out = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return jax.ffi.ffi_call("cyxla_test_untyped", out, custom_call_api_version=1)(x)

    message = _lower_error(fn, ("cyxla_test_untyped",))
    assert "'cyxla_test_untyped' as an untyped custom call" in message


_explained = ffi_checks.explain_compile_errors


def test_explain_compile_errors_names_an_untyped_call() -> None:
    untyped = "No registered implementation for untyped custom call to old_call"
    expected = "'old_call' is an untyped custom call"
    with pytest.raises(cx.UnsupportedProgramError, match=expected), _explained():
        raise cx.CompileError(untyped)
    with pytest.raises(cx.CompileError, match="something else"), _explained():
        raise cx.CompileError("something else")


def test_a_target_registered_untyped_is_refused(handlers: ctypes.CDLL) -> None:
    """By lower's check, and by compile_program's (check_program) for a program lowered
    elsewhere."""
    capsule = jax.ffi.pycapsule(handlers.CyxlaTestScaleAdd)
    cx.register_ffi_target("cyxla_test_api0", capsule, api_version=0)
    message = _lower_error(scale_add("cyxla_test_api0"), ("cyxla_test_api0",))
    assert "'cyxla_test_api0'" in message and "api_version=0" in message
    with pytest.raises(cx.UnsupportedProgramError) as info:
        ffi_checks.check_program(["cyxla_test_api0"], "cpu")
    assert str(info.value).startswith("'cyxla_test_api0': it was registered as an untyped")


def test_a_target_with_more_stages_than_execute_is_refused(handlers: ctypes.CDLL) -> None:
    capsule = jax.ffi.pycapsule(handlers.CyxlaTestScaleAdd)
    cx.register_ffi_target("cyxla_test_stages", {"instantiate": capsule, "execute": capsule})
    message = _lower_error(scale_add("cyxla_test_stages"), ("cyxla_test_stages",))
    assert "'cyxla_test_stages'" in message and "['instantiate']" in message


def test_a_target_nobody_named_is_refused_at_lower() -> None:
    message = _lower_error(scale_add("cyxla_test_unnamed"))
    assert "['cyxla_test_unnamed']" in message
    assert "custom_calls=['cyxla_test_unnamed']" in message


def test_a_target_nobody_registered_is_refused_at_compile() -> None:
    program = cx.lower(
        scale_add("cyxla_test_nobody"), [sample()], custom_calls=["cyxla_test_nobody"]
    )
    with pytest.raises(cx.UnsupportedProgramError) as info:
        cx.compile_program(program)
    assert str(info.value).startswith(
        f"compile_program: {program.name} calls the custom-call target 'cyxla_test_nobody', "
        "which no handler in this process provides"
    )


# ---------------------------------------------------------------- refused handlers, the probe


def test_a_handler_newer_than_the_plugin_is_refused(handlers: ctypes.CDLL) -> None:
    plugin = cx.initialize().plugin
    version = ".".join(map(str, _core._ffi_version(plugin) or ()))
    with pytest.raises(cx.UnsupportedProgramError) as info:
        cx.register_ffi_target(
            "cyxla_test_future", jax.ffi.pycapsule(handlers.CyxlaTestFutureHandler)
        )
    message = str(info.value)
    assert "'cyxla_test_future'" in message
    assert f"handler built against XLA FFI 0.99, plugin's XLA FFI {version}" in message
    program = cx.lower(
        scale_add("cyxla_test_future"), [sample()], custom_calls=["cyxla_test_future"]
    )
    with pytest.raises(cx.UnsupportedProgramError, match=r"XLA FFI 0\.99"):
        cx.compile_program(program)


def test_version_reasons() -> None:
    older = ffi_plugin._version_reason((0, 1), (0, 2))
    assert older == (
        " (handler built against XLA FFI 0.1, plugin's XLA FFI 0.2): another handler may "
        "hold the name in the plugin"
    )
    assert "XLA FFI unknown" in ffi_plugin._version_reason(None, (0, 2))


def test_a_handler_that_refuses_its_metadata_call_is_refused(handlers: ctypes.CDLL) -> None:
    cx.initialize()
    capsule = jax.ffi.pycapsule(handlers.CyxlaTestRefusingHandler)
    with pytest.raises(cx.UnsupportedProgramError) as info:
        cx.register_ffi_target("cyxla_test_refusing", capsule)
    message = str(info.value)
    assert "'cyxla_test_refusing' refused XLA's metadata call" in message
    assert "CyxlaTestRefusingHandler refuses every call" in message


def test_registering_a_null_handler(sin_executable: cx.Executable) -> None:
    plugin = cx.initialize().plugin
    with pytest.raises(cx.InvalidArgumentError) as caught:
        _core.register_ffi_handler(plugin, "cyxla_test_null", 0, "Host")
    assert str(caught.value) == "the XLA FFI handler of 'cyxla_test_null' is a null pointer"


def test_a_handler_that_throws_at_its_metadata_call(tmp_path: Path) -> None:
    source = tmp_path / "throwing.cc"
    source.write_text(
        '#include <stdexcept>\nextern "C" void* cyxla_test_throwing(void*) '
        '{ throw std::runtime_error("thrown by the handler"); }\n'
    )
    library = tmp_path / "libthrowing.so"
    subprocess.run(["c++", "-shared", "-fPIC", "-o", library, source], check=True)
    handler = ctypes.CDLL(str(library)).cyxla_test_throwing
    address = ctypes.cast(handler, ctypes.c_void_p).value
    plugin = cx.initialize().plugin
    with pytest.raises(cx.InvalidArgumentError) as caught:
        _core.register_ffi_handler(plugin, "cyxla_test_throwing", address, "Host")
    assert (
        "'cyxla_test_throwing' refused XLA's metadata call (an exception: thrown by the "
        "handler)" in str(caught.value)
    )


def test_registration_arguments_are_checked(handlers: ctypes.CDLL) -> None:
    capsule = jax.ffi.pycapsule(handlers.CyxlaTestScaleAdd)
    cx.register_ffi_target("cyxla_test_first", capsule)
    other = jax.ffi.pycapsule(handlers.CyxlaTestFutureHandler)
    with pytest.raises(ValueError, match=r"'cyxla_test_first' .* already has a handler"):
        cx.register_ffi_target("cyxla_test_first", other)
    with pytest.raises(TypeError, match="must be a PyCapsule"):
        cx.register_ffi_target("cyxla_test_int", 1234)
    with pytest.raises(ValueError, match="platform 'tpu'"):
        cx.register_ffi_target("cyxla_test_tpu", capsule, platform="tpu")
    with pytest.raises(ValueError, match="no 'execute' stage"):
        cx.register_ffi_target("cyxla_test_no_execute", {"prepare": capsule})
    with pytest.raises(ValueError, match="invalid custom-call target name"):
        cx.register_ffi_target('bad"name', capsule)


def test_the_version_probe_is_no_custom_call() -> None:
    def call_probe(x: jax.Array) -> jax.Array:
        return jax.ffi.ffi_call("cyxla_ffi_version_probe", jax.ShapeDtypeStruct(x.shape, x.dtype))(
            x
        )

    program = cx.lower(
        call_probe,
        [jax.ShapeDtypeStruct((3,), jnp.float32)],
        custom_calls=["cyxla_ffi_version_probe"],
    )
    executable = cx.compile_program(program)[0]
    with pytest.raises(cx.PjrtError, match="cyxla_ffi_version_probe is not a custom call"):
        executable.run([np.zeros(3, np.float32)])


class _Refusing:
    """A runtime whose compile fails for a reason other than a missing handler."""

    def compile(self, *_: Any) -> None:
        raise cx.CompileError("out of memory")


def test_the_probe_passes_on_other_compile_errors() -> None:
    plugin = cx.initialize().plugin
    with pytest.raises(cx.CompileError, match="out of memory"):
        ffi_plugin._probe(plugin, _Refusing(), ["cyxla_test_probe"])  # type: ignore[arg-type]


def test_a_failed_probe_rejects_what_it_would_have_verified(
    handlers: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cyxla._ffi import targets as ffi_targets

    loaded = cx.initialize()
    capsule = jax.ffi.pycapsule(handlers.CyxlaTestScaleAdd)
    entry = ffi_targets.target_from("cyxla_test_probe_failed", capsule, "cpu", 1, 0, "cyxla")

    def failing(*_: Any) -> None:
        raise RuntimeError("probe broke")

    monkeypatch.setattr(ffi_plugin, "_probe", failing)
    results = ffi_plugin.register(loaded.plugin, loaded.runtime, "cpu", [entry], {})
    registration = results["cyxla_test_probe_failed"]
    assert registration.error is not None
    assert registration.error.endswith("the probe compile failed: probe broke")
    assert registration.handler_ffi_version == built_ffi_version()
