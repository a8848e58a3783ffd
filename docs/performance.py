"""Write docs/performance.json, the performance page's table, from a benchmark run.

    pytest bench --benchmark-only -k "test_allocate_per_node[ or test_no_solution" \
        --benchmark-json=bench.json
    python docs/performance.py bench.json        # rewrites docs/performance.json

One row per scenario of ``draspeed.generate.scenarios`` (the ``allocate-per-node``
group) and per "does not fit" case of the ``pathological`` group: upstream's time for
the same call where the project measured it (spec §9: one core, median, the
experimental variant, compiled selectors cached), next to draspeed's medians from the
run. ``python docs/performance.py --known`` writes the file without a run: the
upstream figures and empty draspeed columns.
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path
from typing import Any

from draspeed.generate.scenarios import SCENARIOS, identical_devices

HERE = Path(__file__).resolve().parent
# Upstream's time for n identical devices asked n + 1 (2^n search steps), spec §9.
UPSTREAM_NO_SOLUTION_US = {12: 9_800.0, 16: 113_000.0, 20: 2_300_000.0}
MODES = ("warm", "scheduler", "cold")
COLUMNS = [
    {"key": "case", "title": "case"},
    {"key": "shape", "title": "what one call decides"},
    {"key": "upstream_us", "title": "upstream (µs)"},
    *({"key": f"{mode}_us", "title": f"draspeed {mode} (µs)"} for mode in MODES),
    {"key": "speedup", "title": "upstream ÷ draspeed warm"},
]


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {
            "group": "allocate-per-node",
            "case": name,
            "shape": scenario.description,
            "upstream_us": scenario.upstream_us,
        }
        for name, scenario in SCENARIOS.items()
    ]
    for n, upstream in UPSTREAM_NO_SOLUTION_US.items():
        scenario = identical_devices(n)
        rows.append(
            {
                "group": "pathological",
                "case": scenario.name,
                "shape": scenario.description,
                "upstream_us": upstream,
            }
        )
    for row in rows:
        row.update({f"{mode}_us": None for mode in MODES}, speedup=None)
    return rows


def _fill(rows: list[dict[str, Any]], bench: dict[str, Any]) -> str:
    """draspeed's medians (µs) from a pytest-benchmark JSON file; its machine."""
    by_case = {row["case"]: row for row in rows}
    for result in bench["benchmarks"]:
        info = result.get("extra_info", {})
        row = by_case.get(info.get("scenario"))
        if row is None or info.get("engine", "fast") != "fast":
            continue
        mode = info.get("mode", "warm")  # the pathological group times warm calls
        if mode in MODES and row["group"] == result.get("group"):
            row[f"{mode}_us"] = round(result["stats"]["median"] * 1e6, 1)
    for row in rows:
        if row["upstream_us"] and row["warm_us"]:
            row["speedup"] = f"{row['upstream_us'] / row['warm_us']:,.1f}x"
    machine = bench.get("machine_info", {})
    return f"{machine.get('cpu', {}).get('brand_raw', 'unknown CPU')}, {machine.get('node', '')}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench_json", nargs="?", help="pytest --benchmark-json output")
    parser.add_argument("--known", action="store_true", help="no run: upstream figures only")
    parser.add_argument("-o", "--output", default=str(HERE / "performance.json"))
    args = parser.parse_args(argv)
    if (args.bench_json is None) != args.known:
        parser.error("give a benchmark JSON file, or --known")
    rows = _rows()
    if args.known:
        source = (
            "Upstream: the project's measurements of kubernetes/dynamic-resource-allocation "
            "3d03671 (experimental variant) on this kind of machine. draspeed: not measured "
            "for this file yet; python docs/performance.py bench.json fills these columns."
        )
    else:
        bench = json.loads(Path(args.bench_json).read_text(encoding="utf-8"))
        machine = _fill(rows, bench)
        source = (
            "Upstream: the project's measurements of kubernetes/dynamic-resource-allocation "
            f"3d03671 (experimental variant). draspeed: medians of {args.bench_json} on "
            f"{machine}."
        )
    data = {
        "title": "One allocate call, upstream and draspeed side by side",
        "date": datetime.date.today().isoformat(),
        "source": source,
        "columns": COLUMNS,
        "rows": rows,
    }
    Path(args.output).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
