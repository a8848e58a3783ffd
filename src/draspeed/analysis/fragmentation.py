"""Fragmentation: what is free, in which shapes, and what is left over that nothing can use.

Per node and for the cluster (devices and pools seen by several nodes count once):

- ``free_whole_devices``: free devices that are whole (full GPUs: a device without
  shared counters, or one consuming all of its counter sets);
- ``free_by_profile``: free devices per value of a profile attribute (MIG profiles
  such as ``1g.10gb``): the placements that could be allocated now, each on its own
  (two placements that overlap both count);
- ``classes``: per DeviceClass, its devices by state and the share in use;
- ``usage``: devices by state, counters used / total and *stranded* counters:
  capacity left in a counter set that no published device could use -- none that
  consumes it is both unused and within the counters left (for
  example memory slice 7 of an H100 once slice 6 is taken by a 1g.10gb: only the
  full GPU, 7g.80gb and the 1g.20gb at slice 6 use it, and none of them fits).

Definitions of free, in use, cordoned and blocked: :mod:`draspeed.analysis.accounting`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from draspeed import arguments
from draspeed.analysis.accounting import (
    WHOLE,
    Accounting,
    DeviceCounts,
    NodeUsage,
    PoolState,
    is_free,
    sum_usages,
    usage_of,
)
from draspeed.analysis.node_list import resolve_nodes, snapshot_of
from draspeed.errors import CELCompileError

if TYPE_CHECKING:
    from draspeed.api.model import Node
    from draspeed.engine.snapshot import Snapshot

CLUSTER = "(cluster)"


@dataclass
class NodeFragmentation:
    """Free capacity of one node (or of the cluster, ``node == "(cluster)"``)."""

    node: str
    usage: NodeUsage
    free_whole_devices: int
    free_by_profile: dict[str, int]
    classes: dict[str, DeviceCounts]

    def utilisation(self, device_class: str) -> float:
        """Share of the class's devices in use (0 when the class has none here)."""
        counts = self.classes[device_class]
        return counts.in_use / counts.total if counts.total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "freeWholeDevices": self.free_whole_devices,
            "freeByProfile": dict(self.free_by_profile),
            "classes": {
                name: {**c.to_dict(), "utilisation": round(self.utilisation(name), 6)}
                for name, c in self.classes.items()
            },
            **self.usage.to_dict(),
        }


@dataclass
class FragmentationReport:
    nodes: list[NodeFragmentation]
    cluster: NodeFragmentation
    profile_attribute: str
    # Classes whose selectors do not compile (they match nothing here): name -> error.
    class_errors: dict[str, str] = field(default_factory=dict)

    def node(self, name: str) -> NodeFragmentation:
        for n in self.nodes:
            if n.node == name:
                return n
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "profileAttribute": self.profile_attribute,
            "cluster": self.cluster.to_dict(),
            "nodes": [n.to_dict() for n in self.nodes],
            "classErrors": dict(self.class_errors),
        }


def fragmentation(
    snapshot: Snapshot,
    nodes: Sequence[Node | str] | None = None,
    *,
    classes: Sequence[str] | None = None,
    profile_attribute: str = "profile",
    accounting: Accounting | None = None,
) -> FragmentationReport:
    """The fragmentation report of ``nodes`` (default: every known node).

    ``classes``: DeviceClass names to report (default: every class of the snapshot).
    ``profile_attribute``: the attribute grouping ``free_by_profile``; a bare name
    (``profile``) matches that attribute in any domain, ``domain/name`` just that one.
    """
    snapshot_of(snapshot)
    arguments.text(profile_attribute, "profile_attribute", "an attribute name")
    if accounting is not None:
        arguments.instance_of(accounting, Accounting, "accounting", "an Accounting")
    acc = accounting or Accounting(snapshot)
    node_list = resolve_nodes(snapshot, nodes)
    visible = {node.name: acc.visible(node) for node in node_list}
    pools = {node.name: acc.pools(node) for node in node_list}
    every: dict[int, int] = {}
    for devices in visible.values():
        every.update(devices)
    names = list(snapshot.classes) if classes is None else list(arguments.names(classes, "classes"))
    classes_of, errors = _class_members(snapshot, names, sorted(every))
    profiles = _Profiles(snapshot, profile_attribute)
    profile_of = {g: p for g in every if (p := profiles.of(g)) is not None}

    def summarise(
        name: str, devices: Iterable[tuple[int, int]], node_pools: Iterable[PoolState]
    ) -> NodeFragmentation:
        devices = list(devices)
        flag_counts = Counter(f for _, f in devices)
        whole = sum(n for f, n in flag_counts.items() if is_free(f) and f & WHOLE)
        by_profile = Counter(profile_of[g] for g, f in devices if is_free(f) and g in profile_of)
        by_class = Counter((c, f) for g, f in devices for c in classes_of.get(g, ()))
        per_class = {c: DeviceCounts() for c in names}
        for (c, f), n in by_class.items():
            per_class[c].count(f, n)
        return NodeFragmentation(
            name,
            usage_of(flag_counts, node_pools, name),
            whole,
            dict(sorted(by_profile.items())),
            per_class,
        )

    per_node = [summarise(n.name, visible[n.name], pools[n.name]) for n in node_list]
    all_pools = {p.id: p for ps in pools.values() for p in ps}
    cluster = summarise(CLUSTER, every.items(), all_pools.values())
    return FragmentationReport(per_node, cluster, profile_attribute, errors)


def summed(name: str, parts: Iterable[tuple[NodeFragmentation, int]]) -> NodeFragmentation:
    """The totals of fragmentation reports over disjoint devices and pools, each
    counted ``n`` times (nodes in the same state share one report)."""
    parts = list(parts)
    whole = 0
    by_profile: Counter[str] = Counter()
    classes: dict[str, DeviceCounts] = {}
    for part, n in parts:
        whole += n * part.free_whole_devices
        for profile, free in part.free_by_profile.items():
            by_profile[profile] += n * free
        for c, counts in part.classes.items():
            total = classes.setdefault(c, DeviceCounts())
            total.total += n * counts.total
            total.in_use += n * counts.in_use
            total.cordoned += n * counts.cordoned
            total.blocked += n * counts.blocked
            total.free += n * counts.free
    usage = sum_usages(name, [(part.usage, n) for part, n in parts])
    return NodeFragmentation(name, usage, whole, dict(sorted(by_profile.items())), classes)


def _class_members(
    snapshot: Snapshot, names: Sequence[str], devices: list[int]
) -> tuple[dict[int, tuple[str, ...]], dict[str, str]]:
    """The classes (of ``names``) selecting each device of ``devices``, and the classes
    that fail to compile.

    Evaluated once over a columnar table of the distinct device objects (stamped
    nodes share theirs) with the vector path of :mod:`draspeed.cel`; a device on
    which a selector errors is not selected.
    """
    from draspeed.cel import DeviceTable, compile_selector

    rows: dict[tuple[str, int], int] = {}  # (driver, id(device)) -> table row
    row_of: list[int] = []
    distinct: list[tuple[str, Any]] = []
    for g in devices:
        driver, device = snapshot.device_slice_of(g).spec.driver, snapshot.device(g)
        key = (driver, id(device))
        row = rows.get(key)
        if row is None:
            row = rows[key] = len(distinct)
            distinct.append((driver, device))
        row_of.append(row)
    errors: dict[str, str] = {}
    selected: list[tuple[str, np.ndarray]] = []
    table = None
    for name in names:
        device_class = snapshot.classes.get(name)
        if device_class is None:
            errors[name] = "no such DeviceClass"
            continue
        mask = np.ones(len(distinct), dtype=bool)
        try:
            for selector in device_class.spec.selectors:
                if selector.cel is None:  # a selector type this version does not know
                    mask[:] = False
                    continue
                compiled = compile_selector(selector.cel.expression)
                if table is None:
                    table = DeviceTable.build(
                        distinct,
                        list_type_attributes=snapshot.features.list_type_attributes,
                        consumable_capacity=True,
                    )
                match, error, _ = compiled.evaluate(table)
                mask &= np.asarray(match, dtype=bool) & ~np.asarray(error, dtype=bool)
        except CELCompileError as exc:
            errors[name] = str(exc)
            continue
        selected.append((name, mask))
    out: dict[int, tuple[str, ...]] = {}
    if selected:
        for g, row in zip(devices, row_of, strict=True):
            found = tuple(name for name, mask in selected if mask[row])
            if found:
                out[g] = found
    return out, errors


class _Profiles:
    """The profile attribute's value per device (string values only)."""

    def __init__(self, snapshot: Snapshot, attribute: str) -> None:
        self.snapshot = snapshot
        self.qualified = "/" in attribute
        self.attribute = attribute
        self.suffix = "/" + attribute
        self._own: dict[str, str] = {}  # driver -> the attribute in the driver's domain
        self._seen: dict[int, tuple[dict[str, Any], str | None]] = {}

    def of(self, g: int) -> str | None:
        attributes = self.snapshot.device(g).attributes
        # Stamped and generated devices share attribute maps: looked up once per map.
        hit = self._seen.get(id(attributes))
        if hit is not None and hit[0] is attributes:
            return hit[1]
        value = self._lookup(g, attributes)
        self._seen[id(attributes)] = (attributes, value)
        return value

    def _lookup(self, g: int, attributes: dict[str, Any]) -> str | None:
        if self.qualified:
            found = attributes.get(self.attribute)
        else:
            driver = self.snapshot.device_slice_of(g).spec.driver
            own = self._own.get(driver)
            if own is None:
                own = self._own[driver] = driver + self.suffix
            found = attributes.get(own)
            if found is None:  # another domain's attribute of that name
                found = next((v for k, v in attributes.items() if k.endswith(self.suffix)), None)
        if found is None or found.kind != "string":
            return None
        return str(found.value)
