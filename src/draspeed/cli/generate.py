"""``draspeed generate KIND --nodes N [--seed S] [-o yaml|json] [kind options]``.

Prints a ``kind: List`` of Nodes, DeviceClasses, ResourceSlices, ResourceClaimTemplates
and already-allocated ResourceClaims (``kubectl apply -f`` takes it; the claims'
status is in-use state for ``draspeed allocate``). ``--claim TEMPLATE`` adds pending
claims made from the templates::

    draspeed generate nvidia-mig --nodes 4 --allocated half --claim mig-3g40gb \
        | draspeed allocate -f - --node node-00002
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from draspeed.api import names
from draspeed.cli.options import EXIT_OK, EXIT_USAGE, command_parser, positive
from draspeed.cli.output import add_output, emit, emit_names
from draspeed.generate import KINDS, generate
from draspeed.generate._base import parse_fill
from draspeed.generate.scheduler_perf import SHAPES

EXAMPLES = """\
examples:
  draspeed generate nvidia-mig --nodes 4 --allocated half --claim mig-3g40gb > cluster.yaml
  draspeed generate example --nodes 2 --claim single-gpu | draspeed feasible -f -
"""

_HELP = {
    "nvidia-gpu": "8x H100 80GB full-GPU nodes (gpu.nvidia.com)",
    "nvidia-mig": "8x H100 80GB nodes in dynamic-MIG mode: counter sets, full GPUs, "
    "every placement",
    "example": "dra-example-driver nodes (gpu.example.com): identical GPUs",
    "scheduler-perf": "upstream scheduler_perf DRA shapes (test-driver.cdi.k8s.io)",
    "network-attached": "rack pools (nodeSelector), dual-homed links (perDeviceNodeSelection) "
    "and shared volumes (allNodes, consumable capacity)",
}


def _fraction(text: str) -> float:
    try:
        return parse_fill(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _common() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--nodes", type=positive, required=True, metavar="N", help="number of nodes")
    p.add_argument(
        "--seed", type=int, default=0, help="random seed (default 0): same seed, same output"
    )
    add_output(p, ("yaml", "json", "name"), "yaml")
    p.add_argument(
        "--claim",
        action="append",
        default=[],
        metavar="TEMPLATE",
        help="also print a pending ResourceClaim made from this claim template "
        "(repeatable), ready for `draspeed allocate`",
    )
    return p


def _allocated(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--allocated",
        type=_fraction,
        default=0.0,
        metavar="FRACTION",
        help=f"share of {what} already allocated by running claims: a fraction in "
        "[0, 1] or empty/half/full (default 0)",
    )


def _namespace_name(text: str) -> str:
    problem = names.dns_label_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{text!r}: {problem}")
    return text


def _namespace(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-n",
        "--namespace",
        type=_namespace_name,
        default="default",
        help="namespace of the claim templates and claims (default: default)",
    )


def add_parser(subparsers: Any) -> None:
    """Add the ``generate`` command (one subcommand per kind)."""
    parser = command_parser(
        subparsers,
        "generate",
        "print a realistic generated cluster (seeded, deterministic)",
        "Generate a cluster of resource.k8s.io/v1 objects as real DRA drivers "
        "publish them, with matching DeviceClasses and claim templates.",
        EXAMPLES,
    )
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    common = _common()
    for kind in KINDS:
        p = command_parser(kinds, kind, _HELP[kind], _HELP[kind], EXAMPLES, parents=[common])
        if kind in ("nvidia-gpu", "nvidia-mig", "example"):
            p.add_argument(
                "--gpus-per-node",
                type=positive,
                default=8,
                metavar="N",
                help="GPUs per node (default 8)",
            )
        if kind == "nvidia-mig":
            p.add_argument(
                "--pool-per",
                choices=("node", "gpu"),
                default="node",
                help="one pool per node (default) or one pool per GPU",
            )
            p.add_argument(
                "--media-extensions",
                action="store_true",
                help="add the 1g.10gb+me placements (26 devices per GPU, not 19)",
            )
        if kind in ("nvidia-gpu", "example"):
            _allocated(p, "GPUs")
        elif kind == "nvidia-mig":
            _allocated(p, "GPUs (each carved into random MIG placements)")
        if kind == "scheduler-perf":
            p.add_argument("--shape", choices=SHAPES, default="basic")
            p.add_argument(
                "--devices-per-node",
                type=positive,
                default=10,
                metavar="M",
                help="devices per node of the basic driver (default 10)",
            )
            p.add_argument(
                "--fill",
                type=_fraction,
                default=0.0,
                metavar="FILL",
                help="pre-allocated share: empty, half, full (all but 10 devices, "
                "as upstream) or a fraction; basic and partitionable shapes",
            )
            p.add_argument(
                "--pools-per-node",
                type=positive,
                default=20,
                metavar="P",
                help="partitionable / consumable-capacity pools per node (default 20)",
            )
        if kind == "network-attached":
            p.add_argument("--nodes-per-rack", type=positive, default=8, metavar="N")
            p.add_argument("--gpus-per-rack", type=positive, default=16, metavar="N")
            p.add_argument(
                "--volumes",
                type=positive,
                default=32,
                metavar="N",
                help="shared volumes in the cluster-wide pool (default 32)",
            )
        if kind != "scheduler-perf":
            _namespace(p)
    parser.set_defaults(run=run)


# Options of each kind: argparse dest -> keyword argument of the generator.
_OPTIONS = {
    "nvidia-gpu": ("gpus_per_node", "allocated", "namespace"),
    "nvidia-mig": ("gpus_per_node", "pool_per", "media_extensions", "allocated", "namespace"),
    "example": ("gpus_per_node", "allocated", "namespace"),
    "scheduler-perf": ("shape", "devices_per_node", "fill", "pools_per_node"),
    "network-attached": ("nodes_per_rack", "gpus_per_rack", "volumes", "namespace"),
}


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    options = {name: getattr(args, name) for name in _OPTIONS[args.kind]}
    try:
        cluster = generate(args.kind, args.nodes, args.seed, **options)
    except ValueError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE
    document = cluster.document()
    try:
        for i, template in enumerate(args.claim):
            document["items"].append(cluster.claim(template, f"{template}-{i}"))
    except KeyError as exc:
        err.write(f"error: {exc.args[0]}\n")
        return EXIT_USAGE
    if args.output.format == "name":
        emit_names((_name(item) for item in document["items"]), out)
    else:
        emit(document, args.output, out)
    return EXIT_OK


def _name(item: dict[str, Any]) -> str:
    """``kind.group/name`` as ``kubectl -o name`` prints an object."""
    group = item["apiVersion"].rpartition("/")[0]
    kind = item["kind"].lower() + (f".{group}" if group else "")
    return f"{kind}/{item['metadata']['name']}"
