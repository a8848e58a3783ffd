"""``draspeed feasible``: on which nodes one pod's claims fit, and with which devices.

Exit status: 0 fits on some node, 1 on none, 2 bad input, 3 every node answered with
an allocation error.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from draspeed.cli.options import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_UNSUITABLE,
    add_engine,
    add_inputs,
    add_timeout,
    command_parser,
    node_list,
    read_cluster,
)
from draspeed.cli.render import STATUS_COLOURS, Progress, Style, dump_document, format_table
from draspeed.errors import AllocationError, AllocationTimeout, NodeAllocationError

if TYPE_CHECKING:
    from draspeed.api.model import Node, ResourceClaim
    from draspeed.cluster import Cluster, Engine
    from draspeed.engine.feasibility import Feasibility, NodeOutcome, Status

EXAMPLES = """\
examples:
  # On which nodes would these claims (one pod's) fit, and with which devices?
  draspeed feasible -f cluster.yaml --claims pod-claims.yaml
  kubectl get resourceslices,deviceclasses,resourceclaims,nodes -A -o json \\
    | draspeed feasible -f - --claims pod-claims.yaml -o json
  draspeed feasible -f cluster.yaml --nodes node-1,node-2 --engine reference
"""


def add_parser(sub: Any) -> None:
    p = command_parser(
        sub,
        "feasible",
        "on which nodes the pending claims fit, and with which devices",
        "Allocate the pending claims (the claims without status.allocation, or only "
        "those of --claims) together, as one pod's claims, on every node: the Nodes of "
        "the input, then the nodes named by ResourceSlices. Exit status 0 when they fit "
        "somewhere, 1 when nowhere, 3 when every node answers with an allocation error.",
        EXAMPLES,
    )
    add_inputs(p, claims=True)
    p.add_argument(
        "--nodes",
        type=node_list,
        default=None,
        metavar="a,b,...",
        help="only these nodes (a name not in the input is a node without labels)",
    )
    p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    add_engine(p, "fast: compiled core (default); reference: plain-Python allocator, node by node")
    add_timeout(
        p, "give up after this long in all (e.g. 10s); nodes not answered by then report a timeout"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    cluster = read_cluster(args, err)
    if args.nodes is None:
        nodes = cluster.known_nodes()
    else:
        nodes = [cluster.node(name) for name in args.nodes]
    # The compiled engine answers every node in one call: show the time it takes;
    # the reference engine goes node by node: show how far it got.
    total = len(nodes) if args.engine == "reference" else None
    with Progress(f"feasibility on {len(nodes)} nodes", total=total, stream=err) as bar:
        result = feasibility(
            cluster, nodes, args.engine, timeout=args.timeout or None, progress=bar
        )
    if args.output == "table":
        style = Style.for_stream(out)
        out.write(format_table(feasibility_rows(result, cluster.pending), style, _status_colour))
        fits = len(result.feasible)
        summary = f"fits on {fits} of {len(result)} node{'s' if len(result) != 1 else ''}"
        if fits < len(result):
            summary += " (`draspeed explain --node NAME` says why not)"
        out.write("\n" + style.paint(summary, "dim") + "\n")
    else:
        dump_document(result.to_dict(), args.output, out)
    if result.feasible:
        return EXIT_OK
    if len(result) and all(o.status in ("error", "timeout") for o in result):
        return EXIT_ERROR
    return EXIT_UNSUITABLE


def feasibility(
    cluster: Cluster,
    nodes: Sequence[Node],
    engine: Engine = "fast",
    *,
    timeout: float | None = None,
    progress: Progress | None = None,
) -> Feasibility:
    """``Allocator.feasible_nodes`` for the fast engine (one pass over the nodes); the
    reference engine is asked node by node, advancing ``progress`` per node."""
    from draspeed.engine.feasibility import Feasibility

    deadline = None if timeout is None else time.monotonic() + timeout
    if engine == "reference":
        return Feasibility.from_outcomes(_reference_outcomes(cluster, nodes, deadline, progress))
    from draspeed.engine.allocator import Allocator

    allocator = Allocator(cluster.snapshot())
    return allocator.feasible_nodes(cluster.pending, list(nodes), deadline=deadline)


def _reference_outcomes(
    cluster: Cluster, nodes: Sequence[Node], deadline: float | None, progress: Progress | None
) -> list[NodeOutcome]:
    from draspeed.engine.feasibility import NodeOutcome

    allocator = cluster.allocator("reference")
    outcomes = []
    for node in nodes:
        try:
            results = allocator.allocate(cluster.pending, node, deadline=deadline)
        except AllocationTimeout as exc:
            outcomes.append(NodeOutcome(node.name, "timeout", str(exc)))
        except AllocationError as exc:
            status: Status = "node-error" if isinstance(exc, NodeAllocationError) else "error"
            work = allocator.last_stats.num_allocate_one_invocations
            outcomes.append(NodeOutcome(node.name, status, str(exc), work))
        else:
            work = allocator.last_stats.num_allocate_one_invocations
            if results is None:
                outcomes.append(NodeOutcome(node.name, "does-not-fit", None, work))
            else:
                outcomes.append(NodeOutcome(node.name, "fits", None, work, results))
        if progress is not None:
            progress.advance()
    return outcomes


def outcome_devices(outcome: NodeOutcome, claims: Sequence[ResourceClaim]) -> str:
    """``pool/device, ...`` per claim (claims named when there are several), or the error."""
    if outcome.error is not None:
        return outcome.error
    if not outcome.fits:
        return "-"
    parts = []
    for claim, result in zip(claims, outcome.results or [], strict=True):
        devices = ", ".join(f"{r.pool}/{r.device}" for r in result.devices.results) or "-"
        parts.append(f"{claim.key}: {devices}" if len(claims) > 1 else devices)
    return "; ".join(parts)


def feasibility_rows(result: Feasibility, claims: Sequence[ResourceClaim]) -> list[list[str]]:
    rows = [["NODE", "STATUS", "DEVICES"]]
    for o in result:
        rows.append([o.node, o.status, outcome_devices(o, claims)])
    return rows


def _status_colour(row: int, col: int, text: str) -> str | None:
    return STATUS_COLOURS.get(text) if col == 1 else None
