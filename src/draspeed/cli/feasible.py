"""``draspeed feasible``: on which nodes one pod's claims fit, and with which devices.

Exit status: 0 fits on some node (with --pod/--pods: every pod fits somewhere), 1 on
none, 2 bad input, 3 every node answered with an allocation error, 4 the cluster
could not be read (--from-cluster).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from draspeed.cli.options import (
    EXIT_CODES,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_UNSUITABLE,
    add_engine,
    add_inputs,
    add_timeout,
    command_parser,
    node_list,
    read_inputs,
)
from draspeed.cli.output import Output, add_output, emit, emit_names, table_width
from draspeed.cli.render import STATUS_COLOURS, Progress, Style, format_table

if TYPE_CHECKING:
    from draspeed.api.model import Node, ResourceClaim
    from draspeed.cluster import Cluster
    from draspeed.engine.feasibility import Feasibility, NodeOutcome
    from draspeed.scheduling import PodFeasibility

EXAMPLES = f"""\
examples:
  # On which nodes would these claims (one pod's) fit, and with which devices?
  draspeed feasible -f cluster.yaml --claims pod-claims.yaml
  kubectl get resourceslices,deviceclasses,resourceclaims,nodes -A -o json \\
    | draspeed feasible -f - --claims pod-claims.yaml -o json
  # A pending pod of a dump or of the live cluster, or every pending pod of a namespace.
  draspeed feasible -f dump.yaml --pod default/trainer
  draspeed feasible --from-cluster --context prod --pods -n ml -l app=trainer
  draspeed feasible -f cluster.yaml --nodes node-1,node-2 --engine reference -o name

{EXIT_CODES}
"""


def add_parser(sub: Any) -> None:
    p = command_parser(
        sub,
        "feasible",
        "on which nodes the pending claims (or a pod's) fit, and with which devices",
        "Allocate the pending claims (the claims without status.allocation of -n matching "
        "-l, or only those of --claims) together, as one pod's claims, or the claims of "
        "each --pod, on every node: the Nodes of the input, then the nodes named by "
        "ResourceSlices.",
        EXAMPLES,
    )
    add_inputs(p, claims=True, pods="many")
    p.add_argument(
        "--nodes",
        type=node_list,
        default=None,
        metavar="a,b,...",
        help="only these nodes (each a Node of the input or named by a ResourceSlice)",
    )
    add_output(p, ("table", "wide", "json", "yaml", "name"), "table")
    add_engine(p, "fast: compiled core (default); reference: plain-Python allocator, node by node")
    add_timeout(
        p, "give up after this long in all (e.g. 10s); nodes not answered by then report a timeout"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    inputs = read_inputs(args, err)
    cluster = inputs.cluster
    if args.nodes is None:
        nodes = cluster.known_nodes()
    else:
        nodes = [cluster.known_node(name) for name in args.nodes]
    if args.pod or args.pods:
        return _run_pods(args, cluster, inputs.pods, nodes, out, err)
    # The compiled engine answers every node in one call: show the time it takes;
    # the reference engine goes node by node: show how far it got.
    total = len(nodes) if args.engine == "reference" else None
    with Progress(f"feasibility on {len(nodes)} nodes", total=total, stream=err) as bar:
        from draspeed.scheduling import feasibility

        result = feasibility(
            cluster,
            nodes,
            cluster.pending,
            engine=args.engine,
            timeout=args.timeout or None,
            progress=bar.advance,
        )
    output: Output = args.output
    if output.is_table:
        claims = {o.node: tuple(cluster.pending) for o in result}
        _print_table(result, claims, output, out, pods=None)
    elif output.format == "name":
        emit_names((f"node/{n}" for n in result.feasible), out)
    else:
        emit(result.to_dict(), output, out)
    return _exit(result)


def _run_pods(
    args: argparse.Namespace,
    cluster: Cluster,
    pods: Sequence[Any],
    nodes: Sequence[Node],
    out: TextIO,
    err: TextIO,
) -> int:
    if not pods:
        err.write("no pending pods selected\n")
        return EXIT_UNSUITABLE
    answers: list[PodFeasibility] = []
    total = len(nodes) * len(pods) if args.engine == "reference" else None
    with Progress(f"feasibility of {len(pods)} pods", total=total, stream=err) as bar:
        for pod in pods:
            claims = cluster.pod(pod)
            if claims.needs_nothing:
                err.write(
                    f"pod {pod.key} has no resource claims and no extended resources backed "
                    "by a DeviceClass: nothing for DRA to allocate\n"
                )
            from draspeed.scheduling import pod_feasibility

            answers.append(
                pod_feasibility(
                    cluster,
                    claims,
                    list(nodes),
                    engine=args.engine,
                    timeout=args.timeout or None,
                    progress=bar.advance,
                )
            )
    output: Output = args.output
    several = len(answers) > 1 or bool(args.pods)
    if output.is_table:
        style = Style.for_stream(out)
        for k, answer in enumerate(answers):
            if k:
                out.write("\n")
            out.write(style.paint(_pod_title(answer), "bold") + "\n")
            _print_table(answer.feasibility, answer.claims, output, out, pods=answer)
    elif output.format == "name":
        if several:
            emit_names((f"pod/{a.pod.pod.metadata.name}" for a in answers if a.feasible), out)
        else:
            emit_names((f"node/{n}" for n in answers[0].feasible), out)
    else:
        docs = [a.to_dict() for a in answers]
        emit({"pods": docs} if several else docs[0], output, out)
    codes = [_exit(a.feasibility) for a in answers]
    if all(c == EXIT_OK for c in codes):
        return EXIT_OK
    if all(c == EXIT_ERROR for c in codes):
        return EXIT_ERROR
    return EXIT_UNSUITABLE


def _pod_title(answer: PodFeasibility) -> str:
    claims = answer.pod
    parts = [f"pod {claims.pod.key}"]
    if claims.claims:
        made = {c.key for c in claims.made}
        parts.append(
            "claims "
            + ", ".join(
                c.key + (" (from its template)" if c.key in made else "") for c in claims.claims
            )
        )
    if claims.extended:
        parts.append(
            "extended resources " + ", ".join(f"{k}={v}" for k, v in claims.extended.items())
        )
    return "; ".join(parts)


def _print_table(
    result: Feasibility,
    claims: dict[str, tuple[ResourceClaim, ...]],
    output: Output,
    out: TextIO,
    *,
    pods: PodFeasibility | None,
) -> None:
    style = Style.for_stream(out)
    wide = output.format == "wide"
    rows = feasibility_rows(result, claims, wide=wide)
    out.write(format_table(rows, style, _status_colour, max_width=table_width(out, output)))
    fits = len(result.feasible)
    summary = f"fits on {fits} of {len(result)} node{'s' if len(result) != 1 else ''}"
    if fits < len(result):
        summary += " (`draspeed explain --node NAME` says why not)"
    out.write("\n" + style.paint(summary, "dim") + "\n")


def _exit(result: Feasibility) -> int:
    if result.feasible:
        return EXIT_OK
    if len(result) and all(o.status in ("error", "timeout") for o in result):
        return EXIT_ERROR
    return EXIT_UNSUITABLE


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


def feasibility_rows(
    result: Feasibility,
    claims: dict[str, tuple[ResourceClaim, ...]],
    *,
    wide: bool = False,
) -> list[list[str]]:
    rows = [["NODE", "STATUS", "DEVICES", *(["STEPS"] if wide else [])]]
    for o in result:
        row = [o.node, o.status, outcome_devices(o, claims.get(o.node, ()))]
        if wide:
            row.append(str(o.work))
        rows.append(row)
    return rows


def _status_colour(row: int, col: int, text: str) -> str | None:
    return STATUS_COLOURS.get(text) if col == 1 else None
