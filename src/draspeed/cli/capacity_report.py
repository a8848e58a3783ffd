"""Printing ``draspeed capacity``'s reports: tables, or the JSON/YAML document, and the curve."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

from draspeed.cli.output import emit, emit_names, table_width
from draspeed.cli.render import format_table

if TYPE_CHECKING:
    from draspeed.analysis.bound import BoundReport
    from draspeed.analysis.capacity import CapacityReport
    from draspeed.analysis.fragmentation import FragmentationReport
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
    bound = report.bound
    shapes = ", ".join(f"{k}: {v}" for k, v in fit.placed_by_shape.items())
    out.write(
        f"{fit.placed} pods fit ({shapes}); strategy {fit.strategy}, stopped: "
        f"{fit.stopped}; {fit.calls} allocate calls, {fit.work} search steps, "
        f"{fit.seconds:.2f}s\n\n"
    )
    header = ["NODE", "PODS", "DEVICES IN USE", "FREE", "STRANDED", "FIRST FAILURE"]
    if bound is not None:
        header[2:2] = ["OPTIMAL", "GAP"]
    rows = [header]
    bounds = {} if bound is None else {b.node: b for b in bound.nodes}
    for n in fit.nodes:
        stranded = ", ".join(f"{k}={v}" for k, v in n.usage.stranded.items()) or "-"
        failure = "-"
        if n.first_failure is not None:
            f = n.first_failure
            failure = f"{f.shape}: {f.reason or f.status}"
        d = n.usage.devices
        row = [n.node, str(n.total_pods), f"{d.in_use}/{d.total}", str(d.free), stranded, failure]
        if bound is not None:
            b = bounds[n.node]
            row[2:2] = [_count(b.kept), _count(b.gap)]
        rows.append(row)
    out.write(format_table(rows, max_width=width))
    if report.strategies or bound is not None:
        _print_strategies(report, out)
    if bound is not None:
        _print_bound(report, bound, out)
    _print_fragmentation("Fragmentation (before placing)", report.fragmentation, out)
    if report.after is not None:
        _print_fragmentation("After placing", report.after, out, classes=False)


def _count(value: int | None) -> str:
    return "unbounded" if value is None else str(value)


def _print_strategies(report: CapacityReport, out: TextIO) -> None:
    bound = report.bound
    out.write("\nStrategies\n")
    header = ["STRATEGY", "PODS", "BY SHAPE"]
    if bound is not None:
        header += ["OPTIMAL KEEPING ITS PODS", "LOST TO FRAGMENTATION"]
    rows = [header]
    counts = [(report.fit.strategy, report.fit.placed, report.fit.placed_by_shape)]
    counts += [(s.strategy, s.placed, s.placed_by_shape) for s in report.strategies]
    for name, placed, by_shape in counts:
        row = [name, str(placed), ", ".join(f"{k}: {v}" for k, v in by_shape.items())]
        if bound is not None:
            if name == report.fit.strategy:
                kept, gap = bound.kept, bound.gap
            else:
                _, kept, gap = bound.strategies[name]
            row += [_count(kept), _count(gap)]
        rows.append(row)
    out.write("".join(f"  {line}\n" for line in format_table(rows).splitlines()))
    if bound is not None:
        shapes = ", ".join(f"{k}: {v}" for k, v in bound.by_shape.items())
        out.write(f"  optimal bound, any mix of the shapes: {_count(bound.optimal)} ({shapes})\n")


def _print_bound(report: CapacityReport, bound: BoundReport, out: TextIO) -> None:
    kind = "exact" if bound.exact else "an upper bound"
    out.write(f"\nOptimal bound ({kind}; {bound.solves} programs solved, {bound.seconds:.2f}s)\n")
    out.write(
        f"  {report.fit.strategy} placed {_count(bound.placed)}; keeping its pods, the best "
        f"device choice fits {_count(bound.kept)}: {_count(bound.gap)} pods lost to "
        "fragmentation\n"
    )
    rows = [
        [
            "SHAPE",
            "PLACED",
            "OPTIMAL KEEPING THEM",
            "GAP",
            f"ALONE: {report.fit.strategy.upper()}",
            "ALONE: OPTIMAL",
            "GAP",
        ]
    ]
    gaps = bound.gap_by_shape()
    for shape in bound.shapes:
        placed = sum((n.placed_by_shape or {}).get(shape, 0) for n in bound.nodes)
        kept = sum((n.kept_by_shape or {}).get(shape, 0) for n in bound.nodes)
        optimal = bound.alone.get(shape)
        filled = report.alone.get(shape)
        alone_gap = None if optimal is None or filled is None else optimal - filled
        rows.append(
            [
                shape,
                str(placed),
                str(kept),
                str(gaps[shape]),
                _count(filled),
                _count(optimal),
                _count(alone_gap),
            ]
        )
    out.write("".join(f"  {line}\n" for line in format_table(rows).splitlines()))
    for note in bound.notes:
        out.write(f"  upper bound: {note}\n")


def _print_fragmentation(
    title: str, frag: FragmentationReport, out: TextIO, *, classes: bool = True
) -> None:
    c = frag.cluster
    d = c.usage.devices
    out.write(f"\n{title}\n")
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
    if not classes:
        return
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
