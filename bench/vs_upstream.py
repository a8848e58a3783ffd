"""The table of issue #13 from a ``--benchmark-json`` file of the ``vs-upstream`` group.

    pytest bench -k vs_upstream --benchmark-only --benchmark-json=vs.json
    python -m bench.vs_upstream vs.json

One row per workload: upstream's cycle (the median of the upstream runs made next to the
benchmarks of the pod's claim, and the range of those runs' medians), draspeed's medians
(cold, first loop on a fresh snapshot, warm, new pod of the same shape, new claim shape,
per-node loop), each ratio upstream / draspeed as measured next to it (the new claim
shape's against upstream's cycle for that claim), the per-node times of the loop, the
work counter and the nodes that fit (one figure when both engines agree,
``upstream ≠ draspeed`` when not).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

GROUP = "vs-upstream"
MODES = ("cold", "first-loop", "warm", "new-pod-same-shape", "new-claim-shape", "per-node-loop")
HEADER = (
    "workload",
    "nodes",
    "devices",
    "upstream cycle",
    "upstream runs",
    "cold",
    "first loop",
    "warm",
    "new pod",
    "new shape",
    "loop",
    "cold ×",
    "first loop ×",
    "warm ×",
    "new pod ×",
    "new shape ×",
    "loop ×",
    "per node: upstream / loop",
    "work",
    "fit",
)


def duration(ms: float | None) -> str:
    """``7.7 ms``, ``67 µs``, ``2.55 s``: three significant digits."""
    if ms is None:
        return "-"
    for unit, scale in (("s", 1e3), ("ms", 1.0), ("µs", 1e-3)):
        if ms >= scale:
            return f"{ms / scale:.3g} {unit}"
    return f"{ms * 1e6:.3g} ns"


def ratio(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}×" if value < 100 else f"{value:,.0f}×"


def rows(report: dict[str, Any]) -> list[list[str]]:
    """One row per workload, in the order the benchmarks ran."""
    by_workload: dict[str, dict[str, dict[str, Any]]] = {}
    for bench in report.get("benchmarks", []):
        info = bench.get("extra_info", {})
        if bench.get("group") != GROUP or "workload" not in info:
            continue
        by_workload.setdefault(info["workload"], {})[info["mode"]] = info
    table = []
    for modes in by_workload.values():
        first = next(iter(modes.values()))
        runs = [
            run
            for mode, info in modes.items()
            if mode != "new-claim-shape"  # upstream answered another claim there
            for run in info["upstream_cycle_ms_runs"]
        ]
        upstream = statistics.median(runs)
        works = {(i["work_upstream"], i["work_draspeed"]) for i in modes.values()}
        work = ", ".join(f"{u:,}" if u == d else f"{u:,} ≠ {d:,}" for u, d in sorted(works))
        fits = {(i["suitable_upstream"], i["suitable_draspeed"]) for i in modes.values()}
        fit = ", ".join(f"{u:,}" if u == d else f"{u:,} ≠ {d:,}" for u, d in sorted(fits))
        loop = modes.get("per-node-loop", {})
        nodes = first["nodes"]
        per_node = (
            f"{duration(upstream / nodes)} / {duration(loop['draspeed_ms'] / nodes)}"
            if "draspeed_ms" in loop
            else "-"
        )
        table.append(
            [
                f"{first['workload']}: {first['description']}",
                f"{first['nodes']:,}",
                f"{first['devices']:,}",
                duration(upstream),
                f"{duration(min(runs))} – {duration(max(runs))}",
                *(duration(modes.get(m, {}).get("draspeed_ms")) for m in MODES),
                *(ratio(modes.get(m, {}).get("ratio")) for m in MODES),
                per_node,
                work,
                fit,
            ]
        )
    return table


def markdown(report: dict[str, Any]) -> str:
    """The table as Markdown, with the load averages seen during the run under it."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row) + " |" for row in rows(report)]
    loads = [
        b["extra_info"]["loadavg_1m"]
        for b in report.get("benchmarks", [])
        if b.get("group") == GROUP and "loadavg_1m" in b.get("extra_info", {})
    ]
    if loads:
        lines.append("")
        lines.append(
            f"1-minute load average during the run: {min(loads):.2f} to {max(loads):.2f} "
            f"(median {statistics.median(loads):.2f}); ratios are measured benchmark by "
            "benchmark, upstream right before and after draspeed."
        )
    machine = report.get("machine_info", {})
    if machine:
        lines.append(
            f"Machine: {machine.get('cpu', {}).get('brand_raw', machine.get('processor', '?'))}, "
            f"Python {machine.get('python_version', '?')}."
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m bench.vs_upstream BENCHMARK.json", file=sys.stderr)
        return 2
    try:
        report = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(f"{args[0]}: not a --benchmark-json file: {exc}", file=sys.stderr)
        return 2
    if not isinstance(report, dict) or not rows(report):
        print(f"{args[0]}: no {GROUP} benchmarks in this file", file=sys.stderr)
        return 1
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
