"""What if: the same capacity question before and after changing the cluster.

Two shapes share a dynamic-MIG cluster (three 1g.10gb slices for every 3g.40gb one);
the change adds two nodes of the same kind, retires one node and cordons the pools of
another. ``analysis.what_if`` answers both sides with the real allocator and prints
the difference: pods placed per shape, free whole GPUs, free placements per profile.

    python examples/what_if.py --nodes 4
"""

from __future__ import annotations

import argparse
import json

import draspeed
from draspeed.analysis import AddNodes, Change, Cordon, RemoveNodes, what_if
from draspeed.generate import generate

SHAPES = {"mig-1g10gb": 3.0, "mig-3g40gb": 1.0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4, help="dynamic-MIG nodes (at least 3)")
    args = parser.parse_args(argv)
    if args.nodes < 3:
        parser.error("--nodes must be at least 3: one is removed and one cordoned")

    objects = draspeed.load(generate("nvidia-mig", nodes=args.nodes, seed=1).document())
    snapshot = draspeed.Cluster.from_objects(objects).snapshot()
    templates = [t for t in objects.templates if t.metadata.name in SHAPES]
    names = [n.metadata.name for n in snapshot.nodes]
    changes: list[Change] = [
        AddNodes(2, kind="nvidia-mig"),
        RemoveNodes((names[0],)),
        Cordon(nodes=(names[1],)),
    ]

    report = what_if(snapshot, templates, changes, ratios=SHAPES, explain_failures=False)
    for change in report.changes:
        print(f"change: {change}")
    print(f"before: {report.before.fit.placed} pods {report.before.fit.placed_by_shape}")
    print(f"after:  {report.after.fit.placed} pods {report.after.fit.placed_by_shape}")
    print(json.dumps(report.delta(), indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
