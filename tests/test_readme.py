"""The README's Python examples, run as they are written."""

from __future__ import annotations

import re
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
