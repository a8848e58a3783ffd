"""The built-in demo cluster and ``draspeed demo``: every pending claim on every node."""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources
from typing import TYPE_CHECKING, Any, TextIO

import yaml

from draspeed.jobs import Engine, allocate_objects

if TYPE_CHECKING:
    from draspeed.load import Objects


def demo_cluster_text() -> str:
    """The demo cluster as YAML (what ``kubectl get -o yaml`` would print)."""
    return resources.files(__package__).joinpath("cluster.yaml").read_text(encoding="utf-8")


def demo_objects() -> Objects:
    from draspeed.load import load

    return load(demo_cluster_text())


def demo_rows(engine: Engine = "fast") -> list[dict[str, Any]]:
    """One row per (pending claim, node): fits or not, devices, search steps, time."""
    objects = demo_objects()
    allocated = [c for c in objects.claims if c.status.allocation is not None]
    pending = [c for c in objects.claims if c.status.allocation is None]
    rows = []
    for claim in pending:
        one_pod = replace(objects, claims=[*allocated, claim])
        for node in objects.nodes:
            outcome = allocate_objects(one_pod, node.name, engine=engine)
            devices = []
            for result in outcome.results or []:
                devices += [f"{r.pool}/{r.device}" for r in result.devices.results]
            rows.append(
                {
                    "claim": claim.key,
                    "node": node.name,
                    "fits": outcome.fits,
                    "devices": devices,
                    "error": outcome.error,
                    "work": outcome.work,
                    "microseconds": round(outcome.seconds * 1e6, 1),
                }
            )
    return rows


def run_demo(output: str, engine: Engine, out: TextIO, err: TextIO) -> int:
    rows = demo_rows(engine)
    if output == "json":
        json.dump(rows, out, indent=2)
        out.write("\n")
        return 0
    if output == "yaml":
        yaml.safe_dump(rows, out, sort_keys=False)
        return 0
    table = [["CLAIM", "NODE", "FITS", "DEVICES", "STEPS", "TIME(us)"]]
    for r in rows:
        what = ", ".join(r["devices"]) if r["fits"] else (r["error"] or "-")
        table.append(
            [
                r["claim"],
                r["node"],
                "yes" if r["fits"] else "no",
                what,
                str(r["work"]),
                f"{r['microseconds']:.0f}",
            ]
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")
    out.write(
        f'\nengine: {engine}; the cluster: `python -c "import draspeed.demo as d; '
        f'print(d.demo_cluster_text())"`\n'
    )
    return 0
