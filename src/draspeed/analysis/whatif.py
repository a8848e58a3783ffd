"""What-if: change the cluster (add nodes, remove nodes, cordon pools) and compare.

Changes are small picklable records applied to a snapshot with its versioned
updates (each returns a new snapshot; the original is untouched):

- :class:`AddNodes`: ``count`` nodes like a template node: a generated kind
  (``AddNodes(20, kind="nvidia-mig")``), or a node of the cluster
  (``AddNodes(5, like="node-00003")``), or a :class:`NodeTemplate`. The template's
  node-local slices are stamped per new node (node name, pool names and slice
  names rewritten); pools shared across nodes (``nodeSelector``, ``allNodes``) are
  not copied: new nodes see those that select their labels. DeviceClasses of a
  generated kind that the cluster lacks are added.
- :class:`RemoveNodes`: the nodes and their node-local slices go away.
- :class:`Cordon`: a NoSchedule taint (or any effect) on every device of the
  named pools, or of the pools local to the named nodes, through DeviceTaintRules
  as kube-scheduler applies them; or the given DeviceTaintRules.

:func:`what_if` runs :func:`~draspeed.analysis.capacity.analyze` before and after
and :class:`WhatIfReport` holds both with the differences.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from draspeed import arguments
from draspeed.analysis.capacity import CapacityReport, analyze
from draspeed.analysis.node_list import snapshot_of
from draspeed.api.common import TAINT_EFFECTS
from draspeed.api.model import (
    DeviceClass,
    DeviceTaint,
    DeviceTaintRule,
    DeviceTaintSelector,
    Node,
    ObjectMeta,
    ResourcePool,
    ResourceSlice,
)
from draspeed.generate._base import MAX_NODES

if TYPE_CHECKING:
    from draspeed.analysis.shapes import ShapeSource
    from draspeed.engine.snapshot import Snapshot

CORDON_KEY = "draspeed.io/what-if-cordon"


class Change(Protocol):
    """One modification of a cluster state."""

    def apply(self, snapshot: Snapshot) -> Snapshot: ...

    def describe(self) -> str: ...


# ------------------------------------------------------------------------------ nodes


@dataclass(frozen=True)
class NodeTemplate:
    """A node and its node-local slices, to be stamped under new names."""

    node: Node
    slices: tuple[ResourceSlice, ...]
    classes: tuple[DeviceClass, ...] = ()  # classes the devices are meant for

    def __post_init__(self) -> None:
        arguments.instance_of(self.node, Node, "node", "a Node")
        slices = arguments.items_of(self.slices, ResourceSlice, "slices", "a ResourceSlice")
        classes = arguments.items_of(self.classes, DeviceClass, "classes", "a DeviceClass")
        object.__setattr__(self, "slices", tuple(slices))
        object.__setattr__(self, "classes", tuple(classes))

    @classmethod
    def generated(cls, kind: str, seed: int = 0, **options: Any) -> NodeTemplate:
        """The first node of a generated cluster of ``kind`` (draspeed.generate)."""
        return _generated_template(kind, seed, tuple(sorted(options.items())))

    @classmethod
    def like(cls, snapshot: Snapshot, name: str) -> NodeTemplate:
        """A node of the cluster as it is published (its Node object and its slices)."""
        snapshot_of(snapshot)
        arguments.text(name, "name", "a node name")
        node = next((n for n in snapshot.nodes if n.name == name), None)
        slices = tuple(s for s in snapshot.slices if s.spec.node_name == name)
        if node is None or not slices:
            raise ValueError(f"node {name!r} has no node-local ResourceSlices to copy")
        return cls(node, slices)

    def stamp(self, name: str) -> tuple[Node, list[ResourceSlice]]:
        """The template as node ``name``: a new Node and new slices sharing the devices.

        Devices are shared with the template (the model is read-only in draspeed);
        a device that names the template node itself is copied with the new name.
        """
        old = self.node.name
        labels = dict(self.node.labels)
        if labels.get("kubernetes.io/hostname") == old:
            labels["kubernetes.io/hostname"] = name
        raw_meta = {**self.node.raw.get("metadata", {}), "name": name, "labels": labels}
        node = Node(
            metadata=dataclasses.replace(self.node.metadata, name=name, labels=labels, uid=""),
            raw={**self.node.raw, "metadata": raw_meta} if self.node.raw else {},
        )
        return node, [_stamp_slice(s, old, name) for s in self.slices]


def _rename(value: str, old: str, new: str) -> str:
    """A name derived from the node's name keeps its shape; others get the node prefix."""
    if value == old:
        return new
    if value.startswith(old):
        return new + value[len(old) :]
    return f"{new}-{value}"


def _stamp_slice(rs: ResourceSlice, old: str, new: str) -> ResourceSlice:
    spec = rs.spec
    pool = ResourcePool(
        _rename(spec.pool.name, old, new), spec.pool.generation, spec.pool.resource_slice_count
    )
    devices = spec.devices
    if any(d.node_name == old for d in devices):
        devices = [
            dataclasses.replace(d, node_name=new) if d.node_name == old else d for d in devices
        ]
    name = _rename(rs.metadata.name, old, new)
    raw: dict[str, Any] = {}
    if rs.raw:
        raw_spec = {
            **rs.raw.get("spec", {}),
            "nodeName": new,
            "pool": {**rs.raw.get("spec", {}).get("pool", {}), "name": pool.name},
        }
        raw = {**rs.raw, "metadata": {**rs.raw.get("metadata", {}), "name": name}, "spec": raw_spec}
    return ResourceSlice(
        metadata=dataclasses.replace(rs.metadata, name=name, uid=""),
        spec=dataclasses.replace(spec, node_name=new, pool=pool, devices=devices),
        api_version=rs.api_version,
        raw=raw,
    )


@functools.lru_cache(maxsize=32)
def _generated_template(kind: str, seed: int, options: tuple[tuple[str, Any], ...]) -> NodeTemplate:
    from draspeed.generate import generate

    objects = generate(kind, 1, seed, **dict(options)).decoded(validate=False)
    node = objects.nodes[0]
    slices = tuple(s for s in objects.slices if s.spec.node_name == node.name)
    return NodeTemplate(node, slices, tuple(objects.classes))


@dataclass(frozen=True)
class AddNodes:
    """``count`` new nodes named ``<prefix>-00000`` ... like a template node.

    Exactly one of ``kind`` (a generator of :mod:`draspeed.generate`, with
    ``options``), ``like`` (a node of the cluster) or ``template``.
    """

    count: int
    kind: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    like: str | None = None
    template: NodeTemplate | None = None
    prefix: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        given = [x is not None for x in (self.kind, self.like, self.template)]
        if sum(given) != 1:
            raise ValueError("AddNodes needs exactly one of kind, like or template")
        if isinstance(self.count, bool) or not isinstance(self.count, int):
            raise TypeError(
                f"count: expected a whole number, got {arguments.type_name(self.count)}"
            )
        if not 0 <= self.count <= MAX_NODES:
            # (generate's own bound: more nodes than that are built in memory at once)
            raise ValueError(f"cannot add {self.count} nodes (0 to {MAX_NODES})")
        for name, what in (
            ("kind", "a generator's name"),
            ("like", "a node name"),
            ("prefix", "a name prefix"),
        ):
            if getattr(self, name) is not None:
                arguments.text(getattr(self, name), name, what)
        if self.template is not None:
            arguments.instance_of(self.template, NodeTemplate, "template", "a NodeTemplate")
        if not isinstance(self.options, Mapping):
            got = arguments.type_name(self.options)
            raise TypeError(f"options: expected a mapping of generator options, got {got}")
        arguments.whole(self.seed, "seed", None)

    def resolve(self, snapshot: Snapshot) -> NodeTemplate:
        if self.template is not None:
            return self.template
        if self.kind is not None:
            return NodeTemplate.generated(self.kind, self.seed, **dict(self.options))
        assert self.like is not None
        return NodeTemplate.like(snapshot, self.like)

    @property
    def name_prefix(self) -> str:
        if self.prefix:
            return self.prefix
        if self.kind is not None:
            return f"new-{self.kind}"
        base = self.like if self.like is not None else "template"
        return f"new-{base}"

    def names(self) -> list[str]:
        return [f"{self.name_prefix}-{i:05d}" for i in range(self.count)]

    def apply(self, snapshot: Snapshot) -> Snapshot:
        snapshot_of(snapshot)
        if self.count == 0:
            return snapshot
        template = self.resolve(snapshot)
        names = self.names()
        taken = {n.name for n in snapshot.nodes} & set(names)
        if taken:
            raise ValueError(f"new node names already exist: {', '.join(sorted(taken))}")
        nodes: list[Node] = []
        slices: list[ResourceSlice] = []
        for name in names:
            node, node_slices = template.stamp(name)
            nodes.append(node)
            slices.extend(node_slices)
        missing = [c for c in template.classes if c.metadata.name not in snapshot.classes]
        out = snapshot.update_slices(added=slices).update_nodes(added=nodes)
        if missing:
            out = out.update_classes(added=missing)
        return out

    @property
    def node_type(self) -> str:
        """What the new nodes are like: the generated kind (with its options), or the
        node copied."""
        if self.kind is not None:
            options = ",".join(f"{k}={v}" for k, v in sorted(self.options.items()))
            return f"{self.kind}:{options}" if options else self.kind
        if self.like is not None:
            return f"like {self.like}"
        assert self.template is not None
        return f"like {self.template.node.name}"

    def describe(self) -> str:
        return f"add {self.count} nodes ({self.node_type})"


@dataclass(frozen=True)
class RemoveNodes:
    """The named nodes and their node-local slices go away."""

    names: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", arguments.names(self.names, "names"))

    def apply(self, snapshot: Snapshot) -> Snapshot:
        snapshot_of(snapshot)
        gone = set(self.names)
        slices = [s for s in snapshot.slices if s.spec.node_name in gone]
        return snapshot.update_slices(removed=slices).update_nodes(removed=list(self.names))

    def describe(self) -> str:
        return f"remove nodes {', '.join(self.names)}"


# ----------------------------------------------------------------------------- taints


@dataclass(frozen=True)
class Cordon:
    """Taint every device of some pools (``pool`` or ``driver/pool``), of the pools local
    to some nodes, and/or apply given DeviceTaintRules."""

    pools: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    rules: tuple[DeviceTaintRule, ...] = ()
    effect: str = "NoSchedule"
    key: str = CORDON_KEY

    def __post_init__(self) -> None:
        object.__setattr__(self, "pools", arguments.names(self.pools, "pools"))
        object.__setattr__(self, "nodes", arguments.names(self.nodes, "nodes"))
        rules = arguments.items_of(self.rules, DeviceTaintRule, "rules", "a DeviceTaintRule")
        object.__setattr__(self, "rules", tuple(rules))
        arguments.one_of(self.effect, TAINT_EFFECTS, "effect", "taint effect")
        arguments.text(self.key, "key", "a taint key")

    def taint_rules(self, snapshot: Snapshot) -> list[DeviceTaintRule]:
        """The DeviceTaintRules this cordon stands for (one per pool, then the given ones)."""
        snapshot_of(snapshot)
        wanted: list[tuple[str | None, str]] = []
        for spec in self.pools:
            driver, _, pool = spec.rpartition("/")
            wanted.append((driver or None, pool))
        node_set = set(self.nodes)
        seen = set(wanted)
        for s in snapshot.slices:
            if s.spec.node_name in node_set:
                entry = (s.spec.driver, s.spec.pool.name)
                if entry not in seen:
                    seen.add(entry)
                    wanted.append(entry)
        taint = DeviceTaint(key=self.key, value="", effect=self.effect)
        rules = [
            DeviceTaintRule(
                metadata=ObjectMeta(name=f"what-if-cordon-{i}"),
                device_selector=DeviceTaintSelector(driver=driver, pool=pool),
                taint=taint,
            )
            for i, (driver, pool) in enumerate(wanted)
        ]
        return [*rules, *self.rules]

    def apply(self, snapshot: Snapshot) -> Snapshot:
        from draspeed.rules.taint_rules import apply_taint_rules

        rules = self.taint_rules(snapshot)
        if not rules:
            return snapshot
        if self.rules:
            candidates = list(snapshot.slices)
        else:
            pools = {
                (r.device_selector.driver, r.device_selector.pool)
                for r in rules
                if r.device_selector is not None
            }
            candidates = [
                s
                for s in snapshot.slices
                if (s.spec.driver, s.spec.pool.name) in pools or (None, s.spec.pool.name) in pools
            ]
        patched = apply_taint_rules(
            candidates,
            rules,
            list(snapshot.classes.values()),
            list_type_attributes=snapshot.features.list_type_attributes,
        )
        changed = [new for old, new in zip(candidates, patched, strict=True) if new is not old]
        return snapshot.update_slices(added=changed) if changed else snapshot

    def describe(self) -> str:
        parts = []
        if self.pools:
            parts.append(f"pools {', '.join(self.pools)}")
        if self.nodes:
            parts.append(f"pools of nodes {', '.join(self.nodes)}")
        if self.rules:
            parts.append(f"{len(self.rules)} DeviceTaintRules")
        return f"cordon ({self.effect}) " + "; ".join(parts)


def changes_of(value: Any, name: str = "changes") -> list[Change]:
    """The changes of a sequence of them, or one change alone; else a TypeError naming
    ``name`` (or the item)."""
    what = "a change (AddNodes, RemoveNodes, Cordon)"
    if _is_change(value):
        return [value]
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(
            f"{name}: expected {what} (a sequence of them), got {arguments.type_name(value)}"
        )
    out = list(value)
    for i, item in enumerate(out):
        if not _is_change(item):
            raise TypeError(f"{name}[{i}]: expected {what}, got {arguments.type_name(item)}")
    return out


def _is_change(value: Any) -> bool:
    return callable(getattr(value, "apply", None)) and callable(getattr(value, "describe", None))


def apply_changes(snapshot: Snapshot, changes: Change | Sequence[Change]) -> Snapshot:
    """The snapshot after every change, in order (one change alone is one change)."""
    snapshot_of(snapshot)
    for change in changes_of(changes):
        snapshot = change.apply(snapshot)
    return snapshot


# ----------------------------------------------------------------------------- compare


@dataclass
class WhatIfReport:
    """Capacity before and after a list of changes."""

    changes: list[str]
    before: CapacityReport
    after: CapacityReport

    def delta(self) -> dict[str, Any]:
        """after - before: pods placed (total and per shape), free whole devices, free
        placements per profile, devices by state."""
        b, a = self.before, self.after
        bf, af = b.fragmentation.cluster, a.fragmentation.cluster
        profiles = sorted(set(bf.free_by_profile) | set(af.free_by_profile))
        bd, ad = bf.usage.devices.to_dict(), af.usage.devices.to_dict()
        return {
            "placed": a.fit.placed - b.fit.placed,
            "placedByShape": {
                s: a.fit.placed_by_shape.get(s, 0) - b.fit.placed_by_shape.get(s, 0)
                for s in a.fit.shapes
            },
            "freeWholeDevices": af.free_whole_devices - bf.free_whole_devices,
            "freeByProfile": {
                p: af.free_by_profile.get(p, 0) - bf.free_by_profile.get(p, 0) for p in profiles
            },
            "devices": {k: ad[k] - bd[k] for k in bd},
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "changes": list(self.changes),
            "delta": self.delta(),
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
        }


def what_if(
    snapshot: Snapshot,
    templates: ShapeSource | Sequence[ShapeSource],
    changes: Change | Sequence[Change],
    **options: Any,
) -> WhatIfReport:
    """:func:`~draspeed.analysis.capacity.analyze` on ``snapshot`` and on the snapshot
    after ``changes``; ``options`` go to ``analyze`` (strategy, ratios, max_pods, ...)
    except ``nodes``: each side uses all of its own nodes."""
    if "nodes" in options:
        raise TypeError("what_if compares whole clusters: nodes cannot be chosen")
    snapshot_of(snapshot)
    changes = changes_of(changes)
    before = analyze(snapshot, templates, **options)
    after = analyze(apply_changes(snapshot, changes), templates, **options)
    return WhatIfReport([c.describe() for c in changes], before, after)
