"""What the ``draspeed`` commands share: exit codes, option types, the input options
and how they become a :class:`~draspeed.cluster.Cluster`."""

from __future__ import annotations

import argparse
import re
from typing import Any, TextIO

from draspeed.cli.render import Progress
from draspeed.cluster import ENGINES, Cluster
from draspeed.errors import InputError
from draspeed.features import Features

# Exit status of every command: 1 is "does not fit", never a crash.
EXIT_OK, EXIT_UNSUITABLE, EXIT_USAGE, EXIT_ERROR = 0, 1, 2, 3

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str) -> float:
    """``10s``, ``500ms``, ``1.5m`` or plain seconds → seconds; ``0`` disables."""
    match = _DURATION.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (examples: 10s, 500ms, 2m)")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def feature_gates(text: str) -> Features:
    try:
        return Features.parse(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def boolean(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def node_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected node names separated by commas")
    return names


def command_parser(
    subparsers: Any,
    name: str,
    help: str,
    description: str,
    examples: str,
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """A command's parser, its examples under ``--help``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help,
        description=description,
        epilog=examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kwargs,
    )
    return parser


def add_inputs(p: argparse.ArgumentParser, *, claims: bool) -> None:
    """``-f`` (repeatable), ``--claims`` (if ``claims``), ``--feature-gates``, ``--validate``."""
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
        type=feature_gates,
        default=Features(),
        help="e.g. DRAAdminAccess=false,DRAPrioritizedList=true (default: all DRA gates on)",
    )
    p.add_argument(
        "--validate",
        type=boolean,
        default=True,
        metavar="true|false",
        help="check objects against the API's validation rules first (default true)",
    )


def add_engine(p: argparse.ArgumentParser, help: str | None = None) -> None:
    p.add_argument("--engine", choices=ENGINES, default="fast", help=help)


def add_timeout(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--timeout", type=parse_duration, default=None, help=help)


def read_cluster(args: argparse.Namespace, err: TextIO) -> Cluster:
    """The cluster of ``-f`` and the pod's claims (``--claims``, else the pending
    claims of ``-f``), warnings written to ``err``."""
    from draspeed.api.loader import load

    sources = len(args.filename) + len(getattr(args, "claims", None) or [])
    with Progress(f"loading {sources} input{'s' if sources != 1 else ''}", stream=err):
        objects = load(*args.filename, validate=args.validate)
        claims = load(*args.claims, validate=args.validate) if args.claims else None
    cluster = Cluster.from_objects(objects, features=args.feature_gates, claims=claims)
    for warning in cluster.warnings:
        err.write(f"warning: {warning}\n")
    if claims is not None:
        ignored = sum(1 for c in objects.claims if c.status.allocation is None)
        if ignored:
            err.write(
                f"warning: {ignored} claim{'s' if ignored != 1 else ''} without "
                "status.allocation in -f ignored: --claims names the pod's claims\n"
            )
    if not cluster.pending:
        err.write("warning: no pending claims (claims without status.allocation) to allocate\n")
    return cluster
