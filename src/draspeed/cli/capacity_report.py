"""Printing ``draspeed capacity``'s reports: tables, or the JSON/YAML document, and the curve."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

from draspeed.cli.output import emit, emit_names, table_width
from draspeed.cli.render import format_table

if TYPE_CHECKING:
    from draspeed.analysis.capacity import CapacityReport
    from draspeed.analysis.whatif import WhatIfReport


def print_result(
    result: CapacityReport | WhatIfReport,
    curve: tuple[list[int], list[int]] | None,
    args: argparse.Namespace,
    out: TextIO,
) -> None:
    from draspeed.analysis.whatif import WhatIfReport

    output = args.output
    if output.format == "name":
        # Nodes where pods of the shapes still fit, as kubectl names them.
        final = result.after if isinstance(result, WhatIfReport) else result
        emit_names((f"node/{n.node}" for n in final.fit.nodes if n.total_pods), out)
        return
    if output.is_document:
        doc = (
            result.to_dict()
            if isinstance(result, WhatIfReport)
            else result.to_dict(placements=args.placements)
        )
        if isinstance(result, WhatIfReport) and args.placements:
            doc["before"] = result.before.to_dict(placements=True)
            doc["after"] = result.after.to_dict(placements=True)
        if curve is not None:
            doc["curve"] = [{"nodesAdded": a, "pods": p} for a, p in zip(*curve, strict=True)]
        emit(doc, output, out)
        return
    width = table_width(out, output)
    if isinstance(result, WhatIfReport):
        out.write("Before\n======\n")
        _print_report(result.before, out, width)
        out.write("\nAfter: " + "; ".join(result.changes) + "\n" + "=" * 6 + "\n")
        _print_report(result.after, out, width)
        delta = result.delta()
        out.write("\nChange\n======\n")
        out.write(
            f"pods placed: {delta['placed']:+d}  ("
            + ", ".join(f"{k}: {v:+d}" for k, v in delta["placedByShape"].items())
            + ")\n"
        )
        out.write(f"free whole devices: {delta['freeWholeDevices']:+d}\n")
        if delta["freeByProfile"]:
            out.write(
                "free placements: "
                + ", ".join(f"{k}: {v:+d}" for k, v in delta["freeByProfile"].items())
                + "\n"
            )
        out.write(
            "devices: " + ", ".join(f"{k} {v:+d}" for k, v in delta["devices"].items()) + "\n"
        )
    else:
        _print_report(result, out, width)
    if curve is not None:
        out.write("\nNODES ADDED   PODS\n")
        for a, p in zip(*curve, strict=True):
            out.write(f"{a:<13} {p}\n")


def _print_report(report: CapacityReport, out: TextIO, width: int | None) -> None:
    fit = report.fit
    shapes = ", ".join(f"{k}: {v}" for k, v in fit.placed_by_shape.items())
    out.write(
        f"{fit.placed} pods fit ({shapes}); strategy {fit.strategy}, stopped: "
        f"{fit.stopped}; {fit.calls} allocate calls, {fit.work} search steps, "
        f"{fit.seconds:.2f}s\n\n"
    )
    rows = [["NODE", "PODS", "DEVICES IN USE", "FREE", "STRANDED", "FIRST FAILURE"]]
    for n in fit.nodes:
        stranded = ", ".join(f"{k}={v}" for k, v in n.usage.stranded.items()) or "-"
        failure = "-"
        if n.first_failure is not None:
            f = n.first_failure
            failure = f"{f.shape}: {f.reason or f.status}"
        d = n.usage.devices
        rows.append(
            [n.node, str(n.total_pods), f"{d.in_use}/{d.total}", str(d.free), stranded, failure]
        )
    out.write(format_table(rows, max_width=width))
    frag = report.fragmentation
    c = frag.cluster
    d = c.usage.devices
    out.write("\nFragmentation (before placing)\n")
    out.write(
        f"  devices: {d.total} total, {d.in_use} in use, {d.cordoned} cordoned, "
        f"{d.blocked} blocked by counters, {d.free} free\n"
    )
    out.write(f"  free whole devices: {c.free_whole_devices}\n")
    if c.free_by_profile:
        out.write(
            "  free placements per profile: "
            + ", ".join(f"{k}={v}" for k, v in c.free_by_profile.items())
            + "\n"
        )
    stranded = ", ".join(f"{k}={v}" for k, v in c.usage.stranded.items())
    out.write(f"  stranded counters: {stranded or 'none'}\n")
    for pool, why in c.usage.unusable_pools.items():
        out.write(f"  pool {pool} is skipped by the allocator: {why}\n")
    rows = [["CLASS", "DEVICES", "IN USE", "FREE", "UTILISATION"]]
    for name, counts in c.classes.items():
        rows.append(
            [
                name,
                str(counts.total),
                str(counts.in_use),
                str(counts.free),
                f"{100 * c.utilisation(name):.1f}%",
            ]
        )
    out.write("\n")
    out.write("".join(f"  {line}\n" for line in format_table(rows).splitlines()))
    for name, error in frag.class_errors.items():
        out.write(f"  class {name}: {error}\n")
