"""The C++ folders are layers: an `#include "folder/file"` in src/ or include/ names its
own folder or a layer below it, never one above or beside it, so the folders form a graph
without loops. The order is declared once, in LAYERS; README.md's table of layers says it
(checked here too)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The folders from the bottom up; folders of one layer include neither each other.
#: `cyxla` is include/cyxla/, the public C and C++ headers; the others are under src/.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cyxla",),  # the native API's declarations, which everything may use
    ("common",),  # errors, checked arithmetic, byte utilities (JSON, SHA-256, CRC-32, UTF-8)
    ("compiled",),  # readers of a plugin's compiled form (protobuf, thunks, ELF), the verdict
    ("kernels",),  # the kernel runner: kernels loaded into this process, the thunks run
    ("pjrt",),  # the PJRT binding
    ("lapack",),  # cyxla's XLA FFI handlers of jaxlib's LAPACK targets, LAPACK found at run time
    ("runtime",),  # the core: client, executables, the hot path
    ("program",),  # the program file
    ("cache",),  # the disk cache and the executable's key
    ("loading",),  # load-or-compile, for every door
    ("abi",),  # the C API
    ("python", "benchmark"),  # the extension modules
)

_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
_SOURCES = {".h", ".hpp", ".c", ".cpp"}


def folders_of(root: Path) -> dict[str, Path]:
    """Each C++ folder of the tree at `root` by the name its includes use."""
    found = {p.name: p for p in sorted((root / "src").iterdir()) if p.is_dir()}
    for public in sorted((root / "include").iterdir()):
        if public.is_dir():
            found[public.name] = public
    return found


def upward_includes(
    root: Path, layers: tuple[tuple[str, ...], ...] = LAYERS
) -> list[tuple[str, str]]:
    """(file, included header) of every include under `root` that names a folder above
    or beside its own; an include of a folder that no layer declares counts too."""
    level = {folder: i for i, layer in enumerate(layers) for folder in layer}
    folders = folders_of(root)
    wrong = []
    for folder, path in folders.items():
        for source in sorted(path.rglob("*")):
            if source.suffix not in _SOURCES:
                continue
            for header in _INCLUDE.findall(source.read_text(encoding="utf-8")):
                target = header.split("/")[0]
                if "/" not in header or (target not in folders and target not in level):
                    continue  # a system or third-party header
                if target == folder:
                    continue
                if target not in level or folder not in level or level[target] >= level[folder]:
                    wrong.append((str(source.relative_to(root)), header))
    return wrong


def test_every_folder_is_a_declared_layer() -> None:
    declared = [folder for layer in LAYERS for folder in layer]
    assert len(declared) == len(set(declared))
    assert sorted(folders_of(ROOT)) == sorted(declared)


def test_includes_point_down() -> None:
    assert upward_includes(ROOT) == []


@pytest.mark.parametrize(
    ("folder", "header"),
    [
        ("common", "cache/entry.hpp"),  # upward
        ("program", "cache/store.hpp"),  # upward: the loop program -> cache -> program
        ("python", "benchmark/module.hpp"),  # beside, on the same layer
        ("loading", "tools/unknown.hpp"),  # a folder no layer declares
    ],
)
def test_the_check_sees_a_planted_include(tmp_path: Path, folder: str, header: str) -> None:
    (tmp_path / "include" / "cyxla").mkdir(parents=True)
    for declared in ("common", "program", "cache", "python", "benchmark", "loading", "tools"):
        (tmp_path / "src" / declared).mkdir(parents=True)
    source = tmp_path / "src" / folder / "planted.cpp"
    source.write_text(f'#include "{folder}/own.hpp"\n#include <vector>\n#include "{header}"\n')
    # "tools" is a folder of the tree that LAYERS leaves out: only its include is wrong.
    assert upward_includes(tmp_path) == [(f"src/{folder}/planted.cpp", header)]


def test_the_readme_table_of_layers_says_the_order() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### Layers", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    named = [tuple(re.findall(r"`(?:src|include)/(\w+)/`", row)) for row in rows[1:]]
    assert tuple(named) == LAYERS
