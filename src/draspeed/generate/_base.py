"""Building blocks shared by the cluster generators: the Cluster record, seeded names,
attribute values, slice chunking and pre-allocated claims.

Generators emit plain JSON-shaped dicts (what ``kubectl get -o json`` would print
minus server-set metadata). To stay fast at a million devices, values that are
identical across devices (an attribute such as ``{"string": "Hopper"}``, a
capacity, a counter map) are one shared dict: treat the output as read-only and
``copy.deepcopy`` an object before editing it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from draspeed.api import limits
from draspeed.collector import without_collector

if TYPE_CHECKING:
    from draspeed.api.loader import Objects

Obj = dict[str, Any]

API_VERSION = "resource.k8s.io/v1"

# The alphabet kube-apiserver draws generateName suffixes from (no vowels, no look-alikes).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@dataclass
class Cluster:
    """One generated cluster: every object as a plain dict, grouped by kind.

    ``claims`` are claims that are already allocated (``status.allocation`` set):
    the in-use state a snapshot is built from. Pending claims are made from
    ``templates`` with :meth:`claim`.
    """

    kind: str
    nodes: list[Obj] = field(default_factory=list)
    classes: list[Obj] = field(default_factory=list)
    slices: list[Obj] = field(default_factory=list)
    templates: list[Obj] = field(default_factory=list)
    claims: list[Obj] = field(default_factory=list)

    def items(self) -> list[Obj]:
        """Every object, in the order ``kubectl apply`` needs them."""
        return [*self.nodes, *self.classes, *self.slices, *self.templates, *self.claims]

    def document(self) -> Obj:
        """A ``kind: List`` holding every object (what ``-o yaml|json`` prints)."""
        return {"apiVersion": "v1", "kind": "List", "items": self.items()}

    @property
    def n_devices(self) -> int:
        return sum(len(s["spec"].get("devices", ())) for s in self.slices)

    def node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes]

    def template(self, name: str) -> Obj:
        for t in self.templates:
            if t["metadata"]["name"] == name:
                return t
        known = ", ".join(t["metadata"]["name"] for t in self.templates)
        raise KeyError(f"no claim template {name!r} in this {self.kind} cluster (have: {known})")

    def claim(self, template: str, name: str | None = None) -> Obj:
        """A pending ResourceClaim made from a template, as the claim controller makes one."""
        return claim_from_template(self.template(template), name)

    def decoded(self, *, validate: bool = False) -> Objects:
        """Every object decoded to draspeed's model (``draspeed.api.loader.load``)."""
        from draspeed.api.loader import load

        return load(self.items(), validate=validate)


# Generators build millions of acyclic objects: they run with the collector paused.
gc_paused = without_collector


# --------------------------------------------------------------------------------------
# Seeded names and values
# --------------------------------------------------------------------------------------


class Draws:
    """Seeded random names (UUIDs, generateName suffixes), drawn in batches.

    Per-call overhead of :mod:`random` would dominate at a million devices, so draws
    are made thousands at a time and handed out in order: the i-th UUID is the same
    whatever is generated after it. UUIDs and suffixes come from generators of
    their own, so adding a slice does not change any UUID.
    """

    _BATCH = 4096

    def __init__(self, seed: int) -> None:
        self._uuid_rng = random.Random(f"{seed}/uuid")
        self._suffix_rng = random.Random(f"{seed}/suffix")
        self._uuids: list[str] = []
        self._next_uuid = 0
        self._suffixes: list[str] = []

    def uuids(self, n: int) -> list[str]:
        """The next ``n`` version-4 UUIDs."""
        start = self._next_uuid
        if start + n > len(self._uuids):
            self._uuids = self._uuids[start:] + _uuid_batch(self._uuid_rng, max(self._BATCH, n))
            start = 0
        self._next_uuid = start + n
        return self._uuids[start : start + n]

    def suffix(self) -> str:
        """The next five-character generateName suffix."""
        if not self._suffixes:
            self._suffixes = _suffix_batch(self._suffix_rng, self._BATCH)
        return self._suffixes.pop()


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_ALPHABET = np.frombuffer(_SUFFIX_ALPHABET.encode(), dtype=np.uint8)


def _uuid_batch(rng: random.Random, n: int) -> list[str]:
    raw = np.frombuffer(rng.randbytes(16 * n), dtype=np.uint8).reshape(n, 16)
    digits = np.empty((n, 32), dtype=np.uint8)
    digits[:, 0::2] = _HEX[raw >> 4]
    digits[:, 1::2] = _HEX[raw & 15]
    text = np.full((n, 36), ord("-"), dtype=np.uint8)
    for src, dst in ((0, 0), (8, 9), (12, 14), (16, 19), (20, 24)):
        width = 12 if src == 20 else (8 if src == 0 else 4)
        text[:, dst : dst + width] = digits[:, src : src + width]
    text[:, 14] = ord("4")  # version 4
    text[:, 19] = ord("a")  # RFC 4122 variant
    joined = text.tobytes().decode("ascii")
    return [joined[i : i + 36] for i in range(0, 36 * n, 36)]


def _suffix_batch(rng: random.Random, n: int) -> list[str]:
    picks = np.frombuffer(rng.randbytes(5 * n), dtype=np.uint8) % len(_ALPHABET)
    joined = _ALPHABET[picks].tobytes().decode("ascii")
    # Popped from the end: reverse so suffixes come out in draw order.
    return [joined[i : i + 5] for i in range(5 * (n - 1), -1, -5)]


def node_name(i: int, prefix: str = "node") -> str:
    return f"{prefix}-{i:05d}"


def string(v: str) -> Obj:
    return {"string": v}


def integer(v: int) -> Obj:
    return {"int": v}


def boolean(v: bool) -> Obj:
    return {"bool": v}


def version(v: str) -> Obj:
    return {"version": v}


def quantity(v: str) -> Obj:
    return {"value": v}


# --------------------------------------------------------------------------------------
# Objects
# --------------------------------------------------------------------------------------


def node(name: str, labels: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
    }


def node_name_selector(node: str) -> Obj:
    """The node selector upstream writes into an allocation made on a node-local slice."""
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        ]
    }


def label_selector(key: str, *values: str) -> Obj:
    return {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}
        ]
    }


def resource_slice(
    name: str,
    driver: str,
    pool: str,
    slice_count: int,
    placement: Obj,
    *,
    devices: list[Obj] | None = None,
    counters: list[Obj] | None = None,
) -> Obj:
    """A ResourceSlice with ``devices`` or ``sharedCounters`` (the API allows one, not both).

    ``placement`` is the node selection: ``{"nodeName": ...}``, ``{"nodeSelector": ...}``,
    ``{"allNodes": True}`` or ``{"perDeviceNodeSelection": True}``.
    """
    if (devices is None) == (counters is None):
        raise ValueError("a ResourceSlice holds devices or sharedCounters, exactly one of them")
    spec: Obj = {
        "driver": driver,
        **placement,
        "pool": {"name": pool, "generation": 1, "resourceSliceCount": slice_count},
    }
    if devices is not None:
        spec["devices"] = devices
    else:
        spec["sharedCounters"] = counters
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": spec,
    }


def device_limit(devices: Sequence[Obj]) -> int:
    """Devices one slice may hold: 128, or 64 once any device has taints or consumes counters."""
    if any("taints" in d or "consumesCounters" in d for d in devices):
        return limits.RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES
    return limits.RESOURCE_SLICE_MAX_DEVICES


def chunks(items: Sequence[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def pool_slices(
    draws: Draws,
    driver: str,
    pool: str,
    placement: Obj,
    devices: Sequence[Obj],
    counter_sets: Sequence[Obj] = (),
) -> list[Obj]:
    """The slices that publish one pool: counter sets (≤ 8 per slice) and devices
    (≤ 128, or ≤ 64 with counters or taints), in separate slices, named like the
    kubelet plugin's slices (``<pool>-<driver>-<random>``)."""
    device_chunks = list(chunks(devices, device_limit(devices))) if devices else []
    counter_chunks = list(chunks(counter_sets, limits.RESOURCE_SLICE_MAX_COUNTER_SETS))
    total = len(device_chunks) + len(counter_chunks)
    out = []
    for sets in counter_chunks:
        out.append(
            resource_slice(
                f"{pool}-{driver}-{draws.suffix()}", driver, pool, total, placement, counters=sets
            )
        )
    for part in device_chunks:
        out.append(
            resource_slice(
                f"{pool}-{driver}-{draws.suffix()}", driver, pool, total, placement, devices=part
            )
        )
    return out


def device_class(name: str, expression: str, *, extra: Obj | None = None) -> Obj:
    return {
        "apiVersion": API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}], **(extra or {})},
    }


def claim_template(name: str, namespace: str, devices: Obj) -> Obj:
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": devices}},
    }


def exact_request(
    name: str,
    device_class_name: str,
    *,
    count: int | None = None,
    selectors: Sequence[str] = (),
    admin_access: bool = False,
    all_devices: bool = False,
    capacity: dict[str, str] | None = None,
) -> Obj:
    exactly: Obj = {"deviceClassName": device_class_name}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if all_devices:
        exactly["allocationMode"] = "All"
    elif count is not None:
        exactly["count"] = count
    if admin_access:
        exactly["adminAccess"] = True
    if capacity:
        exactly["capacity"] = {"requests": dict(capacity)}
    return {"name": name, "exactly": exactly}


def subrequest(
    name: str, device_class_name: str, *, count: int | None = None, selectors: Sequence[str] = ()
) -> Obj:
    sub: Obj = {"name": name, "deviceClassName": device_class_name}
    if selectors:
        sub["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if count is not None:
        sub["count"] = count
    return sub


def claim_from_template(template: Obj, name: str | None = None) -> Obj:
    """A pending ResourceClaim with the template's spec, in the template's namespace and
    API version (a claim spec is written as its version writes it)."""
    meta = template["metadata"]
    return {
        "apiVersion": template.get("apiVersion", API_VERSION),
        "kind": "ResourceClaim",
        "metadata": {
            "name": name or f"pod-{meta['name']}",
            "namespace": meta.get("namespace", "default"),
        },
        "spec": template["spec"]["spec"],
    }


@dataclass(slots=True)
class Taken:
    """One device handed out by a pre-allocated claim."""

    request: str
    driver: str
    pool: str
    device: str


def allocated_claim(
    name: str, namespace: str, spec: Obj, taken: Sequence[Taken], node_selector: Obj | None
) -> Obj:
    """A ResourceClaim whose ``status.allocation`` records ``taken``, as the scheduler writes it."""
    allocation: Obj = {
        "devices": {
            "results": [
                {"request": t.request, "driver": t.driver, "pool": t.pool, "device": t.device}
                for t in taken
            ]
        }
    }
    if node_selector is not None:
        allocation["nodeSelector"] = node_selector
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"allocation": allocation},
    }


def parse_fill(text: str | float) -> float:
    """``empty`` / ``half`` / ``full`` or a fraction in [0, 1] → a fraction."""
    named = {"empty": 0.0, "half": 0.5, "full": 1.0}
    if isinstance(text, str) and text in named:
        return named[text]
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"fill must be empty, half, full or a fraction in [0, 1], got {text!r}")
    return value


# How big a generated cluster may be: tens of thousands of nodes are what the largest
# real clusters run (Kubernetes is tested with 5,000); a per-node count (GPUs, devices,
# pools, racks' volumes) stays below what one node's hardware could publish (slices of
# 128 devices each); and about a million devices in all keep the output within what
# ``draspeed`` reads back (1 GiB a file).
MAX_NODES = 100_000
MAX_PER_NODE = 1024
MAX_DEVICES = 1_000_000
_DEVICES_PER_GPU = {"nvidia-mig": 26}  # placements per GPU, with media extensions
_DEFAULT_PER_NODE = 8


def positive(name: str, value: int, maximum: int | None = None) -> int:
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value


def check_size(kind: str, nodes: int, options: dict[str, object]) -> None:
    """Refuse a cluster beyond the limits above (its size estimated from ``nodes``
    and the largest per-node count among ``options``), before generating any of it."""
    positive("nodes", nodes, MAX_NODES)
    per_node = _DEFAULT_PER_NODE
    for name, value in options.items():
        if type(value) is int:
            positive(name, value, MAX_PER_NODE)
            per_node = max(per_node, value)
    devices = nodes * per_node * _DEVICES_PER_GPU.get(kind, 1)
    if devices > MAX_DEVICES:
        raise ValueError(
            f"{nodes} {kind} nodes would hold about {devices} devices, more than "
            f"{MAX_DEVICES}: generate fewer nodes"
        )
