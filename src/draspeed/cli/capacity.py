"""``draspeed capacity``: how many more pods of a shape fit, where, and what blocks the rest.

Exit status: 0 done, 2 bad input or usage (the error on stderr), 4 the cluster could
not be read (--from-cluster).
"""

from __future__ import annotations

import argparse
import textwrap
from typing import TYPE_CHECKING, Any, TextIO

from draspeed.cli.capacity_inputs import (
    UsageError,
    cluster_source,
    parse_add_nodes,
    parse_changes,
    parse_compare,
    parse_ratios,
    parse_shapes,
    parse_strategy,
    read_cluster,
    run_sweep,
    shape_name,
)
from draspeed.cli.capacity_report import print_result
from draspeed.cli.options import (
    EXIT_CODES,
    EXIT_OK,
    EXIT_USAGE,
    add_source,
    add_timeout,
    positive,
    positive_seconds,
)
from draspeed.cli.output import add_output
from draspeed.cli.render import Progress
from draspeed.cluster import Cluster
from draspeed.errors import DraspeedError

if TYPE_CHECKING:
    from draspeed.analysis.capacity import CapacityReport
    from draspeed.analysis.shapes import ShapeSource
    from draspeed.analysis.whatif import Change, WhatIfReport
    from draspeed.api.loader import Objects
    from draspeed.engine.snapshot import Snapshot

__all__ = ["add_parser", "parse_add_nodes", "run"]

_EXAMPLES = (
    """\
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

  # every strategy next to the optimal bound, and what fragmentation costs
  draspeed capacity -f mig.yaml --template mig-1g10gb --template mig-3g40gb \\
      --compare all --bound

  # how many dynamic-MIG nodes to add for 500 pods of the mix to fit
  draspeed capacity -f mig.yaml --template mig-1g10gb --template mig-3g40gb \\
      --need 500 --node-type nvidia-mig

  # a day of arrivals and departures: waits, queue and utilisation over time
  draspeed capacity -f mig.yaml --template mig-1g10gb --template mig-3g40gb \\
      --trace day.csv --plot day.png

--template takes a file (ResourceClaimTemplates or ResourceClaims, each one pod
shape) or the name (or namespace/name) of a ResourceClaimTemplate in the input.
--add-nodes takes KIND:N[:key=value,...] for a generated kind (nvidia-gpu,
nvidia-mig, example, scheduler-perf, network-attached; options as in
`draspeed generate`, e.g. nvidia-mig:20:pool_per=gpu), NODE:N to copy a node
of the input, or FILE:N for a file holding one node's ResourceSlices (and Node);
--node-type takes the same without the count.
--trace takes CSV (with a header) or JSON lines, one pod per row: arrival
(seconds), shape (a template's name), and duration (seconds it runs) or departure
(when it is deleted, running or not).

"""
    + EXIT_CODES
    + "\n"
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``capacity`` command."""
    p = subparsers.add_parser(
        "capacity",
        help="how many more pods of a shape fit, where, and what blocks the rest",
        description=textwrap.fill(
            "Place pods of the given claim templates one by one with the real allocator "
            "until none fits; report pods per node, devices and counters used, the first "
            "failure reason per node, and fragmentation (free whole devices, free MIG "
            "placements per profile, stranded counters, utilisation per DeviceClass) "
            "before and after placing. With what-if changes, report before and after "
            "them; with --bound, the optimal bound and what the strategies lose to "
            "fragmentation; with --need, how many nodes to add; with --trace, a replay "
            "of arrivals and departures over time.",
            width=78,
        ),
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = p.add_argument_group("cluster")
    add_source(source)
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
        default="first-fit",
        metavar="STRATEGY",
        help="node order: first-fit (packs nodes in order), round-robin (spreads pods), "
        "least-allocated or most-allocated (as kube-scheduler scores nodes); add "
        "+best-fit for the best-fit device choice on partitionable devices (best-fit "
        "alone: first-fit+best-fit); default first-fit, upstream's device choice",
    )
    pods.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="STRATEGY",
        help="also count the pods another strategy places ('all': every strategy); repeatable",
    )
    pods.add_argument(
        "--bound",
        action="store_true",
        help="the optimal bound (scipy MILP): the most pods the best device choice "
        "fits, per node and cluster, and the fill's gap to it",
    )
    pods.add_argument(
        "--time-limit",
        type=positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help="solver time per node state for --bound (default 10)",
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
        type=positive,
        default=None,
        metavar="K",
        help="with --add-nodes: pods that fit at K+1 evenly spaced node counts "
        "(default 5 when --plot is given, else no curve)",
    )
    inverse = p.add_argument_group("how many nodes to add")
    inverse.add_argument(
        "--need",
        type=positive,
        default=None,
        metavar="N",
        help="how many nodes of --node-type must be added for N pods of the mix to fit",
    )
    inverse.add_argument(
        "--node-type",
        metavar="SPEC",
        help="the node type for --need: KIND[:k=v,...], NODE (a node of the input) or FILE",
    )
    traces = p.add_argument_group("traces over time")
    traces.add_argument(
        "--trace",
        action="append",
        default=[],
        metavar="FILE",
        help="replay a trace (CSV or JSON lines: arrival, shape, duration or departure) "
        "on the cluster; several run as a sweep (--workers, --scheduler); repeatable",
    )
    traces.add_argument(
        "--trace-samples",
        action="store_true",
        help="with -o json/yaml: the state after every event and every pod's run",
    )
    execution = p.add_argument_group("output and execution")
    add_output(execution, ("table", "wide", "json", "yaml", "name"), "table")
    execution.add_argument(
        "--placements",
        action="store_true",
        help="list every placement (pod, node, devices) in json/yaml output",
    )
    execution.add_argument(
        "--plot",
        metavar="FILE",
        help="write utilisation, free placements and the fit curve (png, svg, pdf)",
    )
    execution.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the curve's scenarios on a Dask cluster (tcp://host:8786)",
    )
    execution.add_argument(
        "--workers",
        type=positive,
        default=None,
        metavar="N",
        help="local worker processes for the curve (default: CPU count)",
    )
    add_timeout(
        execution,
        "bound each allocation (e.g. 10s): a pod the search has not placed on a node by "
        "then does not go there, and the node's first failure says timeout",
    )
    p.set_defaults(run=run)
    return p


# --------------------------------------------------------------------------------- run


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The ``capacity`` command."""
    try:
        return _run(args, out, err)
    except UsageError as exc:
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
    from draspeed.analysis.capacity import analyze
    from draspeed.analysis.whatif import WhatIfReport, apply_changes

    objects = read_cluster(args, err)
    for warning in objects.warnings:
        err.write(f"warning: {warning}\n")
    parse_strategy(args)
    base = Cluster.from_objects(objects).snapshot()
    shapes = parse_shapes(args, objects)
    ratios = parse_ratios(args)
    changes = parse_changes(args, base)
    if args.trace:
        from draspeed.cli.capacity_trace import run_traces

        state = apply_changes(base, changes)
        run_traces(args, objects, state, shapes, changes, out, err)
        return EXIT_OK
    if args.need is not None:
        from draspeed.cli.capacity_need import run_need

        run_need(args, apply_changes(base, changes), shapes, ratios, out, err)
        return EXIT_OK
    options: dict[str, Any] = {
        "strategy": args.strategy,
        "ratios": ratios,
        "max_pods": args.max_pods,
        "explain_failures": not args.no_explain,
        "compare": parse_compare(args),
        "bound": args.bound,
        "time_limit": args.time_limit,
        "timeout": args.timeout or None,
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
    if args.plot:
        _plot(result, curve, args.plot)
    print_result(result, curve, args, out)
    return EXIT_OK


def _plot(
    result: CapacityReport | WhatIfReport,
    curve: tuple[list[int], list[int]] | None,
    path: str,
) -> None:
    """The cluster after placement (before and after, for a what-if)."""
    from draspeed.analysis import plots
    from draspeed.analysis.whatif import WhatIfReport

    if isinstance(result, WhatIfReport):
        before, after = result.before.after, result.after.after
        assert before is not None and after is not None
        figure = plots.what_if_figure(before, after, curve, _strategies(result.after))
    else:
        assert result.after is not None
        figure = plots.capacity_figure(result.after, curve, _strategies(result))
    plots.save(figure, path)


def _strategies(report: CapacityReport) -> tuple[dict[str, int], int | None] | None:
    """Pods placed per strategy and the bound, when either was asked for."""
    if not report.strategies and report.bound is None:
        return None
    return report.placed_by_strategy(), None if report.bound is None else report.bound.optimal


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

    from draspeed.analysis.sweep import CapacityScenario
    from draspeed.analysis.whatif import AddNodes

    adds = [c for c in changes if isinstance(c, AddNodes)]
    points = args.curve_points if args.curve_points is not None else (5 if args.plot else 0)
    if not adds or points <= 0:
        return None
    total = sum(a.count for a in adds)
    points = min(points, total)
    others = [c for c in changes if not isinstance(c, AddNodes)]
    cluster = cluster_source(args, objects)
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
                ratios=tuple(ratios.get(shape_name(s), 1.0) for s in shapes) if ratios else None,
                max_pods=args.max_pods,
                timeout=args.timeout or None,
            )
        )
    results = run_sweep(scenarios, args, err, "what-if curve")
    return added, [r.placed for r in results]
