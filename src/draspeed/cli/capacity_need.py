"""``draspeed capacity --need N --node-type T``: how many nodes of type T to add so
that N more pods of the mix fit (:func:`draspeed.analysis.nodes_needed`)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any, TextIO

from draspeed.cli.capacity_inputs import UsageError, parse_node_type
from draspeed.cli.output import Output, emit, emit_names
from draspeed.cli.render import Progress

if TYPE_CHECKING:
    from draspeed.analysis.need import NeedReport
    from draspeed.analysis.shapes import ShapeSource
    from draspeed.analysis.whatif import AddNodes
    from draspeed.engine.snapshot import Snapshot


def run_need(
    args: argparse.Namespace,
    snapshot: Snapshot,
    shapes: list[ShapeSource],
    ratios: dict[str, float] | None,
    out: TextIO,
    err: TextIO,
) -> None:
    from draspeed.analysis.need import nodes_needed

    if not args.node_type:
        raise UsageError("--need needs --node-type (KIND[:key=value,...], NODE or FILE)")
    if args.need < 0:
        raise UsageError(f"--need {args.need}: expected a number of pods >= 0")
    node_type = parse_node_type(args.node_type, snapshot)
    with Progress(f"nodes for {args.need} pods", stream=err):
        report = nodes_needed(
            snapshot,
            shapes,
            node_type,
            args.need,
            strategy=args.strategy,
            ratios=ratios,
            timeout=args.timeout or None,
        )
    print_need(report, node_type, args.output, out)


def print_need(report: NeedReport, node_type: AddNodes, output: Output, out: TextIO) -> None:
    if output.format == "name":  # the nodes to add, as kubectl names them
        count = report.nodes or 0
        emit_names((f"node/{n}" for n in dataclasses.replace(node_type, count=count).names()), out)
        return
    if output.is_document:
        doc: dict[str, Any] = {"need": report.to_dict()}
        emit(doc, output, out)
        return
    if report.nodes is None:
        out.write(
            f"{report.need} pods of the mix cannot fit by adding nodes ({report.node_type}): "
            f"{report.reason}; {report.placed_now} fit now\n"
        )
    elif report.nodes == 0:
        out.write(f"{report.need} pods of the mix fit already: no nodes to add\n")
    else:
        out.write(
            f"add {report.nodes} nodes ({report.node_type}) for {report.need} pods of the mix "
            f"to fit ({report.placed_now} fit now); strategy {report.strategy}, "
            f"{report.seconds:.2f}s\n"
        )
    if report.per_node_bound is not None:
        out.write(
            f"  optimal bound: at most {report.per_node_bound} pods per new node; "
            f"first guess {report.guess} nodes\n"
        )
    out.write(f"\nNODES ADDED   PODS THAT FIT (UP TO {report.need})\n")
    for added, pods in report.checks:
        out.write(f"{added:<13} {pods}\n")
