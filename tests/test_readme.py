"""The README's Python examples, run as they are written."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
MARKED_BLOCK = re.compile(r"<!-- name: (\w+) -->\n```python\n(.*?)```", re.DOTALL)


def blocks(name: str) -> list[str]:
    return [code for block, code in MARKED_BLOCK.findall(README.read_text()) if block == name]


def test_readme_examples_run() -> None:
    examples = blocks("test_readme")
    assert len(examples) == 3  # the example, its Cholesky example, bound calls and batches
    namespace: dict[str, object] = {}
    for code in examples:  # later examples use the names of earlier ones, as in the README
        exec(compile(code, str(README), "exec"), namespace)
    np = namespace["np"]
    result = namespace["result"]
    np.testing.assert_allclose(result, np.sin([0.0, 1.0, 2.0]) * 2, rtol=1e-6)  # type: ignore[attr-defined]


def test_extras_tables_name_the_packages_pyproject_installs() -> None:
    """README and docs/installation.md each have a table of the platform extras; both name
    every package that pyproject.toml's extra installs (its one home), so that neither
    can name another (they once named different CUDA packages)."""
    root = README.parent
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pages = {page: page.read_text() for page in (README, root / "docs" / "installation.md")}
    for extra in ("cpu", "cuda12", "cuda13", "rocm7", "tpu"):
        # A requirement's name: what comes before its extras and version range.
        packages = [re.split(r"[\[<>=!~; ]", requirement)[0] for requirement in extras[extra]]
        for page, text in pages.items():
            (row,) = re.findall(rf"^\| (?:`\w+`, )*`{extra}`(?:, `\w+`)* \|.*$", text, re.M)
            for package in packages:
                assert f"`{package}`" in row, f"{page.name}: the {extra} row lacks {package}"


def test_every_mention_of_the_cache_default_puts_xdg_first() -> None:
    """Where README, the docs or a docstring give the disk cache's default directory, they
    give `$XDG_CACHE_HOME/cyxla` before `~/.cache/cyxla`, as the core chooses (they once
    gave `~/.cache/cyxla` alone)."""
    root = README.parent
    texts = [README, *(root / "docs").rglob("*.md"), *(root / "python" / "cyxla").rglob("*.py")]
    mentions = 0
    for path in texts:
        text = " ".join(path.read_text().split())  # one line: mentions wrap
        for match in re.finditer(re.escape("~/.cache/cyxla"), text):
            mentions += 1
            before = text[max(0, match.start() - 40) : match.start()]
            assert "$XDG_CACHE_HOME/cyxla" in before, f"{path}: ...{before}~/.cache/cyxla"
    assert mentions >= 3
