"""NVIDIA ``gpu.nvidia.com`` nodes: 8× H100 80GB as full GPUs, or in dynamic-MIG mode.

Shapes follow what NVIDIA's DRA driver (NVIDIA/k8s-dra-driver-gpu) publishes:

- full GPUs ``gpu-<minor>`` with the driver's attribute set (``type``, ``uuid``,
  ``productName``, ``brand``, ``architecture``, ``cudaComputeCapability``,
  ``driverVersion``, ``cudaDriverVersion``, ``pcieBusID``, ``addressingMode``,
  ``resource.kubernetes.io/pcieRoot``) and ``memory`` capacity;
- dynamic MIG (partitionable devices): per GPU one counter set ``gpu-<minor>-counter-set``
  with the engine counters, ``memory`` and ``memory-slice-0…7``; the full GPU consumes
  all of it, and every placement of every profile is a device
  ``gpu-<minor>-mig-<profile>-<giProfileId>-<start>`` consuming its share and its
  memory slices. Counter sets and devices are published in separate slices (the API
  allows one or the other per slice), either one pool per node or one pool per GPU.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

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

DRIVER = "gpu.nvidia.com"
GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
PRODUCT = "NVIDIA H100 80GB HBM3"
GPU_MEMORY = "81559Mi"  # what the driver reports for an H100 80GB
MEMORY_SLICES = 8

# PCI bus of each GPU on an HGX H100 board; two GPUs share a PCIe switch (root).
_PCIE_BUS = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)

_GPU_SELECTOR = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'gpu'"
_MIG_SELECTOR = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'mig'"


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One MIG profile of the H100 80GB (``nvidia-smi mig -lgip``)."""

    name: str
    gi_profile_id: int
    starts: tuple[int, ...]  # first memory slice of each placement
    size: int  # memory slices occupied
    memory: str
    multiprocessors: int
    copy_engines: int
    decoders: int
    jpeg_engines: int
    ofa_engines: int

    @property
    def device_part(self) -> str:
        """The profile as it appears in a device name (a DNS label: no dots, no '+')."""
        return self.name.replace(".", "").replace("+", "")


PROFILES = (
    MigProfile("1g.10gb", 19, (0, 1, 2, 3, 4, 5, 6), 1, "9856Mi", 16, 1, 1, 1, 0),
    MigProfile("1g.20gb", 15, (0, 2, 4, 6), 2, "20096Mi", 26, 1, 1, 1, 0),
    MigProfile("2g.20gb", 14, (0, 2, 4), 2, "20096Mi", 32, 2, 2, 2, 0),
    MigProfile("3g.40gb", 9, (0, 4), 4, "40320Mi", 60, 3, 3, 3, 0),
    MigProfile("4g.40gb", 5, (0,), 4, "40320Mi", 64, 4, 4, 4, 0),
    MigProfile("7g.80gb", 0, (0,), 8, "80512Mi", 132, 7, 7, 7, 1),
)
# The media-extension profile: one slice plus the GPU's single OFA engine.
PROFILE_1G10GB_ME = MigProfile("1g.10gb+me", 20, (0, 1, 2, 3, 4, 5, 6), 1, "9856Mi", 16, 1, 1, 1, 1)

# The whole GPU as one counter set (the full device consumes exactly this).
_FULL = {
    "multiprocessors": 132,
    "copy-engines": 7,
    "decoders": 7,
    "encoders": 0,
    "jpeg-engines": 7,
    "ofa-engines": 1,
}


def profiles(media_extensions: bool = False) -> tuple[MigProfile, ...]:
    if media_extensions:
        return (PROFILES[0], PROFILE_1G10GB_ME, *PROFILES[1:])
    return PROFILES


# --------------------------------------------------------------------------------------
# Shared per-GPU values
# --------------------------------------------------------------------------------------


def _pcie(minor: int) -> tuple[str, str]:
    bus = _PCIE_BUS[minor] if minor < len(_PCIE_BUS) else 0xE0 + minor - len(_PCIE_BUS)
    root = 0x10 + 0x20 * (minor // 2)
    return f"0000:{bus:02x}:00.0", f"pci0000:{root:02x}"


# Attribute values every H100 shares (one dict each, reused by every device).
_COMMON_ATTRIBUTES: Obj = {
    "productName": string(PRODUCT),
    "brand": string("Nvidia"),
    "architecture": string("Hopper"),
    "cudaComputeCapability": version("9.0.0"),
    "driverVersion": version("570.124.6"),
    "cudaDriverVersion": version("12.8.0"),
}
_PCIE_ATTRIBUTES = [(string(bus), string(root)) for bus, root in map(_pcie, range(64))]
_TYPE_GPU = string("gpu")
_TYPE_MIG = string("mig")
_ADDRESSING = string("HMM")
_GPU_CAPACITY = {"memory": quantity(GPU_MEMORY)}


def _gpu_attributes(uuid: str, minor: int) -> Obj:
    bus, root = _PCIE_ATTRIBUTES[minor]
    return {
        "type": _TYPE_GPU,
        "uuid": {"string": f"GPU-{uuid}"},
        **_COMMON_ATTRIBUTES,
        "pcieBusID": bus,
        "addressingMode": _ADDRESSING,
        "resource.kubernetes.io/pcieRoot": root,
    }


def _node_labels(i: int) -> dict[str, str]:
    return {
        "topology.kubernetes.io/zone": f"zone-{i % 3}",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": PRODUCT.replace(" ", "-"),
    }


# --------------------------------------------------------------------------------------
# Classes and claim templates
# --------------------------------------------------------------------------------------


def gpu_classes(mig: bool) -> list[Obj]:
    classes = [device_class(GPU_CLASS, _GPU_SELECTOR)]
    if mig:
        classes.append(device_class(MIG_CLASS, _MIG_SELECTOR))
    return classes


def _profile_selector(profile: str) -> str:
    return f"device.attributes['{DRIVER}'].profile == '{profile}'"


def gpu_templates(namespace: str, mig: bool) -> list[Obj]:
    """The claims people write against this driver: 1 GPU, 2 GPUs under one PCIe root,
    8 GPUs, an H100 with 80G (decimal, as marketed) by selector, a monitoring claim with
    admin access (its namespace needs the ``resource.kubernetes.io/admin-access: "true"``
    label), and with MIG: a slice by profile, two slices of one GPU, and firstAvailable
    fallbacks."""
    h100 = (
        f"device.attributes['{DRIVER}'].productName == '{PRODUCT}'"
        f" && device.capacity['{DRIVER}'].memory.compareTo(quantity('80G')) >= 0"
        f" && device.attributes['{DRIVER}'].cudaComputeCapability"
        f".isGreaterThan(semver('8.0.0'))"
    )
    out = [
        claim_template("single-gpu", namespace, {"requests": [exact_request("gpu", GPU_CLASS)]}),
        claim_template(
            "two-gpus-same-pcie-root",
            namespace,
            {
                "requests": [exact_request("gpus", GPU_CLASS, count=2)],
                "constraints": [
                    {"requests": ["gpus"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
                ],
            },
        ),
        claim_template(
            "eight-gpus", namespace, {"requests": [exact_request("gpus", GPU_CLASS, count=8)]}
        ),
        claim_template(
            "h100-80gb",
            namespace,
            {"requests": [exact_request("gpu", GPU_CLASS, selectors=[h100])]},
        ),
        claim_template(
            "gpu-monitoring",
            "monitoring",
            {
                "requests": [exact_request("gpus", GPU_CLASS, all_devices=True, admin_access=True)],
            },
        ),
    ]
    if mig:
        out += [
            claim_template(
                "mig-1g10gb",
                namespace,
                {
                    "requests": [
                        exact_request("mig", MIG_CLASS, selectors=[_profile_selector("1g.10gb")])
                    ]
                },
            ),
            claim_template(
                "mig-3g40gb",
                namespace,
                {
                    "requests": [
                        exact_request("mig", MIG_CLASS, selectors=[_profile_selector("3g.40gb")])
                    ]
                },
            ),
            claim_template(
                "two-mig-1g10gb-same-gpu",
                namespace,
                {
                    "requests": [
                        exact_request(
                            "migs", MIG_CLASS, count=2, selectors=[_profile_selector("1g.10gb")]
                        )
                    ],
                    "constraints": [
                        {"requests": ["migs"], "matchAttribute": f"{DRIVER}/parentUUID"}
                    ],
                },
            ),
            claim_template(
                "gpu-or-mig",
                namespace,
                {
                    "requests": [
                        {
                            "name": "accelerator",
                            "firstAvailable": [
                                subrequest("full-gpu", GPU_CLASS),
                                subrequest(
                                    "mig-3g40gb",
                                    MIG_CLASS,
                                    selectors=[_profile_selector("3g.40gb")],
                                ),
                                subrequest(
                                    "two-mig-1g10gb",
                                    MIG_CLASS,
                                    count=2,
                                    selectors=[_profile_selector("1g.10gb")],
                                ),
                            ],
                        }
                    ]
                },
            ),
        ]
    return out


# --------------------------------------------------------------------------------------
# nvidia-gpu
# --------------------------------------------------------------------------------------


@gc_paused
def nvidia_gpu(
    nodes: int,
    seed: int = 0,
    *,
    gpus_per_node: int = 8,
    allocated: float = 0.0,
    namespace: str = "default",
) -> Cluster:
    """Full-GPU nodes: ``gpus_per_node`` H100 80GB each, one pool and slice per node.

    ``allocated`` is the fraction of GPUs already taken by single-GPU claims.
    """
    positive("nodes", nodes)
    if not 1 <= gpus_per_node <= 64:
        raise ValueError(f"gpus_per_node must be in 1..64, got {gpus_per_node}")
    rng = random.Random(seed)
    draws = Draws(seed)
    cluster = Cluster(
        "nvidia-gpu", classes=gpu_classes(mig=False), templates=gpu_templates(namespace, mig=False)
    )
    names = [f"gpu-{m}" for m in range(gpus_per_node)]
    for i in range(nodes):
        name = node_name(i)
        cluster.nodes.append(node(name, _node_labels(i)))
        devices = [
            {"name": names[m], "attributes": _gpu_attributes(u, m), "capacity": _GPU_CAPACITY}
            for m, u in enumerate(draws.uuids(gpus_per_node))
        ]
        cluster.slices += pool_slices(draws, DRIVER, name, {"nodeName": name}, devices)
    count = round(allocated * nodes * gpus_per_node)
    spec = cluster.template("single-gpu")["spec"]["spec"]
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


# --------------------------------------------------------------------------------------
# nvidia-mig
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Placement:
    profile: MigProfile
    start: int
    name_suffix: str  # "-mig-1g10gb-19-0"
    capacity: Obj  # shared by every GPU
    counters: Obj  # shared by every GPU
    uses: dict[str, int]  # counter name -> amount (memory in MiB): to pack GPUs


def _mebibytes(text: str) -> int:
    assert text.endswith("Mi"), text
    return int(text[:-2])


def _placements(media_extensions: bool) -> list[_Placement]:
    out = []
    for p in profiles(media_extensions):
        for start in p.starts:
            engines = {
                "multiprocessors": p.multiprocessors,
                "copy-engines": p.copy_engines,
                "decoders": p.decoders,
                "encoders": 0,
                "jpeg-engines": p.jpeg_engines,
                "ofa-engines": p.ofa_engines,
            }
            slices = range(start, start + p.size)
            capacity = {
                "multiprocessors": quantity(str(p.multiprocessors)),
                "copyEngines": quantity(str(p.copy_engines)),
                "decoders": quantity(str(p.decoders)),
                "encoders": quantity("0"),
                "jpegEngines": quantity(str(p.jpeg_engines)),
                "ofaEngines": quantity(str(p.ofa_engines)),
                "memory": quantity(p.memory),
                **{f"memorySlice{s}": quantity("1") for s in slices},
            }
            counters = {
                **{k: quantity(str(v)) for k, v in engines.items()},
                "memory": quantity(p.memory),
                **{f"memory-slice-{s}": quantity("1") for s in slices},
            }
            uses = {
                **engines,
                "memory": _mebibytes(p.memory),
                **{f"memory-slice-{s}": 1 for s in slices},
            }
            out.append(
                _Placement(
                    p,
                    start,
                    f"-mig-{p.device_part}-{p.gi_profile_id}-{start}",
                    capacity,
                    counters,
                    uses,
                )
            )
    return out


_FULL_COUNTERS: Obj = {
    **{k: quantity(str(v)) for k, v in _FULL.items()},
    "memory": quantity(GPU_MEMORY),
    **{f"memory-slice-{s}": quantity("1") for s in range(MEMORY_SLICES)},
}
_FULL_USES = {
    **_FULL,
    "memory": _mebibytes(GPU_MEMORY),
    **{f"memory-slice-{s}": 1 for s in range(MEMORY_SLICES)},
}
_PROFILE_ATTRIBUTES = {p.name: string(p.name) for p in (*PROFILES, PROFILE_1G10GB_ME)}


def _pack(rng: random.Random, placements: list[_Placement]) -> list[int]:
    """A random set of placements that fit on one GPU together (indices)."""
    left = dict(_FULL_USES)
    order = list(range(len(placements)))
    rng.shuffle(order)
    chosen = []
    for k in order:
        uses = placements[k].uses
        if all(left[c] >= v for c, v in uses.items()):
            for c, v in uses.items():
                left[c] -= v
            chosen.append(k)
    return sorted(chosen)


@gc_paused
def nvidia_mig(
    nodes: int,
    seed: int = 0,
    *,
    gpus_per_node: int = 8,
    pool_per: str = "node",
    media_extensions: bool = False,
    allocated: float = 0.0,
    namespace: str = "default",
) -> Cluster:
    """Dynamic-MIG nodes: per GPU a counter set, the full GPU and every MIG placement.

    ``pool_per`` is ``node`` (one pool per node: counter-set slices plus device slices)
    or ``gpu`` (one pool per GPU, ``<node>-gpu<minor>``, with two slices).
    ``media_extensions`` adds the ``1g.10gb+me`` placements (26 devices per GPU instead
    of 19). ``allocated`` is the fraction of GPUs already carved up by running claims:
    each such GPU holds a random set of placements that fit together (or, one time in
    eight, the full GPU).
    """
    positive("nodes", nodes)
    if not 1 <= gpus_per_node <= 64:
        raise ValueError(f"gpus_per_node must be in 1..64, got {gpus_per_node}")
    if pool_per not in ("node", "gpu"):
        raise ValueError(f"pool_per must be 'node' or 'gpu', got {pool_per!r}")
    rng = random.Random(seed)
    draws = Draws(seed)
    placements = _placements(media_extensions)
    cluster = Cluster(
        "nvidia-mig", classes=gpu_classes(mig=True), templates=gpu_templates(namespace, mig=True)
    )
    # Names, counter uses and counter sets are the same for GPU <m> of every node:
    # built once. Only the uuid-bearing attributes differ per GPU.
    names = [
        [f"gpu-{m}", *(f"gpu-{m}{p.name_suffix}" for p in placements)] for m in range(gpus_per_node)
    ]
    sets = [
        [{"name": f"gpu-{m}-counter-set", "counters": _FULL_COUNTERS}] for m in range(gpus_per_node)
    ]
    uses = [
        [
            [{"counterSet": f"gpu-{m}-counter-set", "counters": c}]
            for c in (_FULL_COUNTERS, *(p.counters for p in placements))
        ]
        for m in range(gpus_per_node)
    ]
    profile_names = [p.profile.name for p in placements]
    # GPU -> (pool, node, minor): for pre-allocation.
    gpus: list[tuple[str, str, int]] = []
    for i in range(nodes):
        name = node_name(i)
        cluster.nodes.append(node(name, _node_labels(i)))
        placement = {"nodeName": name}
        node_devices: list[Obj] = []
        node_sets: list[Obj] = []
        for m, uuid in enumerate(draws.uuids(gpus_per_node)):
            attributes = _gpu_attributes(uuid, m)
            parent = {**attributes, "type": _TYPE_MIG, "parentUUID": attributes["uuid"]}
            del parent["uuid"], parent["addressingMode"]
            # Placements of one profile on one GPU have identical attributes.
            by_profile = {n: {**parent, "profile": a} for n, a in _PROFILE_ATTRIBUTES.items()}
            gpu_names, gpu_uses = names[m], uses[m]
            devices = [
                {
                    "name": gpu_names[0],
                    "attributes": attributes,
                    "capacity": _GPU_CAPACITY,
                    "consumesCounters": gpu_uses[0],
                }
            ]
            devices += [
                {
                    "name": gpu_names[k],
                    "attributes": by_profile[profile_names[k - 1]],
                    "capacity": placements[k - 1].capacity,
                    "consumesCounters": gpu_uses[k],
                }
                for k in range(1, len(gpu_names))
            ]
            if pool_per == "gpu":
                pool = f"{name}-gpu{m}"
                cluster.slices += pool_slices(draws, DRIVER, pool, placement, devices, sets[m])
            else:
                pool = name
                node_devices += devices
                node_sets += sets[m]
            gpus.append((pool, name, m))
        if pool_per == "node":
            cluster.slices += pool_slices(draws, DRIVER, name, placement, node_devices, node_sets)
    _preallocate_mig(rng, cluster, gpus, names, placements, allocated, namespace)
    return cluster


def _preallocate_mig(
    rng: random.Random,
    cluster: Cluster,
    gpus: list[tuple[str, str, int]],
    names: list[list[str]],
    placements: list[_Placement],
    allocated: float,
    namespace: str,
) -> None:
    if allocated <= 0.0:
        return
    busy = rng.sample(range(len(gpus)), round(allocated * len(gpus)))
    busy.sort()
    full_spec = cluster.template("single-gpu")["spec"]["spec"]
    mig_specs: dict[str, Obj] = {}
    k = 0
    for g in busy:
        pool, node_, minor = gpus[g]
        if rng.randrange(8) == 0:
            picks = [(0, "gpu", full_spec)]
        else:
            picks = []
            for p in _pack(rng, placements):
                profile = placements[p].profile.name
                spec = mig_specs.get(profile)
                if spec is None:
                    spec = mig_specs[profile] = {
                        "devices": {
                            "requests": [
                                exact_request(
                                    "mig", MIG_CLASS, selectors=[_profile_selector(profile)]
                                )
                            ]
                        }
                    }
                picks.append((1 + p, "mig", spec))
        for index, request, spec in picks:
            taken = Taken(request, DRIVER, pool, names[minor][index])
            cluster.claims.append(
                allocated_claim(
                    f"mig-claim-{k}", namespace, spec, [taken], node_name_selector(node_)
                )
            )
            k += 1


__all__ = ["PROFILES", "MigProfile", "nvidia_gpu", "nvidia_mig"]
