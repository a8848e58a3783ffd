"""Nodes of ``kubernetes-sigs/dra-example-driver`` (``gpu.example.com``).

One pool named after the node, one slice, devices ``gpu-0 … gpu-{N-1}`` with ``index``,
``uuid`` (``gpu-<uuid>``), ``model`` = ``LATEST-GPU-MODEL``, ``driverVersion`` = 1.0.0
and 80Gi of ``memory``: every device alike, the case where combination pruning matters.
"""

from __future__ import annotations

import random

from draspeed.generate._base import (
    Cluster,
    Draws,
    Obj,
    Taken,
    allocated_claim,
    claim_template,
    device_class,
    exact_request,
    gc_paused,
    integer,
    node,
    node_name,
    node_name_selector,
    pool_slices,
    positive,
    quantity,
    string,
    subrequest,
    version,
)
from draspeed.generate._fill import first_fit_on_random_nodes

DRIVER = "gpu.example.com"
CLASS = "gpu.example.com"

_MODEL = string("LATEST-GPU-MODEL")
_DRIVER_VERSION = version("1.0.0")
_CAPACITY = {"memory": quantity("80Gi")}


def example_classes() -> list[Obj]:
    return [device_class(CLASS, f"device.driver == '{DRIVER}'")]


def example_templates(namespace: str) -> list[Obj]:
    """1 GPU, 2 GPUs of one model (matchAttribute), 2-or-1 GPUs (firstAvailable), a GPU
    with at least 40Gi (selector), and a monitoring claim with admin access (its
    namespace needs the ``resource.kubernetes.io/admin-access: "true"`` label)."""
    return [
        claim_template("single-gpu", namespace, {"requests": [exact_request("gpu", CLASS)]}),
        claim_template(
            "two-gpus-same-model",
            namespace,
            {
                "requests": [exact_request("gpus", CLASS, count=2)],
                "constraints": [{"requests": ["gpus"], "matchAttribute": f"{DRIVER}/model"}],
            },
        ),
        claim_template(
            "two-or-one-gpus",
            namespace,
            {
                "requests": [
                    {
                        "name": "gpus",
                        "firstAvailable": [
                            subrequest("two", CLASS, count=2),
                            subrequest("one", CLASS),
                        ],
                    }
                ]
            },
        ),
        claim_template(
            "gpu-40gi",
            namespace,
            {
                "requests": [
                    exact_request(
                        "gpu",
                        CLASS,
                        selectors=[
                            f"device.capacity['{DRIVER}'].memory.compareTo(quantity('40Gi')) >= 0"
                        ],
                    )
                ]
            },
        ),
        claim_template(
            "gpu-monitoring",
            "monitoring",
            {"requests": [exact_request("gpus", CLASS, all_devices=True, admin_access=True)]},
        ),
    ]


@gc_paused
def example(
    nodes: int,
    seed: int = 0,
    *,
    gpus_per_node: int = 8,
    allocated: float = 0.0,
    namespace: str = "default",
) -> Cluster:
    """``nodes`` nodes with ``gpus_per_node`` identical example GPUs each.

    ``allocated`` is the fraction of GPUs already taken by single-GPU claims.
    """
    positive("nodes", nodes)
    positive("gpus_per_node", gpus_per_node)
    rng = random.Random(seed)
    draws = Draws(seed)
    cluster = Cluster("example", classes=example_classes(), templates=example_templates(namespace))
    indices = [integer(i) for i in range(gpus_per_node)]
    names = [f"gpu-{g}" for g in range(gpus_per_node)]
    for i in range(nodes):
        name = node_name(i)
        cluster.nodes.append(node(name, {"topology.kubernetes.io/zone": f"zone-{i % 3}"}))
        devices = [
            {
                "name": names[g],
                "attributes": {
                    "index": indices[g],
                    "uuid": {"string": f"gpu-{u}"},
                    "model": _MODEL,
                    "driverVersion": _DRIVER_VERSION,
                },
                "capacity": _CAPACITY,
            }
            for g, u in enumerate(draws.uuids(gpus_per_node))
        ]
        cluster.slices += pool_slices(draws, DRIVER, name, {"nodeName": name}, devices)
    spec = cluster.template("single-gpu")["spec"]["spec"]
    count = round(allocated * nodes * gpus_per_node)
    picks = first_fit_on_random_nodes(rng, [gpus_per_node] * nodes, count)
    for k, (n, g) in enumerate(picks):
        pool = node_name(n)
        cluster.claims.append(
            allocated_claim(
                f"gpu-claim-{k}",
                namespace,
                spec,
                [Taken("gpu", DRIVER, pool, f"gpu-{g}")],
                node_name_selector(pool),
            )
        )
    return cluster
