"""A scheduler's loop over draspeed, as kube-scheduler's DRA plugin runs upstream's allocator.

Per pod: PreFilter reads the pod's claims once (``Allocator.prepare``), Filter asks every
node (``allocate(node)``), the pod binds to the first node that fits, and its claims,
now carrying ``status.allocation``, become committed state for the next pod
(``Snapshot.add_allocated``: a new snapshot version that costs what the claims touch).

    python examples/scheduler_loop.py --nodes 8 --pods 20
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import draspeed
from draspeed.generate import decoded_claim, generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=8, help="H100 nodes (8 GPUs each)")
    parser.add_argument("--pods", type=int, default=20, help="pods to schedule")
    args = parser.parse_args(argv)

    generated = generate("nvidia-gpu", nodes=args.nodes, seed=1)
    cluster = draspeed.Cluster.from_objects(draspeed.load(generated.document()))
    snapshot = cluster.snapshot()  # built once; every update below is a new version
    nodes = cluster.known_nodes()

    shapes = ("single-gpu", "two-gpus-same-pcie-root", "eight-gpus")
    started = time.perf_counter()
    bound = 0
    for pod in range(args.pods):
        shape = shapes[pod % len(shapes)]
        claim = decoded_claim(generated, shape, name=f"pod-{pod}-{shape}")
        allocator = draspeed.Allocator(snapshot)
        prepared = allocator.prepare([claim])  # PreFilter: once per pod
        for node in nodes:  # Filter: node after node, first fit wins
            results = prepared.allocate(node)
            if results is not None:
                break
        else:
            print(f"pod-{pod} ({shape}): unschedulable on {len(nodes)} nodes")
            continue
        devices = ", ".join(d.device for d in results[0].devices.results)
        print(f"pod-{pod} ({shape}): {node.metadata.name} [{devices}]")
        allocated = dataclasses.replace(
            claim, status=dataclasses.replace(claim.status, allocation=results[0])
        )
        snapshot = snapshot.add_allocated([allocated])  # the next pod sees these devices
        bound += 1
    seconds = time.perf_counter() - started
    print(f"{bound} of {args.pods} pods bound in {seconds * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
