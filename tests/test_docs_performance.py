"""docs/performance.json, the performance page's table, and the script that writes it."""

from __future__ import annotations

import datetime
import json
import runpy
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _script() -> dict[str, Any]:
    return runpy.run_path(str(DOCS / "performance.py"))


def test_shipped_file_is_complete_and_dated() -> None:
    data = json.loads((DOCS / "performance.json").read_text(encoding="utf-8"))
    datetime.date.fromisoformat(data["date"])
    keys = [c["key"] for c in data["columns"]]
    assert keys[:3] == ["case", "shape", "upstream_us"]
    assert all(set(keys) <= set(row) for row in data["rows"])
    upstream = {row["case"]: row["upstream_us"] for row in data["rows"]}
    assert upstream["sp-500x10-one-device"] == 11.8  # spec §9, measured on upstream
    assert upstream["identical-20-ask-21"] == 2_300_000.0


def test_a_benchmark_run_fills_draspeed_columns(tmp_path: Path) -> None:
    def result(group: str, scenario: str, mode: str, median: float) -> dict[str, Any]:
        info = {"scenario": scenario, "engine": "fast", "mode": mode}
        return {"group": group, "extra_info": info, "stats": {"median": median}}

    bench = {
        "machine_info": {"node": "ci", "cpu": {"brand_raw": "Some CPU"}},
        "benchmarks": [
            result("allocate-per-node", "sp-500x10-one-device", "warm", 2.36e-6),
            result("allocate-per-node", "sp-500x10-one-device", "cold", 40e-6),
            {**result("allocate-per-node", "mig-1g10gb", "cold", 1.0), "extra_info": {}},
            {
                "group": "allocate-per-node",
                "extra_info": {"scenario": "mig-1g10gb", "engine": "reference", "mode": "cold"},
                "stats": {"median": 1.0},
            },
        ],
    }
    source, out = tmp_path / "bench.json", tmp_path / "performance.json"
    source.write_text(json.dumps(bench))
    assert _script()["main"]([str(source), "-o", str(out)]) == 0
    rows = {row["case"]: row for row in json.loads(out.read_text())["rows"]}
    one = rows["sp-500x10-one-device"]
    assert (one["warm_us"], one["cold_us"], one["scheduler_us"]) == (2.4, 40.0, None)
    assert one["speedup"] == "4.9x"
    assert rows["mig-1g10gb"]["cold_us"] is None  # the reference engine is not draspeed's row
    assert "Some CPU" in json.loads(out.read_text())["source"]
