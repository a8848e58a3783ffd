"""Network-attached devices (``fabric.example.com``): pools that are not one node's.

Nodes stand in racks (label ``topology.kubernetes.io/rack``). Per rack:

- a pool of fabric-attached GPUs reachable from every node of the rack
  (slice ``nodeSelector`` on the rack label): ``fgpu-<k>``;
- a pool of dual-homed links with ``perDeviceNodeSelection``: each link ``link-<k>``
  reaches two neighbouring nodes (``nodeSelector`` on the hostname), the rack's last
  node alone when the rack has an odd count (``nodeName``).

And one cluster-wide pool (``allNodes``) of shared volumes ``vol-<k>`` whose
``bandwidth`` is consumable capacity (``allowMultipleAllocations``): many claims
share one volume, each taking a slice of its bandwidth.
"""

from __future__ import annotations

from draspeed.generate._base import (
    Cluster,
    Draws,
    Obj,
    claim_template,
    device_class,
    exact_request,
    gc_paused,
    integer,
    label_selector,
    node,
    node_name,
    pool_slices,
    positive,
    quantity,
    string,
    subrequest,
)

DRIVER = "fabric.example.com"
RACK_LABEL = "topology.kubernetes.io/rack"
GPU_CLASS = "fabric-gpu"
LINK_CLASS = "fabric-link"
VOLUME_CLASS = "shared-volume"


def _selector(kind: str) -> str:
    return f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'"


def network_classes() -> list[Obj]:
    return [
        device_class(GPU_CLASS, _selector("gpu")),
        device_class(LINK_CLASS, _selector("link")),
        device_class(VOLUME_CLASS, _selector("volume") + " && device.allowMultipleAllocations"),
    ]


def network_templates(namespace: str) -> list[Obj]:
    """A fabric GPU; two of one rack (matchAttribute); a GPU or else a link
    (firstAvailable); 10G of a shared volume's bandwidth; a GPU plus a link."""
    rack = f"{DRIVER}/rack"
    return [
        claim_template("fabric-gpu", namespace, {"requests": [exact_request("gpu", GPU_CLASS)]}),
        claim_template(
            "two-fabric-gpus-same-rack",
            namespace,
            {
                "requests": [exact_request("gpus", GPU_CLASS, count=2)],
                "constraints": [{"requests": ["gpus"], "matchAttribute": rack}],
            },
        ),
        claim_template(
            "gpu-or-link",
            namespace,
            {
                "requests": [
                    {
                        "name": "device",
                        "firstAvailable": [
                            subrequest("gpu", GPU_CLASS),
                            subrequest("link", LINK_CLASS),
                        ],
                    }
                ]
            },
        ),
        claim_template(
            "volume-10g",
            namespace,
            {"requests": [exact_request("volume", VOLUME_CLASS, capacity={"bandwidth": "10G"})]},
        ),
        claim_template(
            "gpu-with-link",
            namespace,
            {
                "requests": [exact_request("gpu", GPU_CLASS), exact_request("link", LINK_CLASS)],
                "constraints": [{"requests": ["gpu", "link"], "matchAttribute": rack}],
            },
        ),
    ]


@gc_paused
def network_attached(
    nodes: int,
    seed: int = 0,
    *,
    nodes_per_rack: int = 8,
    gpus_per_rack: int = 16,
    volumes: int = 32,
    namespace: str = "default",
) -> Cluster:
    """``nodes`` nodes in racks of ``nodes_per_rack``, with the pools described above."""
    positive("nodes", nodes)
    positive("nodes_per_rack", nodes_per_rack)
    positive("gpus_per_rack", gpus_per_rack)
    positive("volumes", volumes)
    draws = Draws(seed)
    cluster = Cluster(
        "network-attached", classes=network_classes(), templates=network_templates(namespace)
    )
    names = [node_name(i) for i in range(nodes)]
    gpu_type, link_type, volume_type = string("gpu"), string("link"), string("volume")
    gpu_memory = {"memory": quantity("48Gi")}
    for r, first in enumerate(range(0, nodes, nodes_per_rack)):
        rack = f"rack-{r:03d}"
        rack_nodes = names[first : first + nodes_per_rack]
        for n in rack_nodes:
            cluster.nodes.append(
                node(n, {RACK_LABEL: rack, "topology.kubernetes.io/zone": f"zone-{r % 3}"})
            )
        rack_attr = string(rack)
        gpus = [
            {
                "name": f"fgpu-{k}",
                "attributes": {"type": gpu_type, "rack": rack_attr, "index": integer(k)},
                "capacity": gpu_memory,
            }
            for k in range(gpus_per_rack)
        ]
        cluster.slices += pool_slices(
            draws, DRIVER, f"{rack}-gpus", {"nodeSelector": label_selector(RACK_LABEL, rack)}, gpus
        )
        links = []
        for k in range(0, len(rack_nodes), 2):
            pair = rack_nodes[k : k + 2]
            link: Obj = {
                "name": f"link-{k // 2}",
                "attributes": {"type": link_type, "rack": rack_attr},
            }
            if len(pair) == 2:
                link["nodeSelector"] = label_selector("kubernetes.io/hostname", *pair)
            else:
                link["nodeName"] = pair[0]
            links.append(link)
        cluster.slices += pool_slices(
            draws, DRIVER, f"{rack}-links", {"perDeviceNodeSelection": True}, links
        )
    bandwidth = {
        "value": "100G",
        "requestPolicy": {"default": "1G", "validRange": {"min": "1G", "step": "1G"}},
    }
    shared = [
        {
            "name": f"vol-{k}",
            "allowMultipleAllocations": True,
            "attributes": {"type": volume_type},
            "capacity": {"bandwidth": bandwidth},
        }
        for k in range(volumes)
    ]
    cluster.slices += pool_slices(draws, DRIVER, "shared-volumes", {"allNodes": True}, shared)
    return cluster
