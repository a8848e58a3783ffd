"""``draspeed capacity``: how many more pods of a shape fit, where, and what blocks the rest.

Wire it into a parser with :func:`add_capacity_parser` (its runner is
:func:`run_capacity`, ``run(args, out, err) -> exit status``), or run this module:
``python -m draspeed.analysis.cli capacity ...``. Exit status: 0 done, 2 bad
input or usage (the error on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

import yaml

from draspeed.console import Progress, format_table
from draspeed.errors import DraspeedError

if TYPE_CHECKING:
    from draspeed.analysis.capacity import CapacityReport
    from draspeed.analysis.shapes import ShapeSource
    from draspeed.analysis.sweep import ClusterSource
    from draspeed.analysis.whatif import Change, WhatIfReport
    from draspeed.load import Objects
    from draspeed.snapshot import Snapshot

EXIT_OK, EXIT_USAGE = 0, 2

_EXAMPLES = """\
examples:
  # how many more single-GPU pods fit in a cluster dump, and where
  kubectl get resourceslices,deviceclasses,resourceclaims,nodes -o json > cluster.json
  draspeed capacity -f cluster.json --template claim.yaml

  # a generated cluster, a 3:1 mix of two templates it defines, JSON out
  draspeed generate nvidia-mig --nodes 4 --allocated half > mig.yaml
  draspeed capacity -f mig.yaml --template mig-1g10gb --template mig-3g40gb \\
      --ratio mig-1g10gb=3 --ratio mig-3g40gb=1 -o json

  # what if 20 dynamic-MIG nodes were added and node-00001 drained; plot it
  draspeed capacity -f mig.yaml --template mig-3g40gb --add-nodes nvidia-mig:20 \\
      --cordon-node node-00001 --plot capacity.png

  # the live cluster of a kubeconfig context, the curve computed on a Dask cluster
  draspeed capacity --from-cluster --context prod --template claim.yaml \\
      --add-nodes node-00007:50 --curve-points 10 --scheduler tcp://dask:8786

--template takes a file (ResourceClaimTemplates or ResourceClaims, each one pod
shape) or the name (or namespace/name) of a ResourceClaimTemplate in the input.
--add-nodes takes KIND:N[:key=value,...] for a generated kind (nvidia-gpu,
nvidia-mig, example, scheduler-perf, network-attached; options as in
`draspeed generate`, e.g. nvidia-mig:20:pool_per=gpu), NODE:N to copy a node
of the input, or FILE:N for a file holding one node's ResourceSlices (and Node).
"""


def add_capacity_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``capacity`` subcommand; its ``run`` default is :func:`run_capacity`."""
    p = subparsers.add_parser(
        "capacity",
        help="how many more pods of a shape fit, where, and what blocks the rest",
        description=textwrap.fill(
            "Place pods of the given claim templates one by one with the real allocator "
            "until none fits; report pods per node, devices and counters used, the first "
            "failure reason per node, and fragmentation (free whole devices, free MIG "
            "placements per profile, stranded counters, utilisation per DeviceClass). With "
            "what-if changes, report before and after.",
            width=78,
        ),
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = p.add_argument_group("cluster")
    source.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="FILE",
        help="YAML/JSON file or directory with the cluster's objects; '-' reads stdin; repeatable",
    )
    source.add_argument(
        "--from-cluster",
        action="store_true",
        help="read the live cluster of the kubeconfig (needs draspeed[kube])",
    )
    source.add_argument("--context", help="kubeconfig context for --from-cluster")
    source.add_argument(
        "--kubeconfig",
        help="kubeconfig file for --from-cluster (default: $KUBECONFIG or ~/.kube/config)",
    )
    source.add_argument(
        "--chunk-size",
        type=int,
        default=500,
        metavar="N",
        help="objects per list page with --from-cluster (default 500)",
    )
    pods = p.add_argument_group("pods")
    pods.add_argument(
        "--template",
        action="append",
        required=True,
        metavar="TEMPLATE",
        help="pod shape: a file, or a template name of the input; repeatable",
    )
    pods.add_argument(
        "--ratio",
        action="append",
        default=[],
        metavar="NAME=WEIGHT",
        help="weight of a shape in the mix (default 1 each)",
    )
    pods.add_argument(
        "--strategy",
        choices=("first-fit", "round-robin"),
        default="first-fit",
        help="first-fit packs nodes in order; round-robin spreads pods",
    )
    pods.add_argument(
        "--max-pods", type=int, default=None, metavar="N", help="stop after placing N pods"
    )
    pods.add_argument(
        "--no-explain",
        action="store_true",
        help="skip the reason of each node's first failure (faster)",
    )
    whatif = p.add_argument_group("what-if")
    whatif.add_argument(
        "--add-nodes",
        action="append",
        default=[],
        metavar="SPEC",
        help="add nodes: KIND:N[:k=v,...], NODE:N or FILE:N; repeatable",
    )
    whatif.add_argument(
        "--remove-node",
        action="append",
        default=[],
        metavar="NODE",
        help="remove a node and its node-local slices; repeatable",
    )
    whatif.add_argument(
        "--cordon-pool",
        action="append",
        default=[],
        metavar="[DRIVER/]POOL",
        help="taint every device of a pool NoSchedule; repeatable",
    )
    whatif.add_argument(
        "--cordon-node",
        action="append",
        default=[],
        metavar="NODE",
        help="taint every device of a node's local pools; repeatable",
    )
    whatif.add_argument(
        "--curve-points",
        type=int,
        default=None,
        metavar="K",
        help="with --add-nodes: pods that fit at K+1 evenly spaced node counts "
        "(default 5 when --plot is given, else no curve)",
    )
    run = p.add_argument_group("output and execution")
    run.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    run.add_argument(
        "--placements",
        action="store_true",
        help="list every placement (pod, node, devices) in json/yaml output",
    )
    run.add_argument(
        "--plot",
        metavar="FILE",
        help="write utilisation, free placements and the fit curve (png, svg, pdf)",
    )
    run.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the curve's scenarios on a Dask cluster (tcp://host:8786)",
    )
    run.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="local worker processes for the curve (default: CPU count)",
    )
    p.set_defaults(run=run_capacity)
    return p


# ------------------------------------------------------------------------------ inputs


def _read_cluster(args: argparse.Namespace, err: TextIO) -> Objects:
    from draspeed.load import load

    if args.from_cluster:
        if args.filename:
            raise _Usage("give either -f or --from-cluster, not both")
        from draspeed.analysis.live import list_cluster

        with Progress("listing the cluster", stream=err) as bar:

            def listed(what: str, count: int) -> None:
                bar.label = f"listing {what} ({count})"

            return list_cluster(
                args.context,
                kubeconfig=args.kubeconfig,
                page_size=args.chunk_size,
                progress=listed,
            )
    if not args.filename:
        raise _Usage("give the cluster with -f FILE or --from-cluster")
    return load(*args.filename)


def _shapes(args: argparse.Namespace, objects: Objects) -> list[ShapeSource]:
    from draspeed.load import load

    shapes: list[ShapeSource] = []
    by_name = {t.metadata.name: t for t in objects.templates}
    by_key = {f"{t.metadata.namespace}/{t.metadata.name}": t for t in objects.templates}
    for spec in args.template:
        if spec == "-" or os.path.exists(spec):
            found = load(spec)
            pending = [c for c in found.claims if c.status.allocation is None]
            if not found.templates and not pending:
                raise _Usage(f"{spec}: no ResourceClaimTemplate or pending ResourceClaim")
            shapes.extend(found.templates)
            shapes.extend(pending)
        elif spec in by_key or spec in by_name:
            shapes.append(by_key.get(spec) or by_name[spec])
        else:
            known = ", ".join(sorted(by_name)) or "none"
            raise _Usage(
                f"--template {spec}: no such file, nor a ResourceClaimTemplate of "
                f"the input (templates: {known})"
            )
    return shapes


def _ratios(args: argparse.Namespace) -> dict[str, float] | None:
    if not args.ratio:
        return None
    out = {}
    for item in args.ratio:
        name, sep, weight = item.partition("=")
        try:
            out[name] = float(weight)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise _Usage(f"--ratio {item}: expected NAME=WEIGHT")
    return out


def _option_value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_add_nodes(spec: str, snapshot: Snapshot) -> Change:
    """``KIND:N[:k=v,...]``, ``NODE:N`` or ``FILE:N`` → an AddNodes change."""
    from draspeed.analysis.whatif import AddNodes
    from draspeed.generate import KINDS

    parts = spec.split(":")
    if len(parts) not in (2, 3):
        raise _Usage(f"--add-nodes {spec}: expected KIND:N[:key=value,...], NODE:N or FILE:N")
    what, count_text = parts[0], parts[1]
    try:
        count = int(count_text)
    except ValueError:
        raise _Usage(f"--add-nodes {spec}: {count_text!r} is not a node count") from None
    options: dict[str, Any] = {}
    if len(parts) == 3:
        for item in filter(None, parts[2].split(",")):
            key, sep, value = item.partition("=")
            if not sep:
                raise _Usage(f"--add-nodes {spec}: option {item!r} is not key=value")
            options[key.replace("-", "_")] = _option_value(value)
    if what in KINDS:
        return AddNodes(count, kind=what, options=options)
    if options:
        raise _Usage(f"--add-nodes {spec}: options are for generated kinds only")
    if any(n.name == what for n in snapshot.nodes):
        return AddNodes(count, like=what)
    if os.path.exists(what):
        return AddNodes(count, template=_file_template(what), prefix="new-node")
    raise _Usage(
        f"--add-nodes {spec}: {what!r} is not a generated kind "
        f"({', '.join(KINDS)}), a node of the input or a file"
    )


def _file_template(path: str) -> Any:
    from draspeed.analysis.whatif import NodeTemplate
    from draspeed.api.model import Node, ObjectMeta
    from draspeed.load import load

    found = load(path)
    names = {s.spec.node_name for s in found.slices if s.spec.node_name}
    if len(names) != 1:
        raise _Usage(
            f"{path}: expected the node-local ResourceSlices of exactly one node "
            f"(found nodes: {', '.join(sorted(names)) or 'none'})"
        )
    [name] = names
    node = next((n for n in found.nodes if n.name == name), Node(metadata=ObjectMeta(name=name)))
    slices = tuple(s for s in found.slices if s.spec.node_name == name)
    return NodeTemplate(node, slices, tuple(found.classes))


def _changes(args: argparse.Namespace, snapshot: Snapshot) -> list[Change]:
    from draspeed.analysis.whatif import Cordon, RemoveNodes

    changes: list[Change] = [parse_add_nodes(s, snapshot) for s in args.add_nodes]
    if args.remove_node:
        changes.append(RemoveNodes(tuple(args.remove_node)))
    if args.cordon_pool or args.cordon_node:
        changes.append(Cordon(pools=tuple(args.cordon_pool), nodes=tuple(args.cordon_node)))
    return changes


class _Usage(Exception):
    """A usage error: printed as ``error: ...``, exit status 2."""


# --------------------------------------------------------------------------------- run


def run_capacity(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The ``capacity`` subcommand (``args`` from :func:`add_capacity_parser`)."""
    try:
        return _run(args, out, err)
    except _Usage as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE
    except ValueError as exc:
        if isinstance(exc, DraspeedError):
            raise
        err.write(f"error: {exc}\n")
        return EXIT_USAGE
    except ImportError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from draspeed.analysis.capacity import analyze, snapshot_from_objects
    from draspeed.analysis.live import ClusterReadError
    from draspeed.analysis.whatif import WhatIfReport, apply_changes

    try:
        objects = _read_cluster(args, err)
    except ClusterReadError as exc:
        raise _Usage(str(exc)) from exc
    for warning in objects.warnings:
        err.write(f"warning: {warning}\n")
    base = snapshot_from_objects(objects)
    shapes = _shapes(args, objects)
    ratios = _ratios(args)
    changes = _changes(args, base)
    options: dict[str, Any] = {
        "strategy": args.strategy,
        "ratios": ratios,
        "max_pods": args.max_pods,
        "explain_failures": not args.no_explain,
    }

    def analyze_with_bar(snapshot: Snapshot, label: str) -> CapacityReport:
        # The bar counts nodes no shape fits on any more; the label, pods placed.
        with Progress(label, total=len(snapshot.nodes), stream=err) as bar:

            def placed(pods: int, done: int, total: int) -> None:
                bar.done = done
                bar.label = f"{label}: {pods} pods placed, nodes full"

            return analyze(snapshot, shapes, **options, progress=placed)

    before = analyze_with_bar(base, "fit")
    result: CapacityReport | WhatIfReport = before
    if changes:
        after = analyze_with_bar(apply_changes(base, changes), "fit after")
        result = WhatIfReport([c.describe() for c in changes], before, after)
    curve = _curve(args, objects, shapes, ratios, changes, err)
    frag = (result.after if isinstance(result, WhatIfReport) else result).fragmentation
    if args.plot:
        from draspeed.analysis import plots

        plots.save(plots.capacity_figure(frag, curve), args.plot)
    _print(result, curve, args, out)
    return EXIT_OK


def _curve(
    args: argparse.Namespace,
    objects: Objects,
    shapes: list[ShapeSource],
    ratios: dict[str, float] | None,
    changes: list[Change],
    err: TextIO,
) -> tuple[list[int], list[int]] | None:
    """Pods that fit at evenly spaced numbers of added nodes (a sweep of what-ifs)."""
    import dataclasses

    from draspeed.analysis.sweep import CapacityScenario, sweep
    from draspeed.analysis.whatif import AddNodes

    adds = [c for c in changes if isinstance(c, AddNodes)]
    points = args.curve_points if args.curve_points is not None else (5 if args.plot else 0)
    if not adds or points <= 0:
        return None
    total = sum(a.count for a in adds)
    points = min(points, total)
    others = [c for c in changes if not isinstance(c, AddNodes)]
    cluster = _cluster_source(args, objects)
    scenarios = []
    added = []
    for i in range(points + 1):
        # Half-up rounding: every change grows by its share of the step.
        scaled = [dataclasses.replace(a, count=(a.count * i + points // 2) // points) for a in adds]
        added.append(sum(a.count for a in scaled))
        scenarios.append(
            CapacityScenario(
                f"added-{added[-1]}",
                cluster,
                tuple(shapes),
                (*scaled, *others),
                strategy=args.strategy,
                ratios=tuple(ratios.get(_shape_name(s), 1.0) for s in shapes) if ratios else None,
                max_pods=args.max_pods,
            )
        )
    executor = None
    client = None
    if args.scheduler:
        try:
            from dask.distributed import Client
        except ImportError as exc:
            raise _Usage("--scheduler needs dask: pip install 'draspeed[analysis]'") from exc
        client = Client(args.scheduler)
        executor = client
    try:
        with Progress("what-if curve", total=len(scenarios), stream=err) as bar:

            def finished(done: int, total: int) -> None:
                bar.done = done

            results = sweep(scenarios, executor, max_workers=args.workers, progress=finished)
    finally:
        if client is not None:
            client.close()
    return added, [r.placed for r in results]


def _shape_name(shape: ShapeSource) -> str:
    from draspeed.analysis.shapes import PodShape

    return PodShape.of(shape).name


def _cluster_source(args: argparse.Namespace, objects: Objects) -> ClusterSource:
    from draspeed.analysis.sweep import FileCluster, InlineCluster

    local_files = (
        not args.scheduler
        and not args.from_cluster
        and all(f != "-" and os.path.exists(f) for f in args.filename)
    )
    if local_files:
        return FileCluster(tuple(args.filename))
    return InlineCluster(objects)


# ------------------------------------------------------------------------------ output


def _print(
    result: CapacityReport | WhatIfReport,
    curve: tuple[list[int], list[int]] | None,
    args: argparse.Namespace,
    out: TextIO,
) -> None:
    from draspeed.analysis.whatif import WhatIfReport

    if args.output in ("json", "yaml"):
        doc = (
            result.to_dict()
            if isinstance(result, WhatIfReport)
            else result.to_dict(placements=args.placements)
        )
        if isinstance(result, WhatIfReport) and args.placements:
            doc["before"] = result.before.to_dict(placements=True)
            doc["after"] = result.after.to_dict(placements=True)
        if curve is not None:
            doc["curve"] = [{"nodesAdded": a, "pods": p} for a, p in zip(*curve, strict=True)]
        if args.output == "json":
            json.dump(doc, out, indent=2)
            out.write("\n")
        else:
            yaml.safe_dump(doc, out, sort_keys=False, default_flow_style=False)
        return
    if isinstance(result, WhatIfReport):
        out.write("Before\n======\n")
        _print_report(result.before, out)
        out.write("\nAfter: " + "; ".join(result.changes) + "\n" + "=" * 6 + "\n")
        _print_report(result.after, out)
        delta = result.delta()
        out.write("\nChange\n======\n")
        out.write(
            f"pods placed: {delta['placed']:+d}  ("
            + ", ".join(f"{k}: {v:+d}" for k, v in delta["placedByShape"].items())
            + ")\n"
        )
        out.write(f"free whole devices: {delta['freeWholeDevices']:+d}\n")
        if delta["freeByProfile"]:
            out.write(
                "free placements: "
                + ", ".join(f"{k}: {v:+d}" for k, v in delta["freeByProfile"].items())
                + "\n"
            )
        out.write(
            "devices: " + ", ".join(f"{k} {v:+d}" for k, v in delta["devices"].items()) + "\n"
        )
    else:
        _print_report(result, out)
    if curve is not None:
        out.write("\nNODES ADDED   PODS\n")
        for a, p in zip(*curve, strict=True):
            out.write(f"{a:<13} {p}\n")


def _print_report(report: CapacityReport, out: TextIO) -> None:
    fit = report.fit
    shapes = ", ".join(f"{k}: {v}" for k, v in fit.placed_by_shape.items())
    out.write(
        f"{fit.placed} pods fit ({shapes}); strategy {fit.strategy}, stopped: "
        f"{fit.stopped}; {fit.calls} allocate calls, {fit.work} search steps, "
        f"{fit.seconds:.2f}s\n\n"
    )
    rows = [["NODE", "PODS", "DEVICES IN USE", "FREE", "STRANDED", "FIRST FAILURE"]]
    for n in fit.nodes:
        stranded = ", ".join(f"{k}={v}" for k, v in n.usage.stranded.items()) or "-"
        failure = "-"
        if n.first_failure is not None:
            f = n.first_failure
            failure = f"{f.shape}: {f.reason or f.status}"
        d = n.usage.devices
        rows.append(
            [n.node, str(n.total_pods), f"{d.in_use}/{d.total}", str(d.free), stranded, failure]
        )
    out.write(format_table(rows))
    frag = report.fragmentation
    c = frag.cluster
    d = c.usage.devices
    out.write("\nFragmentation (before placing)\n")
    out.write(
        f"  devices: {d.total} total, {d.in_use} in use, {d.cordoned} cordoned, "
        f"{d.blocked} blocked by counters, {d.free} free\n"
    )
    out.write(f"  free whole devices: {c.free_whole_devices}\n")
    if c.free_by_profile:
        out.write(
            "  free placements per profile: "
            + ", ".join(f"{k}={v}" for k, v in c.free_by_profile.items())
            + "\n"
        )
    stranded = ", ".join(f"{k}={v}" for k, v in c.usage.stranded.items())
    out.write(f"  stranded counters: {stranded or 'none'}\n")
    for pool, why in c.usage.unusable_pools.items():
        out.write(f"  pool {pool} is skipped by the allocator: {why}\n")
    rows = [["CLASS", "DEVICES", "IN USE", "FREE", "UTILISATION"]]
    for name, counts in c.classes.items():
        rows.append(
            [
                name,
                str(counts.total),
                str(counts.in_use),
                str(counts.free),
                f"{100 * c.utilisation(name):.1f}%",
            ]
        )
    out.write("\n")
    out.write("".join(f"  {line}\n" for line in format_table(rows).splitlines()))
    for name, error in frag.class_errors.items():
        out.write(f"  class {name}: {error}\n")


# ------------------------------------------------------------------------- standalone


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """``python -m draspeed.analysis.cli capacity ...`` (same as ``draspeed capacity``)."""
    out, err = out or sys.stdout, err or sys.stderr
    parser = argparse.ArgumentParser(prog="draspeed")
    add_capacity_parser(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        return int(args.run(args, out, err))
    except (DraspeedError, OSError) as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
