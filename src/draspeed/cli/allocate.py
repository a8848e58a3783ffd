"""``draspeed allocate``: upstream's ``Allocate`` on one node, claims in and out as YAML/JSON.

Exit status: 0 allocated, 1 does not fit on this node (reason on stderr), 2 bad input
or usage (the error names object and field), 3 allocation error (upstream's text).
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from draspeed.cli.options import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_UNSUITABLE,
    add_engine,
    add_inputs,
    add_timeout,
    command_parser,
)
from draspeed.cli.render import Style, dump_document, format_table
from draspeed.cluster import AllocateOutcome, Cluster

EXAMPLES = """\
examples:
  # Allocate every claim without status.allocation, together (one pod's claims), on node-1.
  draspeed allocate -f cluster.yaml -f claims.yaml --node node-1 -o yaml
  kubectl get resourceslices,deviceclasses,resourceclaims,nodes -A -o yaml \\
    | draspeed allocate -f - --node node-1 --feature-gates DRAAdminAccess=false
"""


def add_parser(sub: Any) -> None:
    p = command_parser(
        sub,
        "allocate",
        "allocate the pending claims of the input on one node",
        "Allocate every ResourceClaim without status.allocation, together and in "
        "input order (as one pod's claims), on --node. Claims with status.allocation are "
        "in-use state. Prints the claims with status.allocation filled.",
        EXAMPLES,
    )
    add_inputs(p, claims=False)
    p.add_argument(
        "--node", required=True, help="node to allocate on (a Node in the input, or a bare name)"
    )
    p.add_argument("-o", "--output", choices=("yaml", "json", "table"), default="yaml")
    add_engine(p, "fast: compiled core (default); reference: plain-Python allocator, for debugging")
    add_timeout(p, "give up after this long (e.g. 10s), as kube-scheduler's filter timeout does")
    p.add_argument(
        "--stats",
        action="store_true",
        help="print the search's work counter and wall time to stderr",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from draspeed.api.loader import load

    objects = load(*args.filename, validate=args.validate)
    cluster = Cluster.from_objects(objects, features=args.feature_gates)
    outcome = cluster.allocate(args.node, engine=args.engine, timeout=args.timeout or None)
    if args.stats:
        err.write(
            f"stats: engine={args.engine} searchSteps={outcome.work} "
            f"seconds={outcome.seconds:.6f}\n"
        )
    return report(outcome, args.output, out, err)


def report(outcome: AllocateOutcome, output: str, out: TextIO, err: TextIO) -> int:
    """Print an outcome as the command does; its exit status."""
    for warning in outcome.warnings:
        err.write(f"warning: {warning}\n")
    if outcome.error is not None:
        err.write(outcome.error + "\n")
        return EXIT_UNSUITABLE if outcome.error_is_node_local else EXIT_ERROR
    if outcome.results is None:
        names = ", ".join(c.key for c in outcome.claims)
        err.write(f"claims {names} do not fit on node {outcome.node}\n")
        return EXIT_UNSUITABLE
    if output == "table":
        out.write(format_table(_table(outcome), Style.for_stream(out)))
    else:
        dump_document(_claims_document(outcome), output, out)
    return EXIT_OK


def _claims_document(outcome: AllocateOutcome) -> dict[str, Any]:
    from draspeed.api import claim_with_allocation

    assert outcome.results is not None
    items = [
        claim_with_allocation(c, r) for c, r in zip(outcome.claims, outcome.results, strict=True)
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _table(outcome: AllocateOutcome) -> list[list[str]]:
    rows = [["CLAIM", "REQUEST", "DEVICE", "NODE"]]
    for claim, result in zip(outcome.claims, outcome.results or [], strict=False):
        for r in result.devices.results:
            rows.append([claim.key, r.request, f"{r.driver}/{r.pool}/{r.device}", outcome.node])
    return rows
