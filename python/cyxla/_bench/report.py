"""The benchmark's results as JSON-ready data, and the table printed from them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cyxla._bench.paths import BOUND_PY, FLOOR, JIT
from cyxla._bench.rounds import spread

__all__ = ["PHASES", "print_table", "program_report"]

#: The steps of the floor's loop that `pjrt_floor_phases_ns` times.
PHASES = ("buffers_in", "execute", "await", "outputs_out", "destroy")


def _ratio(values: Sequence[float], references: Sequence[float] | None) -> dict[str, Any]:
    """The median of the per-round ratios `values / references` and their quartiles."""
    if references is None:
        return {"median": None, "quartiles": None}
    s = spread([v / r for v, r in zip(values, references, strict=True)])
    return {"median": round(s.median, 4), "quartiles": [round(s.low, 4), round(s.high, 4)]}


def program_report(
    description: str,
    labels: Mapping[str, str],
    evaluations: Mapping[str, int],
    samples: Mapping[str, Sequence[float]],
    phases: Sequence[float],
    tails: Mapping[str, Sequence[tuple[float, float, float]]] | None = None,
) -> dict[str, Any]:
    """`programs/<program>` of the JSON: per path its median nanoseconds per evaluation
    and its ratios to the floor, to jax.jit and to a bound call from Python (medians of
    per-round ratios, with their interquartile ranges), what two threads on one
    executable give over one, and for the paths in `tails` (per round: the 99th and
    99.9th percentiles and the maximum of its calls) their tail latency."""
    floor, jit, bound_py = samples[FLOOR], samples.get(JIT), samples.get(BOUND_PY)
    report: dict[str, Any] = {"description": description}
    for name, values in samples.items():
        time = spread(values)
        to_floor, to_jit = _ratio(values, floor), _ratio(values, jit)
        to_bound_py = _ratio(values, bound_py)
        report[name] = {
            "label": labels[name],
            "median_ns": round(time.median, 1),
            "quartiles_ns": [round(time.low, 1), round(time.high, 1)],
            "evaluations_per_call": evaluations[name],
            "ratio_to_pjrt_floor": to_floor["median"],
            "ratio_to_pjrt_floor_quartiles": to_floor["quartiles"],
            "ratio_to_jax_jit": to_jit["median"],
            "ratio_to_jax_jit_quartiles": to_jit["quartiles"],
            "ratio_to_bound_py": to_bound_py["median"],
            "ratio_to_bound_py_quartiles": to_bound_py["quartiles"],
        }
        if tails and tails.get(name):
            report[name]["tail_ns"] = _tail(tails[name])
    # Calls per second of N threads over one: the inverse of their time per call.
    speedup = _ratio(samples["native"], samples["threads"]) if "threads" in samples else None
    report["threads_speedup"] = speedup["median"] if speedup else None
    report["threads_speedup_quartiles"] = speedup["quartiles"] if speedup else None
    report["pjrt_floor_phases_ns"] = {
        name: round(ns, 1) for name, ns in zip(PHASES, phases, strict=True)
    }
    return report


def _tail(per_round: Sequence[tuple[float, float, float]]) -> dict[str, Any]:
    """The medians over rounds of each round's p99, p99.9 and maximum, and the largest
    maximum of all rounds."""
    p99, p999, most = (spread([r[k] for r in per_round]).median for k in range(3))
    return {
        "p99": round(p99, 1),
        "p99_9": round(p999, 1),
        "max": round(most, 1),
        "max_of_all_rounds": round(max(r[2] for r in per_round), 1),
    }


def _time(ns: float) -> str:
    return f"{ns:8.0f} ns" if ns < 1000 else f"{ns / 1e3:8.2f} us"


def _ratio_text(median: float | None, quartiles: Sequence[float] | None) -> str:
    if median is None or quartiles is None:
        return "-"
    low, high = quartiles
    return f"{_number(median)}x ({_number(low)}-{_number(high)})"


def _number(ratio: float) -> str:
    """Two decimals, or three significant digits below 0.1 (batches, memcpy)."""
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"


def print_table(report: Mapping[str, Any]) -> None:
    """Prints `report` (what the JSON holds) as one table per program."""
    clock = "CPU time of the process" if report["clock"] == "cpu" else "wall time"
    print(
        f"{report['rounds']} interleaved rounds, {clock}; medians per call (per evaluation for "
        "batches); ratios are medians of per-round ratios, (first-third quartile)"
    )
    for key, program in report["programs"].items():
        print(f"\n{key}: {program['description']}")
        print(f"  {'path':16} {'median':>11}  {'vs floor':22} {'vs jax_jit':22} what")
        for name, row in program.items():
            if not isinstance(row, dict) or "median_ns" not in row:
                continue
            floor = _ratio_text(row["ratio_to_pjrt_floor"], row["ratio_to_pjrt_floor_quartiles"])
            jit = _ratio_text(row["ratio_to_jax_jit"], row["ratio_to_jax_jit_quartiles"])
            print(f"  {name:16} {_time(row['median_ns'])}  {floor:22} {jit:22} {row['label']}")
        python = [
            f"{name} {_ratio_text(row['ratio_to_bound_py'], row['ratio_to_bound_py_quartiles'])}"
            for name, row in program.items()
            if isinstance(row, dict) and name.startswith("run") and row.get("ratio_to_bound_py")
        ]
        if python:
            print(f"  Python's calls over a bound call from Python: {', '.join(python)}")
        for name, row in program.items():
            if isinstance(row, dict) and "tail_ns" in row:
                tail = row["tail_ns"]
                print(
                    f"  {name} per call, medians over rounds of each round's: p99 "
                    f"{_time(tail['p99']).strip()}, p99.9 {_time(tail['p99_9']).strip()}, max "
                    f"{_time(tail['max']).strip()} (largest of all rounds "
                    f"{_time(tail['max_of_all_rounds']).strip()})"
                )
        if program["threads_speedup"] is not None:
            low, high = program["threads_speedup_quartiles"]
            print(
                f"  calls per second of {report['threads']} threads on one executable over "
                f"one: {program['threads_speedup']:.2f}x ({low:.2f}-{high:.2f})"
            )
        phases = ", ".join(f"{k} {v / 1e3:.2f}" for k, v in program["pjrt_floor_phases_ns"].items())
        print(f"  the floor's steps, us per call: {phases}")
