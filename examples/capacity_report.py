"""A capacity report: how many more pods of one shape fit, where, and what blocks the rest.

The cluster is generated: NVIDIA H100 nodes in dynamic-MIG mode (each GPU can be carved
into MIG slices of several profiles), 40 % of the GPUs already carved up by running
claims. The shape is one MIG 1g.10gb slice per pod. ``analysis.analyze`` places pods
one at a time with the real allocator, committing each, until none fits, and measures
fragmentation first. With ``--plot`` it also draws the utilisation heatmap, the free
placements per MIG profile and the pods-fit curve as nodes are added.

    python examples/capacity_report.py --nodes 4 --plot capacity.png
"""

from __future__ import annotations

import argparse

import draspeed
from draspeed.analysis import AddNodes, analyze, apply_changes, fit
from draspeed.generate import generate

SHAPE = "mig-1g10gb"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4, help="dynamic-MIG nodes (8 H100 each)")
    parser.add_argument("--plot", metavar="PNG", help="also draw the figures (needs matplotlib)")
    parser.add_argument("--curve-points", type=int, default=3, help="nodes added: 0 .. K-1")
    args = parser.parse_args(argv)

    objects = draspeed.load(generate("nvidia-mig", args.nodes, seed=1, allocated=0.4).document())
    snapshot = draspeed.Cluster.from_objects(objects).snapshot()
    [template] = [t for t in objects.templates if t.metadata.name == SHAPE]

    report = analyze(snapshot, template)
    cluster = report.fragmentation.cluster
    print(f"free before placing: {cluster.free_whole_devices} whole GPUs, placements per profile:")
    for profile, free in sorted(cluster.free_by_profile.items()):
        print(f"  {profile:<12} {free}")
    print(f"{report.fit.placed} more pods of {SHAPE} fit ({report.fit.calls} allocate calls)")
    for node in report.fit.nodes:
        failure = node.first_failure
        why = f" - then: {failure.reason}" if failure and failure.reason else ""
        print(f"  {node.node}: {node.total_pods} pods{why}")

    if args.plot:
        from draspeed.analysis import plots

        added = list(range(args.curve_points))
        pods = [
            fit(
                apply_changes(snapshot, [AddNodes(k, kind="nvidia-mig")]),
                template,
                explain_failures=False,
            ).placed
            for k in added
        ]
        plots.save(plots.capacity_figure(report.fragmentation, (added, pods)), args.plot)
        print(f"figures written to {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
