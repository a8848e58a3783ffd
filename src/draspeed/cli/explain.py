"""``draspeed explain``: why one pod's claims fit on a node, or why not.

Exit status: 0 fits, 1 does not fit, 2 bad input (an unknown --node too), 3 allocation
error, 4 the cluster could not be read (--from-cluster).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from draspeed.cli.options import (
    EXIT_CODES,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_UNSUITABLE,
    add_inputs,
    add_timeout,
    command_parser,
    read_inputs,
)
from draspeed.cli.output import Output, add_output, emit, emit_names, table_width
from draspeed.cli.render import STATUS_COLOURS, Progress, Style, format_table

if TYPE_CHECKING:
    from draspeed.explain import Explanation

EXAMPLES = f"""\
examples:
  # Why do these claims not fit on node-1? Device counts per request, stage by stage.
  draspeed explain -f cluster.yaml --claims pod-claims.yaml --node node-1
  draspeed explain -f cluster.yaml --node node-1 -o json
  draspeed explain --from-cluster --pod ml/trainer-0 --node gpu-node-7

{EXIT_CODES}
"""


def add_parser(sub: Any) -> None:
    p = command_parser(
        sub,
        "explain",
        "why the pending claims fit on a node, or why not",
        "For the pending claims (as one pod's) on --node: the allocator's verdict and, "
        "per request, how many devices are on the node, match the class and request "
        "selectors, are not in use, have counters and capacity left and are not tainted, "
        "next to what the request needs; then the constraint or counter set that blocked "
        "the search. Exit status 0 fits, 1 does not fit, 3 allocation error.",
        EXAMPLES,
    )
    add_inputs(p, claims=True, pods="one")
    p.add_argument(
        "--node",
        required=True,
        help="node to explain (a Node of the input, or named by a ResourceSlice)",
    )
    add_output(p, ("table", "wide", "json", "yaml", "name"), "table")
    add_timeout(p, "bound each allocator run (e.g. 10s)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from draspeed.explain import explain

    inputs = read_inputs(args, err)
    cluster = inputs.cluster
    node = cluster.known_node(args.node)
    claims = cluster.pending
    if inputs.pods:
        pod = inputs.pods[0]
        on_node = cluster.pod(pod).for_node(node)
        if on_node.reason is not None:
            # Out before any allocation: the scheduler's reason is the whole answer.
            err.write(f"pod {pod.key} does not fit on node {node.name}: {on_node.reason}\n")
            return EXIT_UNSUITABLE
        claims = list(on_node.claims)
    with Progress(f"explaining node {node.name}", stream=err):
        explanation = explain(cluster.snapshot(), claims, node, timeout=args.timeout or None)
    output: Output = args.output
    if output.is_table:
        width = table_width(out, output)
        out.write(render_explanation(explanation, Style.for_stream(out), max_width=width))
    elif output.format == "name":
        if explanation.status == "fits":
            emit_names([f"node/{explanation.node}"], out)
    else:
        emit(explanation.to_dict(), output, out)
    return explanation_exit(explanation)


def render_explanation(
    explanation: Explanation, style: Style, *, max_width: int | None = None
) -> str:
    """The explanation as a person reads it: verdict, main reason, funnel, blockers."""
    lines = []
    status = style.paint(explanation.status, STATUS_COLOURS.get(explanation.status))
    claims = ", ".join(explanation.claims) or "no claims"
    lines.append(f"{style.paint('node', 'bold')} {explanation.node}: {status} ({claims})")
    lines.append(f"  {explanation.summary}")
    if explanation.requests:
        lines.append("")
        rows = explanation.rows()

        def colour(row: int, col: int, text: str) -> str | None:
            f = explanation.requests[row - 1]
            if col == len(rows[0]) - 1:
                return "green" if f.chosen else ("yellow" if f.short else None)
            return None

        lines.append(format_table(rows, style, colour, max_width=max_width).rstrip("\n"))
    if explanation.pools:
        lines.append("")
        lines.append(style.paint("pools that cannot be searched:", "bold"))
        for p in explanation.pools:
            lines.append(f"  {p.pool}: {p.state}: {p.reason}")
    if explanation.blockers:
        lines.append("")
        lines.append(style.paint("blockers:", "bold"))
        for b in explanation.blockers:
            lines.append(f"  {style.paint(b.kind, 'cyan')}: {b.message}")
    return "\n".join(lines) + "\n"


def explanation_exit(explanation: Explanation) -> int:
    if explanation.status == "fits":
        return EXIT_OK
    if explanation.status in ("error", "timeout"):
        return EXIT_ERROR
    return EXIT_UNSUITABLE
