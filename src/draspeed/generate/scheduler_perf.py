"""The DRA shapes of upstream's scheduler_perf (``test/integration/scheduler_perf/dra``).

Nodes ``scheduler-perf-dra-<i>`` (label ``node-with-dra=true``), driver
``test-driver.cdi.k8s.io``, class ``test-class``. Shapes:

- ``basic``: what ``createResourceDriver`` publishes: per node one pool and slice of
  ``devices_per_node`` devices ``instance-<k>`` (model A100, family GPU, driverVersion
  1.2.3, ``dra.example.com/numa`` = k, 1Gi of memory). ``fill`` mirrors the
  SteadyState runs: ``empty``, ``half`` of the devices, or ``full`` (all but 10),
  pre-allocated by one-device claims in namespace ``init``, each on a random node.
- ``partitionable``: ``resourceslice-partitionable*.yaml``: ``pools_per_node`` × nodes
  pools visible from every DRA node, each a counter set of four counters and six
  devices consuming them; ``fill`` pre-allocates ``device-2-counters-1`` of that share
  of the pools (the selector claim of the upstream run), so a claim for two devices
  with ``matchAttribute`` must backtrack once.
- ``backtracking``: ``resourceslice-partitionable-backtracking*.yaml``, one pool per
  node: 8 devices, each one cpu counter and 20Gi/10Gi×7 of a 70Gi memory counter; the
  count-7 claim must backtrack past ``device-1``.
- ``consumable-capacity``: ``resourceslice-consumablecapacity.yaml``: ``pools_per_node``
  × nodes pools of two ``allowMultipleAllocations`` devices with 80Gi of consumable
  memory (plus the basic devices, as upstream), and the two-request claim of 10Gi each.

Upstream's partitionable and consumable-capacity templates put counters and devices in
one slice, which the v1 API no longer accepts: here each pool has a counter slice and a
device slice. Upstream's backtracking template selects nodes by label; here each node
has its own pool (``nodeName``) so the per-node cost is the same on every node.
"""

from __future__ import annotations

import random

from draspeed.generate._base import (
    Cluster,
    Obj,
    Taken,
    allocated_claim,
    boolean,
    chunks,
    claim_template,
    device_class,
    exact_request,
    gc_paused,
    integer,
    label_selector,
    node,
    node_name_selector,
    positive,
    quantity,
    resource_slice,
    string,
    subrequest,
    version,
)
from draspeed.generate._fill import first_fit_on_random_nodes

DRIVER = "test-driver.cdi.k8s.io"
CLASS = "test-class"
NO_DEVICES_CLASS = "no-devices-class"
SHAPES = ("basic", "partitionable", "backtracking", "consumable-capacity")
# Upstream's "full" runs leave room for exactly 10 more pods.
FULL_LEAVES_FREE = 10

_DRA_NODES = label_selector("node-with-dra", "true")

SELECTOR_EMPTY = (
    f'device.attributes["{DRIVER}"].driverVersion.major() >= 1'
    f' && device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("1Mi"))'
)
PREALLOCATE_SELECTOR = (
    f"device.capacity['{DRIVER}'].counters.compareTo(quantity('2')) >= 0"
    f" && device.attributes['{DRIVER}'].preallocate"
)


def perf_node_name(i: int) -> str:
    return f"scheduler-perf-dra-{i}"


# --------------------------------------------------------------------------------------
# Classes and templates
# --------------------------------------------------------------------------------------


def perf_classes(shape: str) -> list[Obj]:
    expression = f'device.driver == "{DRIVER}"'
    if shape == "consumable-capacity":
        expression += " && device.allowMultipleAllocations == true"
    return [
        device_class(CLASS, expression),
        device_class(NO_DEVICES_CLASS, 'device.driver == "no-such-driver.cdi.k8s.io"'),
    ]


def perf_templates(shape: str, namespace: str = "test") -> list[Obj]:
    """Upstream's claim templates for the shape (all in namespace ``test``)."""
    out = [
        claim_template(
            "test-claim-template", namespace, {"requests": [exact_request("req-0", CLASS)]}
        ),
        claim_template(
            "test-claim-template-first-available",
            namespace,
            {
                "requests": [
                    {
                        "name": "req-0",
                        "firstAvailable": [
                            subrequest("sub-0", NO_DEVICES_CLASS),
                            subrequest("sub-1", CLASS),
                        ],
                    }
                ]
            },
        ),
    ]
    if shape == "basic":
        # The selector reads attributes only the basic driver's devices have.
        out.append(
            claim_template(
                "test-claim-template-with-selector",
                namespace,
                {"requests": [exact_request("req-0", CLASS, selectors=[SELECTOR_EMPTY])]},
            )
        )
        out.append(
            claim_template(
                "test-claim-template-match",
                namespace,
                {
                    "requests": [exact_request("req-0", CLASS, count=2)],
                    "constraints": [{"requests": ["req-0"], "matchAttribute": f"{DRIVER}/model"}],
                },
            )
        )
    elif shape == "partitionable":
        out.append(
            claim_template(
                "test-claim-template-two-devices",
                namespace,
                {
                    "requests": [exact_request("req-0", CLASS, count=2)],
                    "constraints": [
                        {"requests": ["req-0"], "matchAttribute": "dra.example.com/slice"}
                    ],
                },
            )
        )
    elif shape == "backtracking":
        out.append(
            claim_template(
                "test-claim-template-backtracking",
                namespace,
                {"requests": [exact_request("req-0", CLASS, count=7)]},
            )
        )
    else:
        out.append(
            claim_template(
                "test-claim-template-consumable",
                namespace,
                {
                    "requests": [
                        exact_request("req-0", CLASS, capacity={"memory": "10Gi"}),
                        exact_request("req-1", CLASS, capacity={"memory": "10Gi"}),
                    ]
                },
            )
        )
    return out


# --------------------------------------------------------------------------------------
# Devices of each shape
# --------------------------------------------------------------------------------------


def _basic_devices(count: int) -> list[Obj]:
    model, family, drv, memory = string("A100"), string("GPU"), version("1.2.3"), quantity("1Gi")
    return [
        {
            "name": f"instance-{k}",
            "attributes": {
                "model": model,
                "family": family,
                "driverVersion": drv,
                "dra.example.com/numa": integer(k),
            },
            "capacity": {"memory": memory},
        }
        for k in range(count)
    ]


def _counters(*names: str, value: str = "1") -> Obj:
    return {n: quantity(value) for n in names}


def _partitionable_devices(index: int) -> list[Obj]:
    slice_attr = integer(index)

    def dev(name: str, preallocate: bool, counters: str, uses: tuple[str, ...]) -> Obj:
        return {
            "name": name,
            "attributes": {
                "preallocate": boolean(preallocate),
                "dra.example.com/slice": slice_attr,
            },
            "capacity": {"counters": quantity(counters)},
            "consumesCounters": [{"counterSet": "counter-set", "counters": _counters(*uses)}],
        }

    return [
        dev("device-2-counters-1", True, "2", ("counter1", "counter2")),
        dev("device-2-counters-2", False, "2", ("counter3", "counter4")),
        dev("device-1-counter-1", False, "1", ("counter1",)),
        dev("device-1-counter-2", False, "1", ("counter2",)),
        dev("device-1-counter-3", False, "1", ("counter3",)),
        dev("device-1-counter-4", False, "1", ("counter4",)),
    ]


_BACKTRACKING_DEVICES = [
    {
        "name": f"device-{k}",
        "consumesCounters": [
            {"counterSet": "counter-set-for-cpu", "counters": _counters(f"cpu{k}")},
            {
                "counterSet": "counter-set-for-mem",
                "counters": _counters("mem", value="20Gi" if k == 1 else "10Gi"),
            },
        ],
    }
    for k in range(1, 9)
]
_BACKTRACKING_COUNTERS = [
    {"name": "counter-set-for-cpu", "counters": _counters(*(f"cpu{k}" for k in range(1, 9)))},
    {"name": "counter-set-for-mem", "counters": _counters("mem", value="70Gi")},
]


def _consumable_devices(index: int) -> list[Obj]:
    slice_attr = integer(index)
    memory = {"value": "80Gi", "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi"}}}
    return [
        {
            "name": "shareable-device",
            "allowMultipleAllocations": True,
            "attributes": {"preallocate": boolean(False), "dra.example.com/slice": slice_attr},
            "capacity": {"memory": memory},
        },
        {
            "name": "device-2-counters-1",
            "allowMultipleAllocations": True,
            "attributes": {"preallocate": boolean(True), "dra.example.com/slice": slice_attr},
            "capacity": {"counters": quantity("2"), "memory": memory},
            "consumesCounters": [
                {"counterSet": "counter-set", "counters": _counters("counter1", "counter2")}
            ],
        },
    ]


def _two_slice_pool(
    cluster: Cluster, index: int, placement: Obj, counters: list[Obj], devices: list[Obj]
) -> None:
    pool = f"resourceslice-{index}"
    cluster.slices.append(
        resource_slice(
            f"resourceslice-countersets-{index}", DRIVER, pool, 2, placement, counters=counters
        )
    )
    cluster.slices.append(
        resource_slice(
            f"resourceslice-devices-{index}", DRIVER, pool, 2, placement, devices=devices
        )
    )


# --------------------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------------------


@gc_paused
def scheduler_perf(
    nodes: int,
    seed: int = 0,
    *,
    shape: str = "basic",
    devices_per_node: int = 10,
    fill: float = 0.0,
    pools_per_node: int = 20,
) -> Cluster:
    """A scheduler_perf cluster of ``nodes`` DRA nodes in one of :data:`SHAPES`.

    ``fill`` (a fraction; 1.0 is upstream's "full") applies to ``basic`` and
    ``partitionable``; the other shapes start empty, as upstream's runs do.
    """
    positive("nodes", nodes)
    positive("devices_per_node", devices_per_node)
    positive("pools_per_node", pools_per_node)
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}, got {shape!r}")
    if fill and shape in ("backtracking", "consumable-capacity"):
        raise ValueError(f"the {shape} shape has no pre-allocated claims upstream; use fill=0")
    rng = random.Random(seed)
    cluster = Cluster(
        "scheduler-perf", classes=perf_classes(shape), templates=perf_templates(shape)
    )
    names = [perf_node_name(i) for i in range(nodes)]
    cluster.nodes = [node(n, {"node-with-dra": "true"}) for n in names]
    if shape in ("basic", "consumable-capacity"):
        _basic(cluster, rng, names, devices_per_node, fill)
    if shape == "partitionable":
        counters = [
            {
                "name": "counter-set",
                "counters": _counters("counter1", "counter2", "counter3", "counter4"),
            }
        ]
        pools = pools_per_node * nodes
        for p in range(pools):
            _two_slice_pool(
                cluster, p, {"nodeSelector": _DRA_NODES}, counters, _partitionable_devices(p)
            )
        _preallocate_partitionable(cluster, pools, fill)
    elif shape == "backtracking":
        for i, n in enumerate(names):
            _two_slice_pool(
                cluster, i, {"nodeName": n}, _BACKTRACKING_COUNTERS, list(_BACKTRACKING_DEVICES)
            )
    elif shape == "consumable-capacity":
        counters = [{"name": "counter-set", "counters": _counters("counter1", "counter2")}]
        for p in range(pools_per_node * nodes):
            _two_slice_pool(
                cluster, p, {"nodeSelector": _DRA_NODES}, counters, _consumable_devices(p)
            )
    return cluster


def _basic(
    cluster: Cluster, rng: random.Random, names: list[str], per_node: int, fill: float
) -> None:
    devices = _basic_devices(per_node)
    parts = list(chunks(devices, 128))
    for name in names:
        for k, part in enumerate(parts):
            slice_name = name if len(parts) == 1 else f"{name}-{k:03d}"
            cluster.slices.append(
                resource_slice(
                    slice_name, DRIVER, name, len(parts), {"nodeName": name}, devices=part
                )
            )
    total = len(names) * per_node
    count = max(total - FULL_LEAVES_FREE, 0) if fill >= 1.0 else round(fill * total)
    spec = {"devices": {"requests": [exact_request("req-0", CLASS)]}}
    for k, (n, d) in enumerate(first_fit_on_random_nodes(rng, [per_node] * len(names), count)):
        taken = Taken("req-0", DRIVER, names[n], f"instance-{d}")
        cluster.claims.append(
            allocated_claim(f"test-claim-{k}", "init", spec, [taken], node_name_selector(names[n]))
        )


def _preallocate_partitionable(cluster: Cluster, pools: int, fill: float) -> None:
    # The selector claim matches device-2-counters-1 only; upstream's first-fit hands
    # them out in pool order (pools sorted by name).
    request = exact_request("req-0", CLASS, selectors=[PREALLOCATE_SELECTOR])
    spec = {"devices": {"requests": [request]}}
    order = sorted(range(pools), key=lambda p: f"resourceslice-{p}")
    for k, p in enumerate(order[: round(fill * pools)]):
        taken = Taken("req-0", DRIVER, f"resourceslice-{p}", "device-2-counters-1")
        cluster.claims.append(
            allocated_claim(f"test-claim-with-selector-{k}", "init", spec, [taken], _DRA_NODES)
        )
