"""The ``draspeed`` command: kubectl-shaped input, upstream-shaped answers.

Commands: ``allocate`` (one node, upstream's ``Allocate``), ``feasible`` (every node),
``explain`` (why the claims do or do not fit on one node), ``demo`` and ``generate``.

Exit status of ``allocate``: 0 allocated, 1 does not fit on this node (reason on
stderr), 2 bad input or usage (the error names object and field), 3 allocation
error (upstream's text on stderr). ``feasible``: 0 fits on some node, 1 on none,
3 every node answered with an allocation error. ``explain``: 0 fits, 1 does not
fit, 3 allocation error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

import yaml

from draspeed.cli.render import Progress, Style, format_table
from draspeed.errors import AllocationError, AllocationTimeout, DraspeedError, InputError
from draspeed.features import Features
from draspeed.jobs import ENGINES, AllocateOutcome, Engine, allocate_objects, find_node

if TYPE_CHECKING:
    from collections.abc import Sequence

    from draspeed.api.loader import Objects
    from draspeed.api.model import Node, ResourceClaim, ResourceSlice
    from draspeed.engine.feasibility import Feasibility, NodeOutcome, Status
    from draspeed.engine.snapshot import Snapshot
    from draspeed.explain import Explanation

EXIT_OK, EXIT_UNSUITABLE, EXIT_USAGE, EXIT_ERROR = 0, 1, 2, 3

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}

_EXAMPLES = {
    "draspeed": """\
examples:
  draspeed demo                                        # the built-in demo cluster
  draspeed feasible -f cluster.yaml --claims pod-claims.yaml
  draspeed explain -f cluster.yaml --claims pod-claims.yaml --node node-1
  draspeed allocate -f cluster.yaml -f claims.yaml --node node-1 -o yaml
  draspeed generate nvidia-mig --nodes 4 --claim mig-1g10gb | draspeed feasible -f -
""",
    "allocate": """\
examples:
  # Allocate every claim without status.allocation, together (one pod's claims), on node-1.
  draspeed allocate -f cluster.yaml -f claims.yaml --node node-1 -o yaml
  kubectl get resourceslices,deviceclasses,resourceclaims,nodes -A -o yaml \\
    | draspeed allocate -f - --node node-1 --feature-gates DRAAdminAccess=false
""",
    "feasible": """\
examples:
  # On which nodes would these claims (one pod's) fit, and with which devices?
  draspeed feasible -f cluster.yaml --claims pod-claims.yaml
  kubectl get resourceslices,deviceclasses,resourceclaims,nodes -A -o json \\
    | draspeed feasible -f - --claims pod-claims.yaml -o json
  draspeed feasible -f cluster.yaml --nodes node-1,node-2 --engine reference
""",
    "explain": """\
examples:
  # Why do these claims not fit on node-1? Device counts per request, stage by stage.
  draspeed explain -f cluster.yaml --claims pod-claims.yaml --node node-1
  draspeed explain -f cluster.yaml --node node-1 -o json
""",
    "demo": """\
examples:
  draspeed demo              # tables: feasibility, scheduling, one explanation
  draspeed demo -o json      # the same, machine-readable
""",
    "generate": """\
examples:
  draspeed generate nvidia-mig --nodes 4 --allocated half --claim mig-3g40gb > cluster.yaml
  draspeed generate example --nodes 2 --claim single-gpu | draspeed feasible -f -
""",
}


def parse_duration(text: str) -> float:
    """``10s``, ``500ms``, ``1.5m`` or plain seconds → seconds; ``0`` disables."""
    match = _DURATION.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (examples: 10s, 500ms, 2m)")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def _feature_gates(text: str) -> Features:
    try:
        return Features.parse(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _boolean(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _node_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected node names separated by commas")
    return names


def _subparser(sub: Any, name: str, help: str, description: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=description,
        epilog=_EXAMPLES[name],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def _add_inputs(p: argparse.ArgumentParser, *, claims: bool) -> None:
    p.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="FILE",
        help="YAML/JSON file or directory with Kubernetes objects; '-' reads stdin; repeatable",
    )
    if claims:
        p.add_argument(
            "--claims",
            action="append",
            metavar="FILE",
            help="the pod's claims: only the claims without status.allocation of these files "
            "are allocated (those of -f are then ignored); repeatable",
        )
    p.add_argument(
        "--feature-gates",
        type=_feature_gates,
        default=Features(),
        help="e.g. DRAAdminAccess=false,DRAPrioritizedList=true (default: all DRA gates on)",
    )
    p.add_argument(
        "--validate",
        type=_boolean,
        default=True,
        metavar="true|false",
        help="check objects against the API's validation rules first (default true)",
    )


def _add_allocate(sub: Any) -> None:
    p = _subparser(
        sub,
        "allocate",
        "allocate the pending claims of the input on one node",
        "Allocate every ResourceClaim without status.allocation, together and in "
        "input order (as one pod's claims), on --node. Claims with status.allocation are "
        "in-use state. Prints the claims with status.allocation filled.",
    )
    _add_inputs(p, claims=False)
    p.add_argument(
        "--node", required=True, help="node to allocate on (a Node in the input, or a bare name)"
    )
    p.add_argument("-o", "--output", choices=("yaml", "json", "table"), default="yaml")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="fast",
        help="fast: compiled core (default); reference: plain-Python allocator, for debugging",
    )
    p.add_argument(
        "--timeout",
        type=parse_duration,
        default=None,
        help="give up after this long (e.g. 10s), as kube-scheduler's filter timeout does",
    )
    p.add_argument(
        "--stats",
        action="store_true",
        help="print the search's work counter and wall time to stderr",
    )
    p.set_defaults(run=_run_allocate)


def _add_feasible(sub: Any) -> None:
    p = _subparser(
        sub,
        "feasible",
        "on which nodes the pending claims fit, and with which devices",
        "Allocate the pending claims (the claims without status.allocation, or only "
        "those of --claims) together, as one pod's claims, on every node: the Nodes of "
        "the input, then the nodes named by ResourceSlices. Exit status 0 when they fit "
        "somewhere, 1 when nowhere, 3 when every node answers with an allocation error.",
    )
    _add_inputs(p, claims=True)
    p.add_argument(
        "--nodes",
        type=_node_list,
        default=None,
        metavar="a,b,...",
        help="only these nodes (a name not in the input is a node without labels)",
    )
    p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="fast",
        help="fast: compiled core (default); reference: plain-Python allocator, node by node",
    )
    p.add_argument(
        "--timeout",
        type=parse_duration,
        default=None,
        help="give up after this long in all (e.g. 10s); nodes not answered by then "
        "report a timeout",
    )
    p.set_defaults(run=_run_feasible)


def _add_explain(sub: Any) -> None:
    p = _subparser(
        sub,
        "explain",
        "why the pending claims fit on a node, or why not",
        "For the pending claims (as one pod's) on --node: the allocator's verdict and, "
        "per request, how many devices are on the node, match the class and request "
        "selectors, are not in use, have counters and capacity left and are not tainted, "
        "next to what the request needs; then the constraint or counter set that blocked "
        "the search. Exit status 0 fits, 1 does not fit, 3 allocation error.",
    )
    _add_inputs(p, claims=True)
    p.add_argument(
        "--node", required=True, help="node to explain (a Node in the input, or a bare name)"
    )
    p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    p.add_argument(
        "--timeout",
        type=parse_duration,
        default=None,
        help="bound each allocator run (e.g. 10s)",
    )
    p.set_defaults(run=_run_explain)


def _add_demo(sub: Any) -> None:
    p = _subparser(
        sub,
        "demo",
        "the built-in demo cluster: feasibility, scheduling and one explanation",
        "Runs the built-in demo cluster (two nodes with 8 example GPUs each, one 2x H100 "
        "node in dynamic-MIG mode): every pending claim on every node, the claims "
        "scheduled one after another, and why one claim does not fit on a node.",
    )
    p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    p.add_argument("--engine", choices=ENGINES, default="fast")
    p.set_defaults(run=_run_demo)


def _add_generate(sub: Any) -> None:
    from draspeed.cli.generate import add_generate_parser

    add_generate_parser(sub)
    parser: argparse.ArgumentParser = sub.choices["generate"]
    parser.epilog = _EXAMPLES["generate"]
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    for action in parser._actions:  # the per-kind parsers get the same examples
        if isinstance(action, argparse._SubParsersAction):
            for kind_parser in action.choices.values():
                kind_parser.epilog = _EXAMPLES["generate"]
                kind_parser.formatter_class = argparse.RawDescriptionHelpFormatter


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="draspeed",
        description="Kubernetes DRA device allocation, decided exactly as the upstream "
        "allocator decides it.",
        epilog=_EXAMPLES["draspeed"],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from draspeed import __version__

    parser.add_argument("--version", action="version", version=f"draspeed {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_allocate(sub)
    _add_feasible(sub)
    _add_explain(sub)
    _add_demo(sub)
    _add_generate(sub)
    from draspeed.cli.capacity import add_capacity_parser

    add_capacity_parser(sub)
    return parser


# --------------------------------------------------------------------------------------
# allocate
# --------------------------------------------------------------------------------------


def _claims_document(outcome: AllocateOutcome) -> dict[str, Any]:
    from draspeed.api import claim_with_allocation

    assert outcome.results is not None
    items = [
        claim_with_allocation(c, r) for c, r in zip(outcome.claims, outcome.results, strict=True)
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _print_document(doc: Any, output: str, out: TextIO) -> None:
    if output == "json":
        json.dump(doc, out, indent=2)
        out.write("\n")
    else:
        yaml.safe_dump(doc, out, sort_keys=False, default_flow_style=False)


def _table(outcome: AllocateOutcome) -> list[list[str]]:
    rows = [["CLAIM", "REQUEST", "DEVICE", "NODE"]]
    for claim, result in zip(outcome.claims, outcome.results or [], strict=False):
        for r in result.devices.results:
            rows.append([claim.key, r.request, f"{r.driver}/{r.pool}/{r.device}", outcome.node])
    return rows


def _print_table(rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write(
            "   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n"
        )


def _report(outcome: AllocateOutcome, output: str, out: TextIO, err: TextIO) -> int:
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
        _print_table(_table(outcome), out)
    else:
        _print_document(_claims_document(outcome), output, out)
    return EXIT_OK


def _run_allocate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from draspeed.api.loader import load

    objects = load(*args.filename, validate=args.validate)
    outcome = allocate_objects(
        objects,
        args.node,
        features=args.feature_gates,
        engine=args.engine,
        timeout=args.timeout or None,
    )
    if args.stats:
        err.write(
            f"stats: engine={args.engine} searchSteps={outcome.work} "
            f"seconds={outcome.seconds:.6f}\n"
        )
    return _report(outcome, args.output, out, err)


# --------------------------------------------------------------------------------------
# Shared by feasible, explain and demo
# --------------------------------------------------------------------------------------


@dataclass
class ClusterInput:
    """What ``feasible`` and ``explain`` work on: the cluster and one pod's claims."""

    objects: Objects
    slices: list[ResourceSlice]  # with DeviceTaintRules applied
    allocated: list[ResourceClaim]
    pending: list[ResourceClaim]
    features: Features

    def snapshot(self) -> Snapshot:
        from draspeed.engine.snapshot import Snapshot

        return Snapshot.build(
            self.slices,
            self.objects.classes,
            self.allocated,
            features=self.features,
            nodes=self.objects.nodes,
        )

    def known_nodes(self) -> list[Node]:
        """The Node objects given, then the nodes named by slices (sorted), as the
        snapshot knows them."""
        from draspeed.api.model import Node, ObjectMeta

        given = {n.name for n in self.objects.nodes}
        named = sorted({s.spec.node_name for s in self.slices if s.spec.node_name} - given)
        return [*self.objects.nodes, *(Node(metadata=ObjectMeta(name=n)) for n in named)]


def cluster_input(
    objects: Objects, features: Features, claims: Objects | None = None
) -> ClusterInput:
    """Split the input as kube-scheduler sees it: committed claims are state, the
    others (or, with ``claims``, only those of ``claims``) are the pod's claims."""
    from draspeed.jobs import split_claims
    from draspeed.rules.taint_rules import apply_taint_rules

    allocated, pending = split_claims(objects.claims)
    if claims is not None:
        more_allocated, pending = split_claims(claims.claims)
        allocated = allocated + more_allocated
    slices = apply_taint_rules(objects.slices, objects.taint_rules, objects.classes)
    return ClusterInput(objects, slices, allocated, pending, features)


def _read_input(args: argparse.Namespace, err: TextIO) -> ClusterInput:
    from draspeed.api.loader import load

    sources = len(args.filename) + len(args.claims or [])
    with Progress(f"loading {sources} input{'s' if sources != 1 else ''}", stream=err):
        objects = load(*args.filename, validate=args.validate)
        claims = load(*args.claims, validate=args.validate) if args.claims else None
    job = cluster_input(objects, args.feature_gates, claims)
    for warning in [*objects.warnings, *(claims.warnings if claims else [])]:
        err.write(f"warning: {warning}\n")
    if claims is not None:
        ignored = sum(1 for c in objects.claims if c.status.allocation is None)
        if ignored:
            err.write(
                f"warning: {ignored} claim{'s' if ignored != 1 else ''} without "
                "status.allocation in -f ignored: --claims names the pod's claims\n"
            )
    if not job.pending:
        err.write("warning: no pending claims (claims without status.allocation) to allocate\n")
    return job


def feasibility(
    job: ClusterInput,
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
        return Feasibility.from_outcomes(_reference_outcomes(job, nodes, deadline, progress))
    from draspeed.engine.allocator import Allocator

    return Allocator(job.snapshot()).feasible_nodes(job.pending, list(nodes), deadline=deadline)


def _reference_outcomes(
    job: ClusterInput, nodes: Sequence[Node], deadline: float | None, progress: Progress | None
) -> list[NodeOutcome]:
    from draspeed.engine.feasibility import NodeOutcome
    from draspeed.reference import ReferenceAllocator

    allocator = ReferenceAllocator(job.slices, job.objects.classes, job.allocated, job.features)
    outcomes = []
    for node in nodes:
        try:
            results = allocator.allocate(job.pending, node, deadline=deadline)
        except AllocationTimeout as exc:
            outcomes.append(NodeOutcome(node.name, "timeout", str(exc)))
        except AllocationError as exc:
            from draspeed.errors import NodeAllocationError

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


STATUS_COLOURS = {
    "fits": "green",
    "does-not-fit": "yellow",
    "error": "red",
    "node-error": "red",
    "timeout": "red",
}


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


def _status_colour(column: int) -> Any:
    def colour(row: int, col: int, text: str) -> str | None:
        return STATUS_COLOURS.get(text) if col == column else None

    return colour


def _dump(doc: Any, output: str, out: TextIO) -> None:
    if output == "json":
        json.dump(doc, out, indent=2)
        out.write("\n")
    else:
        yaml.safe_dump(doc, out, sort_keys=False, default_flow_style=False)


# --------------------------------------------------------------------------------------
# feasible
# --------------------------------------------------------------------------------------


def _run_feasible(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    job = _read_input(args, err)
    if args.nodes is None:
        nodes = job.known_nodes()
    else:
        nodes = [find_node(job.objects, name) for name in args.nodes]
    # The compiled engine answers every node in one call: show the time it takes;
    # the reference engine goes node by node: show how far it got.
    total = len(nodes) if args.engine == "reference" else None
    with Progress(f"feasibility on {len(nodes)} nodes", total=total, stream=err) as bar:
        result = feasibility(job, nodes, args.engine, timeout=args.timeout or None, progress=bar)
    if args.output == "table":
        style = Style.for_stream(out)
        out.write(format_table(feasibility_rows(result, job.pending), style, _status_colour(1)))
        fits = len(result.feasible)
        summary = f"fits on {fits} of {len(result)} node{'s' if len(result) != 1 else ''}"
        if fits < len(result):
            summary += " (`draspeed explain --node NAME` says why not)"
        out.write("\n" + style.paint(summary, "dim") + "\n")
    else:
        _dump(result.to_dict(), args.output, out)
    if result.feasible:
        return EXIT_OK
    if len(result) and all(o.status in ("error", "timeout") for o in result):
        return EXIT_ERROR
    return EXIT_UNSUITABLE


# --------------------------------------------------------------------------------------
# explain
# --------------------------------------------------------------------------------------


def render_explanation(explanation: Explanation, style: Style) -> str:
    """The explanation as a person reads it: verdict, main reason, funnel, blockers."""
    lines = []
    status = style.paint(explanation.status, STATUS_COLOURS.get(explanation.status))
    claims = ", ".join(explanation.claims) or "no claims"
    lines.append(f"{style.paint('node', 'bold')} {explanation.node}: {status} ({claims})")
    lines.append(f"  {explanation.summary}")
    if explanation.requests:
        lines.append("")

        def colour(row: int, col: int, text: str) -> str | None:
            f = explanation.requests[row - 1]
            if col == len(rows[0]) - 1:
                return "green" if f.chosen else ("yellow" if f.short else None)
            return None

        rows = explanation.rows()
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


def _run_explain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from draspeed.explain import explain

    job = _read_input(args, err)
    node = find_node(job.objects, args.node)
    with Progress(f"explaining node {node.name}", stream=err):
        explanation = explain(job.snapshot(), job.pending, node, timeout=args.timeout or None)
    if args.output == "table":
        out.write(render_explanation(explanation, Style.for_stream(out)))
    else:
        _dump(explanation.to_dict(), args.output, out)
    return explanation_exit(explanation)


# --------------------------------------------------------------------------------------
# demo
# --------------------------------------------------------------------------------------


def _run_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from draspeed.cli.demo import run_demo

    return run_demo(args.output, args.engine, out, err)


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Entry point; returns the exit status (also used by tests with captured streams)."""
    out, err = out or sys.stdout, err or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse's own usage errors exit 2 already
        return int(exc.code or 0)
    try:
        return int(args.run(args, out, err))
    except DraspeedError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python's shutdown
        # from complaining about the stdout it can no longer flush.
        if out is sys.stdout:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_UNSUITABLE
    except OSError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.write("interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
