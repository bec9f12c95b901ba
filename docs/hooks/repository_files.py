"""MkDocs hook: a page shows a file of the repository outside docs/ by a paragraph that is
only a link to it, the link's text being the file's path from the repository's root:

    [`examples/standalone/run.c`](../../examples/standalone/run.c)

On the site that line becomes the file's contents as a code block titled with its path; on
a repository page it stays a link to the file. Each example so lives once, in the project
that builds and tests it, and no reader meets an include directive or a link out of the
site. tests/test_docs.py checks that such links name files that exist."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

# The whole line: [`path`](../path), the target climbing out of docs/ to the same path.
SHOWN_FILE = re.compile(r"^\[`([^`]+)`\]\(((?:\.\./)+)([^)#\s]+)\)$", re.MULTILINE)
# The code block's language, by file name first, then by suffix.
LANGUAGES = {
    "CMakeLists.txt": "cmake",
    "meson.build": "meson",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".py": "python",
    ".pyx": "cython",
    ".toml": "toml",
}


def _language(path: Path) -> str:
    language = LANGUAGES.get(path.name) or LANGUAGES.get(path.suffix)
    if language is None:
        raise PluginError(f"no code block language for {path.name}: add it to LANGUAGES")
    return language


def on_page_markdown(markdown: str, page: Any, config: Any, **_: Any) -> str:
    docs = Path(config["docs_dir"]).resolve()
    root = docs.parent
    page_directory = (docs / page.file.src_path).parent

    def show(match: re.Match[str]) -> str:
        path, climb, target = match.groups()
        file = (page_directory / (climb + target)).resolve()
        if target != path or file != root / path or not file.is_file():
            raise PluginError(f"{page.file.src_path}: [`{path}`] must link to that file")
        text = file.read_text()
        return f'```{_language(file)} title="{path}"\n{text.rstrip()}\n```'

    return SHOWN_FILE.sub(show, markdown)
