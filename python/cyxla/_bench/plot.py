"""`bench --plot FILE`: a bar chart of each path's ratio to the floor, per program, drawn
with matplotlib (an optional dependency: the `plot` extra)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["MissingPlotDependency", "draw", "pyplot", "save_plot"]


class MissingPlotDependency(ImportError):
    """matplotlib is not installed."""


def pyplot() -> ModuleType:
    """matplotlib's pyplot on a backend that needs no display, or MissingPlotDependency
    saying how to install it."""
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ImportError as error:
        raise MissingPlotDependency(
            "bench --plot draws with matplotlib, which is not installed: "
            "pip install 'cyxla[plot]' (or pip install matplotlib)"
        ) from error
    matplotlib.use("Agg")
    return importlib.import_module("matplotlib.pyplot")


def save_plot(report: Mapping[str, Any], file: Path) -> None:
    """Draws the ratio to the floor of every path of every program into `file` (its
    format from its suffix: .png, .svg, .pdf), with each ratio's interquartile range."""
    figure = draw(report)
    # The legend stands beside the axes: the file's bounds are taken around everything.
    figure.savefig(file, dpi=150, bbox_inches="tight")
    pyplot().close(figure)


def draw(report: Mapping[str, Any]) -> Any:
    """The figure that `save_plot` saves (a matplotlib Figure)."""
    plt = pyplot()
    programs = report["programs"]
    paths = list(dict.fromkeys(p for rows in programs.values() for p in rows if _is_path(rows, p)))
    width = 0.8 / max(1, len(paths))
    figure, axes = plt.subplots(figsize=(2.2 * len(programs) + 5, 4.5))
    colors = plt.get_cmap("tab20").colors  # one each for up to 20 paths
    for i, name in enumerate(paths):
        xs, heights, errors = [], [], ([], [])
        for x, rows in enumerate(programs.values()):
            if name not in rows:
                continue
            row = rows[name]
            low, high = row["ratio_to_pjrt_floor_quartiles"]
            xs.append(x - 0.4 + (i + 0.5) * width)
            heights.append(row["ratio_to_pjrt_floor"])
            errors[0].append(max(0.0, row["ratio_to_pjrt_floor"] - low))
            errors[1].append(max(0.0, high - row["ratio_to_pjrt_floor"]))
        axes.bar(
            xs, heights, width, yerr=errors, capsize=2, label=name, color=colors[i % len(colors)]
        )
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_yscale("log")
    axes.set_xticks(range(len(programs)), list(programs))
    axes.set_ylabel("time per call / naive PJRT loop (lower is faster)")
    # Two lines, so that the title of one program's narrow figure fits it.
    axes.set_title(
        f"python -m cyxla bench\nmedians of {report['rounds']} interleaved rounds "
        f"(bars: interquartile range)"
    )
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    return figure


def _is_path(rows: Mapping[str, Any], name: str) -> bool:
    return isinstance(rows[name], dict) and "ratio_to_pjrt_floor" in rows[name]
