"""``draspeed allocate``: upstream's ``Allocate`` on one node, claims in and out as YAML/JSON.

Exit status: 0 allocated, 1 does not fit on this node (reason on stderr), 2 bad input
or usage (the error names object and field; an unknown --node too), 3 allocation
error (upstream's text), 4 the cluster could not be read (--from-cluster).
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from draspeed.cli.options import (
    EXIT_CODES,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_UNSUITABLE,
    add_engine,
    add_inputs,
    add_timeout,
    command_parser,
    read_inputs,
)
from draspeed.cli.output import Output, add_output, emit, emit_names, table_width
from draspeed.cli.render import Style, format_table
from draspeed.cluster import AllocateOutcome

EXAMPLES = f"""\
examples:
  # Allocate every claim without status.allocation, together (one pod's claims), on node-1.
  draspeed allocate -f cluster.yaml -f claims.yaml --node node-1 -o yaml
  kubectl get resourceslices,deviceclasses,resourceclaims,nodes -A -o yaml \\
    | draspeed allocate -f - --node node-1 --feature-gates DRAAdminAccess=false
  # A pending pod's claims (templates instantiated, extended resources) on a live cluster.
  draspeed allocate --from-cluster --pod default/trainer --node node-1 -o name

{EXIT_CODES}
"""


def add_parser(sub: Any) -> None:
    p = command_parser(
        sub,
        "allocate",
        "allocate the pending claims of the input (or a pod's) on one node",
        "Allocate every ResourceClaim without status.allocation (of -n, matching -l), "
        "together and in input order (as one pod's claims), or the claims of --pod, on "
        "--node. Claims with status.allocation are in-use state. Prints the claims with "
        "status.allocation filled.",
        EXAMPLES,
    )
    add_inputs(p, claims=False, pods="one")
    p.add_argument(
        "--node",
        required=True,
        help="node to allocate on (a Node of the input, or named by a ResourceSlice)",
    )
    add_output(p, ("yaml", "json", "name", "table", "wide"), "yaml")
    add_engine(p, "fast: compiled core (default); reference: plain-Python allocator, for debugging")
    add_timeout(p, "give up after this long (e.g. 10s), as kube-scheduler's filter timeout does")
    p.add_argument(
        "--stats",
        action="store_true",
        help="print the search's work counter and wall time to stderr",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    inputs = read_inputs(args, err)
    cluster = inputs.cluster
    node = cluster.known_node(args.node)
    pod = inputs.pods[0] if inputs.pods else None
    outcome = cluster.allocate(node, pod=pod, engine=args.engine, timeout=args.timeout or None)
    if pod is not None and not outcome.claims and outcome.reason is None:
        err.write(f"pod {pod.key} has no claims to allocate\n")
    if args.stats:
        err.write(
            f"stats: engine={args.engine} searchSteps={outcome.work} "
            f"seconds={outcome.seconds:.6f}\n"
        )
    outcome.warnings = []  # written by read_inputs already
    return report(outcome, args.output, out, err)


def report(outcome: AllocateOutcome, output: Output | str, out: TextIO, err: TextIO) -> int:
    """Print an outcome as the command does; its exit status."""
    if isinstance(output, str):
        output = Output(output)
    for warning in outcome.warnings:
        err.write(f"warning: {warning}\n")
    if outcome.reason is not None:
        err.write(f"does not fit on node {outcome.node}: {outcome.reason}\n")
        return EXIT_UNSUITABLE
    if outcome.error is not None:
        err.write(outcome.error + "\n")
        return EXIT_UNSUITABLE if outcome.error_is_node_local else EXIT_ERROR
    if outcome.results is None:
        names = ", ".join(c.key for c in outcome.claims)
        err.write(f"claims {names} do not fit on node {outcome.node}\n")
        return EXIT_UNSUITABLE
    if output.is_table:
        rows = _table(outcome, wide=output.format == "wide")
        out.write(format_table(rows, Style.for_stream(out), max_width=table_width(out, output)))
    elif output.format == "name":
        emit_names(
            (f"resourceclaim.resource.k8s.io/{c.metadata.name}" for c in outcome.claims), out
        )
    else:
        emit(_claims_document(outcome), output, out)
    return EXIT_OK


def _claims_document(outcome: AllocateOutcome) -> dict[str, Any]:
    from draspeed.api import claim_with_allocation

    assert outcome.results is not None
    items = [
        claim_with_allocation(c, r) for c, r in zip(outcome.claims, outcome.results, strict=True)
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _table(outcome: AllocateOutcome, *, wide: bool) -> list[list[str]]:
    if wide:
        rows = [["CLAIM", "REQUEST", "DRIVER", "POOL", "DEVICE", "NODE", "ADMIN", "SHARE ID"]]
    else:
        rows = [["CLAIM", "REQUEST", "DEVICE", "NODE"]]
    for claim, result in zip(outcome.claims, outcome.results or [], strict=False):
        for r in result.devices.results:
            if wide:
                rows.append(
                    [
                        claim.key,
                        r.request,
                        r.driver,
                        r.pool,
                        r.device,
                        outcome.node,
                        "true" if r.admin_access else "-",
                        r.share_id or "-",
                    ]
                )
            else:
                rows.append([claim.key, r.request, f"{r.driver}/{r.pool}/{r.device}", outcome.node])
    return rows
