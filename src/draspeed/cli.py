"""The ``draspeed`` command: kubectl-shaped input, upstream-shaped answers.

Exit status of ``allocate``: 0 allocated, 1 does not fit on this node (reason on
stderr), 2 bad input or usage (the error names object and field), 3 allocation
error (upstream's text on stderr).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import TYPE_CHECKING, Any, TextIO

import yaml

from draspeed.errors import DraspeedError, InputError
from draspeed.features import Features
from draspeed.jobs import ENGINES, AllocateOutcome, allocate_objects

if TYPE_CHECKING:
    from collections.abc import Sequence

EXIT_OK, EXIT_UNSUITABLE, EXIT_USAGE, EXIT_ERROR = 0, 1, 2, 3

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


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


def _add_allocate(sub: Any) -> None:
    p = sub.add_parser(
        "allocate",
        help="allocate the pending claims of the input on one node",
        description="Allocate every ResourceClaim without status.allocation, together and in "
        "input order (as one pod's claims), on --node. Claims with status.allocation are "
        "in-use state. Prints the claims with status.allocation filled.",
    )
    p.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="FILE",
        help="YAML/JSON file or directory with Kubernetes objects; '-' reads stdin; repeatable",
    )
    p.add_argument(
        "--node", required=True, help="node to allocate on (a Node in the input, or a bare name)"
    )
    p.add_argument("-o", "--output", choices=("yaml", "json", "table"), default="yaml")
    p.add_argument(
        "--feature-gates",
        type=_feature_gates,
        default=Features(),
        help="e.g. DRAAdminAccess=false,DRAPrioritizedList=true (default: all DRA gates on)",
    )
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
        "--validate",
        type=_boolean,
        default=True,
        metavar="true|false",
        help="check objects against the API's validation rules first (default true); "
        "false feeds the allocator what it is given, as upstream's own tests do",
    )
    p.add_argument(
        "--stats",
        action="store_true",
        help="print the search's work counter and wall time to stderr",
    )
    p.set_defaults(run=_run_allocate)


def _add_demo(sub: Any) -> None:
    p = sub.add_parser(
        "demo", help="allocate the built-in demo cluster's claims on each of its nodes"
    )
    p.add_argument("-o", "--output", choices=("yaml", "json", "table"), default="table")
    p.add_argument("--engine", choices=ENGINES, default="fast")
    p.set_defaults(run=_run_demo)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="draspeed",
        description="Kubernetes DRA device allocation, decided exactly as the upstream "
        "allocator decides it.",
    )
    from draspeed import __version__

    parser.add_argument("--version", action="version", version=f"draspeed {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_allocate(sub)
    _add_demo(sub)
    from draspeed.generate.cli import add_generate_parser

    add_generate_parser(sub)
    return parser


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
    from draspeed.load import load

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


def _run_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from draspeed.demo import run_demo

    return run_demo(args.output, args.engine, out, err)


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
    except OSError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
