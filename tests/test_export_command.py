"""`python -m cyxla export MODULE:FUNCTION --arg ... -o FILE`: the file it writes loads
and gives jax.jit's results; bad targets, specs and dtypes are refused saying which."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import jax
import numpy as np
import pytest

import cyxla as cx
from cyxla.__main__ import main as cli

from support import run_cyxla

_MODULE = """
import jax.numpy as jnp

def layer(x, w, b):
    return jnp.tanh(x @ w + b), jnp.sum(x, dtype=jnp.int32)

class Model:
    @staticmethod
    def predict(x):
        return {"y": x * 2}

not_a_function = 3
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A module `exported_model` in a directory of its own, made the working directory."""
    (tmp_path / "exported_model.py").write_text(textwrap.dedent(_MODULE))
    (tmp_path / "broken_model.py").write_text('raise RuntimeError("broken at import")\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield tmp_path
    sys.modules.pop("exported_model", None)
    sys.modules.pop("broken_model", None)


def test_export_writes_a_program_that_gives_jits_results(module: Path) -> None:
    result = run_cyxla(
        "export",
        "exported_model:layer",
        "--arg",
        "f32[16,64]",
        "--arg",
        "float32[64,64]",
        "--arg",
        "f32[64]",
        "-o",
        "model.cyxla",
    )
    assert result.returncode == 0, result.stderr
    assert "wrote model.cyxla: layer(float32[16,64], float32[64,64], float32[64]) on cpu" in (
        result.stdout
    )
    program = cx.load_program(module / "model.cyxla")
    assert [str(s) for s in program.inputs] == ["float32[16,64]", "float32[64,64]", "float32[64]"]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 64), dtype=np.float32)
    w = rng.standard_normal((64, 64), dtype=np.float32) / 8
    b = rng.standard_normal(64, dtype=np.float32)
    outputs = cx.compile_program(program)[0].run([x, w, b])
    import exported_model

    expected = jax.jit(exported_model.layer)(x, w, b)
    result_tree = jax.tree.unflatten(program.output_tree, outputs)
    assert isinstance(result_tree, tuple) and len(result_tree) == 2
    np.testing.assert_allclose(result_tree[0], expected[0], rtol=1e-6, atol=1e-6)
    assert result_tree[1].dtype == np.int32


def test_export_takes_attributes_and_scalar_specs(module: Path) -> None:
    assert cli(["export", "exported_model:Model.predict", "--arg", "bf16[]", "-o", "m.cyxla"]) == 0
    program = cx.load_program(module / "m.cyxla")
    assert [str(s) for s in program.inputs] == ["bfloat16[]"]
    assert program.output_tree == jax.tree.structure({"y": 0})


def test_export_prints_the_specs_the_file_takes(
    module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without 64-bit mode a float64 argument lowers to float32: the line says what the
    file takes, as load_program reads it, not what was asked for (it said float64)."""
    assert not jax.config.jax_enable_x64
    with pytest.warns(UserWarning, match="64-bit mode is off"):
        assert (
            cli(["export", "exported_model:Model.predict", "--arg", "f64[3]", "-o", "d.cyxla"]) == 0
        )
    assert "wrote d.cyxla: predict(float32[3]) on cpu" in capsys.readouterr().out
    assert [str(s) for s in cx.load_program(module / "d.cyxla").inputs] == ["float32[3]"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["exported_model"], "'exported_model' is not MODULE:FUNCTION"),
        (["exported_model:"], "is not MODULE:FUNCTION"),
        (["exported_model:layer", "--arg", "f33[2]"], "unknown dtype 'f33' in 'f33[2]'; known:"),
        (["exported_model:layer", "--arg", "f32(2)"], "'f32(2)' is not DTYPE[DIMS]"),
        (["exported_model:layer", "--arg", "f32[2,-1]"], "must be integers >= 0"),
        (["exported_model:layer", "--arg", "f32[2,1.5]"], "must be integers >= 0"),
    ],
)
def test_bad_arguments_are_refused_by_the_parser(
    module: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli(["export", *argv, "-o", "x.cyxla"])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
    assert not (module / "x.cyxla").exists()


@pytest.mark.parametrize(
    ("target", "code", "message"),
    [
        ("no_such_module:f", 2, "cannot import no_such_module: No module named 'no_such_module'"),
        ("broken_model:f", 2, "cannot import broken_model: RuntimeError('broken at import')"),
        ("exported_model:missing", 2, "the module exported_model has no attribute 'missing'"),
        ("exported_model:not_a_function", 2, "exported_model:not_a_function is not callable: 3"),
        ("exported_model:layer", 1, "exported_model:layer at float32[4]: "),
    ],
)
def test_bad_targets_are_refused_saying_why(
    module: Path, capsys: pytest.CaptureFixture[str], target: str, code: int, message: str
) -> None:
    assert cli(["export", target, "--arg", "f32[4]", "-o", "x.cyxla"]) == code
    assert message in capsys.readouterr().err
    assert not (module / "x.cyxla").exists()
