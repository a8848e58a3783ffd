"""``draspeed explain``: why one pod's claims fit on a node, or why not.

Exit status: 0 fits, 1 does not fit, 2 bad input, 3 allocation error.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from draspeed.cli.options import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_UNSUITABLE,
    add_inputs,
    add_timeout,
    command_parser,
    read_cluster,
)
from draspeed.cli.render import STATUS_COLOURS, Progress, Style, dump_document, format_table

if TYPE_CHECKING:
    from draspeed.explain import Explanation

EXAMPLES = """\
examples:
  # Why do these claims not fit on node-1? Device counts per request, stage by stage.
  draspeed explain -f cluster.yaml --claims pod-claims.yaml --node node-1
  draspeed explain -f cluster.yaml --node node-1 -o json
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
    add_inputs(p, claims=True)
    p.add_argument(
        "--node", required=True, help="node to explain (a Node in the input, or a bare name)"
    )
    p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    add_timeout(p, "bound each allocator run (e.g. 10s)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from draspeed.explain import explain

    cluster = read_cluster(args, err)
    node = cluster.node(args.node)
    with Progress(f"explaining node {node.name}", stream=err):
        explanation = explain(
            cluster.snapshot(), cluster.pending, node, timeout=args.timeout or None
        )
    if args.output == "table":
        out.write(render_explanation(explanation, Style.for_stream(out)))
    else:
        dump_document(explanation.to_dict(), args.output, out)
    return explanation_exit(explanation)


def render_explanation(explanation: Explanation, style: Style) -> str:
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

        lines.append(format_table(rows, style, colour).rstrip("\n"))
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
