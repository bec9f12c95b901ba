"""The documentation site (mkdocs.yml, docs/): its Python examples run as written, its
native examples (the titled code blocks of the pages) build by the pages' own commands and
run, and its links into the repository exist."""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import cyxla as cx

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
# A Markdown link or image target: [text](target) with no scheme.
LINK = re.compile(r"\]\((?![a-z]+:|#)([^)\s]+)\)")
# A source file written out in a page: ```c title="native_c.c" (GitHub reads the
# language, the site shows the title); the tests write it under that name and build it.
SOURCE_BLOCK = re.compile(r'^```\w+ title="([^"/]+)"\n(.*?)^```$', re.DOTALL | re.MULTILINE)


def _site_hook() -> ModuleType:
    """docs/hooks/repository_files.py, the MkDocs hook that shows repository files."""
    spec = importlib.util.spec_from_file_location("repository_files", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = DOCS / "hooks" / "repository_files.py"
# A file of the repository outside docs/ that a page shows: the hook's own pattern.
SHOWN_FILE: re.Pattern[str] = _site_hook().SHOWN_FILE
BASH_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.DOTALL | re.MULTILINE)
NATIVE_GUIDE = DOCS / "guide" / "native.md"
# The pages whose sources the tests build, with the bash block of the page that names each.
BUILT_PAGES = (
    DOCS / "quickstart.md",
    NATIVE_GUIDE,
    DOCS / "guide" / "custom-calls.md",
    DOCS / "guide" / "aot.md",
)


def sources(page: Path) -> dict[str, str]:
    """The source files a page writes out, by name."""
    found = SOURCE_BLOCK.findall(page.read_text())
    assert len({name for name, _ in found}) == len(found), f"{page}: a source shown twice"
    return dict(found)


def python_blocks(page: Path) -> list[str]:
    return PYTHON_BLOCK.findall(page.read_text())


# Runs one page's blocks in order in one namespace, in a fresh interpreter (pages load a
# plugin and change JAX's settings); a failing block is named by its page and number.
_RUN_PAGE = """
import re, sys
from pathlib import Path
page = Path({page!r})
blocks = re.findall({pattern!r}, page.read_text(), re.DOTALL | re.MULTILINE)
namespace = {{"__name__": "__docs__"}}
for number, code in enumerate(blocks, 1):
    exec(compile(code, f"{{page}} (python block {{number}})", "exec"), namespace)
print(f"ran {{len(blocks)}} blocks")
"""


@pytest.fixture(scope="session")
def built_examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the pages' native examples, built by the pages' own commands
    (their bash blocks that name the source), with `python` being this interpreter."""
    directory = tmp_path_factory.mktemp("docs_examples")
    bin_directory = directory / "bin"
    bin_directory.mkdir()
    # A script, not a symlink: a link to a virtual environment's interpreter, called
    # through another path, no longer finds the environment's pyvenv.cfg.
    launcher = bin_directory / "python"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    launcher.chmod(0o755)
    environment = {**os.environ, "PATH": f"{bin_directory}{os.pathsep}{os.environ['PATH']}"}
    for page in BUILT_PAGES:
        commands = BASH_BLOCK.findall(page.read_text())
        for source, text in sources(page).items():
            assert not (directory / source).exists(), f"{source} is a source of two pages"
            (directory / source).write_text(text)
            (command,) = [c for c in commands if f" {source} " in c]
            result = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", command],
                capture_output=True,
                text=True,
                cwd=directory,
                env=environment,
                timeout=300,
            )
            assert result.returncode == 0, f"building {source}:\n{command}\n{result.stderr}"
    return directory


@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if python_blocks(p)],
    ids=lambda p: str(p.relative_to(DOCS)),
)
def test_page_python_blocks_run(page: Path, built_examples: Path) -> None:
    """A page's Python blocks, in order, in one namespace, in a fresh interpreter that
    runs where the pages' native examples were built (they import or load them)."""
    path = os.pathsep.join(filter(None, [str(built_examples), os.environ.get("PYTHONPATH")]))
    code = _RUN_PAGE.format(page=str(page), pattern=PYTHON_BLOCK.pattern)
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=built_examples,
        env={**os.environ, "PYTHONPATH": path},
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"ran {len(python_blocks(page))} blocks" in result.stdout


def test_pages_with_python_blocks_are_found() -> None:
    # The extraction sees the guides' examples: a change of fence style would skip them.
    assert len(python_blocks(DOCS / "guide" / "python.md")) >= 10
    assert any("import native_c\n" in block for block in python_blocks(NATIVE_GUIDE))
    assert any("import native_cpp\n" in block for block in python_blocks(NATIVE_GUIDE))
    assert any("import native_batch\n" in block for block in python_blocks(NATIVE_GUIDE))


def test_native_examples_are_found() -> None:
    """The extraction sees the pages' sources (a change of fence style would skip them),
    only the built pages have any, and the Cython example is the downstream package's
    (built by tests/test_downstream_package.py)."""
    assert list(sources(NATIVE_GUIDE)) == [
        "native_c.c",
        "native_cpp.cpp",
        "native_batch.cpp",
        "bound_c.c",
        "quad_callback.c",
    ]
    assert list(sources(DOCS / "guide" / "custom-calls.md")) == ["scale_add.cc"]
    assert list(sources(DOCS / "quickstart.md")) == ["quickstart.c"]
    for page in set(PAGES) - set(BUILT_PAGES):
        assert not sources(page), f"{page} shows sources that no test builds"
    shown = [match[0] for match in SHOWN_FILE.findall(NATIVE_GUIDE.read_text())]
    assert "examples/downstream/src/cyxla_downstream/cython_loop.pyx" in shown


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_links_into_the_repository_exist(page: Path) -> None:
    """Links resolve on a repository page, and a link out of docs/ is a shown file (the
    site has no page for it, so `mkdocs build --strict` refuses any other): its text
    names the file it links to, from the repository's root."""
    text = page.read_text()
    for target in LINK.findall(text):
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.exists(), f"{page.relative_to(ROOT)} links to missing {target}"
    for path, climb, target in SHOWN_FILE.findall(text):
        assert path == target, f"{page.relative_to(ROOT)}: [`{path}`] links to {target}"
        assert (page.parent / (climb + target)).resolve() == ROOT / path
        assert (ROOT / path).is_file(), f"{page.relative_to(ROOT)} shows missing {path}"


def test_no_page_holds_an_include_directive() -> None:
    """A repository page shows Markdown as it is: an include line would show as such."""
    for page in PAGES:
        assert "--8<--" not in page.read_text(), page


def test_every_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in PAGES:
        assert f" {page.relative_to(DOCS).as_posix()}\n" in nav, f"{page} is not in the nav"


def test_site_builds_strict(tmp_path: Path) -> None:
    """`mkdocs build --strict`: a broken reference, link or docstring fails."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    executables = (tmp_path / "api" / "executables" / "index.html").read_text()
    for documented in ("Executable.inputs", "Executable.outputs", "Executable.platform"):
        assert f'id="cyxla.{documented}"' in executables
    # Files of the repository that pages show (the hook) are on the site, under their path.
    standalone = (tmp_path / "guide" / "standalone" / "index.html").read_text()
    assert '<span class="filename">examples/standalone/run.c</span>' in standalone
    # Constructors of what cyxla makes are not the reader's to call.
    for page in (tmp_path / "api").rglob("*.html"):
        assert '.__init__"' not in page.read_text(), page


def test_public_methods_and_properties_have_docstrings() -> None:
    """What the reference shows of each public class says what it is."""
    missing = []
    for name in cx.__all__:
        cls = getattr(cx, name)
        if not inspect.isclass(cls) or not cls.__module__.startswith("cyxla"):
            continue
        for attribute, value in vars(cls).items():
            function = value.fget if isinstance(value, property) else value
            public = not attribute.startswith("_") and inspect.isfunction(function)
            if public and not function.__doc__:
                missing.append(f"{name}.{attribute}")
    assert not missing


def test_changelog_names_every_abi_version() -> None:
    """The changelog has a section per native API version, up to the header's."""
    header = (ROOT / "include" / "cyxla" / "cyxla.h").read_text()
    (current,) = re.findall(r"^#define CYXLA_ABI_VERSION (\d+)$", header, re.MULTILINE)
    changelog = (DOCS / "changelog.md").read_text()
    sections = re.findall(r"^## ABI version (\d+) ", changelog, re.MULTILINE)
    assert sections == [str(v) for v in range(int(current), 0, -1)]
    assert f"## Since ABI version {current}," in changelog
    version = (ROOT / "python" / "cyxla" / "_version.py").read_text()
    (package,) = re.findall(r'^__version__ = "([^"]+)"$', version, re.MULTILINE)
    assert f"`cyxla.__version__`, is {package}" in changelog


def test_home_page_lists_every_guide() -> None:
    """docs/index.md's "Where to go next" links every guide of the nav."""
    index = (DOCS / "index.md").read_text()
    listed = set(LINK.findall(index[index.index("## Where to go next") :]))
    nav = (ROOT / "mkdocs.yml").read_text()
    guides = nav[nav.index("  - Guides:\n") :].split("\n  - ")[0]
    wanted = set(re.findall(r": (\S+\.md)$", guides, re.MULTILINE))
    assert len(wanted) >= 7
    assert wanted <= listed, f"not listed: {sorted(wanted - listed)}"


def test_cpp_reference_lists_every_public_member() -> None:
    """docs/cpp-api.md has a section per class of cyxla.hpp that names each of its public
    members (constructors by the class's name), and no member the header lacks."""
    header = (ROOT / "include" / "cyxla" / "cyxla.hpp").read_text()
    page = (DOCS / "cpp-api.md").read_text()
    sections = dict(re.findall(r"^## `(\w+)(?:\(\))?`\n(.*?)(?=^## |\Z)", page, re.M | re.S))
    classes = re.findall(r"^class (\w+) [^\n]*\{\n(.*?)^\};", header, re.M | re.S)
    names = [name for name, _ in classes]
    assert names == ["Error", "Runtime", "HostArray", "Program", "BoundCall"]
    assert set(sections) == {"import", *names}
    for name, body in classes:
        public = body.split("\n private:")[0]
        # A declaration at the class's indentation: `  [type ](name)[<T>](`.
        declared = r"^  (?:[\w:<>&*][\w:<>&*, ]* )?(\w+)(?:<\w+>)?\("
        members = set(re.findall(declared, public, re.M))
        members -= {"operator"}
        listed = set(re.findall(r"^\| `(\w+)(?:<\w+>)?\(", sections[name], re.M))
        listed |= set(re.findall(r", `(\w+)\(", sections[name]))
        assert members == listed, f"{name}: header {sorted(members)}, page {sorted(listed)}"


def test_abi_versions_list_every_slot_they_added() -> None:
    """The version table of docs/native-api.md and the changelog's section of each ABI
    version name every function that version added to cyxla.h's table (its slots after
    the header's `/* Version N` comments)."""
    header = (ROOT / "include" / "cyxla" / "cyxla.h").read_text()
    table = re.search(r"^typedef struct cyxla_Api \{\n(.*?)^\} cyxla_Api;", header, re.M | re.S)
    assert table is not None
    added: dict[int, list[str]] = {1: []}
    for line in table.group(1).splitlines():
        if version := re.match(r"\s*/\* Version (\d+)", line):
            added.setdefault(int(version.group(1)), [])
        elif slot := re.search(r"\(\*(\w+)\)\(", line):
            added[max(added)].append(f"cyxla_{slot.group(1)}")
    assert len(added[1]) == 5 and max(added) >= 2
    native_api = (DOCS / "native-api.md").read_text()
    changelog = (DOCS / "changelog.md").read_text()
    for version, functions in added.items():
        (row,) = re.findall(rf"^\| {version} \| .*$", native_api, re.M)
        section = changelog.split(f"## ABI version {version} ")[1].split("\n## ")[0]
        for function in functions if version > 1 else []:
            assert f"`{function}`" in row, f"native-api.md's row {version} lacks {function}"
        for function in functions:
            assert f"`{function}`" in section, f"changelog's ABI {version} lacks {function}"
