"""The bulk JSON path of ``load`` (``draspeed.api.bulk``, ``_decode.SliceBuilder``)
against the ordinary path on the same text.

The ordinary path (the text parsed whole into dicts, then decoded) is the reference:
the bulk path must give equal objects, equal ``raw`` mappings, the same warnings in
the same order, and the same error (type, message, notes) for every input. Inputs are
the clusters of every ``draspeed.generate`` kind, as ``kind: List`` and as
``ResourceSliceList`` texts, with random edits: unknown fields, nulls, list
attributes, request policies, taints, counters, per-device node selection, other
versions, values seen for the first time, bad values, and texts that stop being JSON
part way. Also here: ``ResourceSlice.raw`` read on demand (copies, pickling, threads).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import pickle
import random
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draspeed.api._model_tree import clone
from draspeed.api.bulk_claims import ClaimBuilder
from draspeed.api.context import Validation
from draspeed.api.loader import load
from draspeed.api.model import ResourceClaim, ResourceSlice
from draspeed.generate import KINDS, generate

_LOAD_MODULE = sys.modules["draspeed.api.loader"]


@contextmanager
def _ordinary_path() -> Iterator[None]:
    """``load`` without the bulk path: every text is parsed whole."""
    original = _LOAD_MODULE.read_list
    _LOAD_MODULE.read_list = lambda *args: None  # type: ignore[attr-defined]
    try:
        yield
    finally:
        _LOAD_MODULE.read_list = original  # type: ignore[attr-defined]


def _outcome(text: bytes, validate: bool | Validation) -> tuple[Any, ...]:
    """Everything ``load`` gives for a text: objects, raws, warnings, or the error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            objects = load(text, validate=validate)
        except Exception as exc:  # compared whole: type, message and notes
            result: tuple[Any, ...] = (
                "error",
                type(exc).__name__,
                str(exc),
                getattr(exc, "__notes__", None),
            )
        else:
            result = (
                "objects",
                objects.by_kind(),
                [s.raw for s in objects.slices],
                objects.warnings,
            )
    return (*result, [(w.category, str(w.message)) for w in caught])


def _fast_slices(text: bytes) -> int:
    """How many slices the bulk path built itself (their ``raw`` is still text)."""
    try:
        objects = load(text, validate=False)
    except Exception:
        return 0
    return sum(s.raw_text is not None for s in objects.slices)


def _same(text: bytes, validate: bool | Validation) -> tuple[Any, ...]:
    fast = _outcome(text, validate)
    with _ordinary_path():
        ordinary = _outcome(text, validate)
    assert fast == ordinary
    return fast


# ------------------------------------------------------------------ the inputs

_CLUSTERS: dict[str, Any] = {}


def _cluster(kind: str) -> Any:
    if kind not in _CLUSTERS:
        _CLUSTERS[kind] = generate(kind, 3, seed=1)
    return copy.deepcopy(_CLUSTERS[kind])


def _as_list(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": objects}


def _as_slice_list(slices: list[dict[str, Any]]) -> dict[str, Any]:
    """As the API server lists them: items without apiVersion and kind."""
    items = [{k: v for k, v in s.items() if k not in ("apiVersion", "kind")} for s in slices]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSliceList",
        "metadata": {"resourceVersion": "7"},
        "items": items,
    }


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("shape", ["List", "ResourceSliceList"])
@pytest.mark.parametrize("validate", [True, False])
def test_generated_clusters(kind: str, shape: str, validate: bool) -> None:
    cluster = _cluster(kind)
    doc = _as_list(cluster.items()) if shape == "List" else _as_slice_list(cluster.slices)
    text = msgspec.json.encode(doc)
    outcome = _same(text, validate)
    assert outcome[0] == "objects"
    assert len(outcome[1]["ResourceSlice"]) == len(cluster.slices)


def test_the_bulk_path_builds_most_slices_itself() -> None:
    """The comparisons above are worth something only if the bulk path is taken."""
    cluster = generate("nvidia-gpu", 40, seed=2)
    text = msgspec.json.encode(_as_slice_list(cluster.slices))
    built = _fast_slices(text)
    assert built >= len(cluster.slices) - 3  # the first of a driver go the checked way
    objects = load(text)
    assert [s.raw for s in objects.slices] == _as_slice_list(cluster.slices)["items"]
    _same(text, True)


@pytest.mark.parametrize(
    "late",
    ["repeated uuid", "uuid of 65 characters", "uuid of 20 non-ASCII characters", "none"],
)
def test_keys_whose_values_are_all_different(late: str) -> None:
    """A key whose string values are nearly all new (a uuid per GPU) stops being looked
    up after a few hundred values; values after that decode and fail as before."""
    slices = generate("nvidia-gpu", 60, seed=3).slices  # 480 uuids
    devices = slices[-1]["spec"]["devices"]
    first = slices[0]["spec"]["devices"][0]["attributes"]["uuid"]["string"]
    if late == "repeated uuid":
        devices[0]["attributes"]["uuid"] = {"string": first}
    elif late == "uuid of 65 characters":
        devices[1]["attributes"]["uuid"] = {"string": "u" * 65}
    elif late == "uuid of 20 non-ASCII characters":
        devices[2]["attributes"]["uuid"] = {"string": "é" * 20}
    for validate in (True, False):
        _same(msgspec.json.encode(_as_slice_list(slices)), validate)


# ---------------------------------------------------------------------- edits

Edit = Callable[[dict[str, Any], Any], None]
_DRIVER_KEYS = ("productName", "gpu.nvidia.com/productName")


def _devices(s: dict[str, Any]) -> list[dict[str, Any]]:
    devices: list[dict[str, Any]] = s["spec"].setdefault("devices", [])
    return devices


def _device(s: dict[str, Any], pick: Any) -> dict[str, Any] | None:
    devices = _devices(s)
    return pick.choice(devices) if devices else None


def _on_device(change: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(s: dict[str, Any], pick: Any) -> None:
        d = _device(s, pick)
        if d is not None:
            change(d)

    return edit


def _on_attribute(value: Any, key: str | None = None) -> Edit:
    def change(d: dict[str, Any]) -> None:
        attributes = d.setdefault("attributes", {})
        name = key or (next(iter(attributes)) if attributes else "x")
        attributes[name] = value

    return _on_device(change)


def _on_capacity(value: Any) -> Edit:
    def change(d: dict[str, Any]) -> None:
        capacity = d.setdefault("capacity", {})
        capacity[next(iter(capacity)) if capacity else "memory"] = value

    return _on_device(change)


def _set(path: tuple[str | int, ...], value: Any) -> Edit:
    """Set the field at ``path`` (ints index lists), making missing objects on the way."""

    def edit(s: dict[str, Any], pick: Any) -> None:
        target: Any = s
        for key in path[:-1]:
            target = target[key] if isinstance(key, int) else target.setdefault(key, {})
        target[path[-1]] = value

    return edit


def _drop(path: tuple[str, ...]) -> Edit:
    def edit(s: dict[str, Any], pick: Any) -> None:
        target = s
        for key in path[:-1]:
            target = target.get(key, {})
        target.pop(path[-1], None)

    return edit


def _per_device_nodes(s: dict[str, Any], pick: Any) -> None:
    spec = s["spec"]
    for key in ("nodeName", "allNodes", "nodeSelector"):
        spec.pop(key, None)
    spec["perDeviceNodeSelection"] = True
    for i, d in enumerate(_devices(s)):
        d["nodeName"] = f"node-{i}"


def _all_nodes(s: dict[str, Any], pick: Any) -> None:
    s["spec"].pop("nodeName", None)
    s["spec"]["allNodes"] = True


def _node_selector(s: dict[str, Any], pick: Any) -> None:
    s["spec"].pop("nodeName", None)
    s["spec"]["nodeSelector"] = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]
    }


def _many_devices(taint: bool) -> Edit:
    def edit(s: dict[str, Any], pick: Any) -> None:
        devices = _devices(s)
        if not devices:
            return
        template = devices[0]
        s["spec"]["devices"] = [{**template, "name": f"many-{i}"} for i in range(70)]
        if taint:
            s["spec"]["devices"][-1]["taints"] = [{"key": "k", "effect": "NoSchedule"}]

    return edit


def _v1beta1(s: dict[str, Any], pick: Any) -> None:
    s["apiVersion"] = "resource.k8s.io/v1beta1"
    s["spec"]["devices"] = [
        {"name": d.get("name"), "basic": {k: v for k, v in d.items() if k != "name"}}
        for d in _devices(s)
    ]


_OWNER = {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": "u1", "controller": True}
_MANAGED = {
    "manager": "kubelet",
    "operation": "Update",
    "apiVersion": "resource.k8s.io/v1",
    "time": "2026-01-02T03:04:05Z",
    "fieldsType": "FieldsV1",
    "fieldsV1": {"f:spec": {"f:devices": {}}},
}
# ObjectMeta fields the API server checks besides name, namespace, labels and annotations:
# the same edits of slices and of claims.
_METADATA_EDITS: dict[str, Edit] = {
    "generateName": _set(("metadata", "generateName"), "node-1-gpu-"),
    "bad generateName": _set(("metadata", "generateName"), "Node_1-"),
    "null generateName": _set(("metadata", "generateName"), None),
    "finalizers": _set(("metadata", "finalizers"), ["example.com/keep", "kubernetes"]),
    "unqualified finalizer": _set(("metadata", "finalizers"), ["keep"]),
    "bad finalizer": _set(("metadata", "finalizers"), ["example.com/a b"]),
    "orphan and foreground finalizers": _set(
        ("metadata", "finalizers"), ["orphan", "foregroundDeletion"]
    ),
    "finalizers as text": _set(("metadata", "finalizers"), "x"),
    "negative generation": _set(("metadata", "generation"), -1),
    # the fields the model does not keep: typed always, owner references and managed
    # fields checked as ValidateObjectMeta checks them
    "creationTimestamp": _set(("metadata", "creationTimestamp"), "2026-02-28T10:00:00Z"),
    "leap day": _set(("metadata", "creationTimestamp"), "2024-02-29T23:59:59.5+01:00"),
    "not a day": _set(("metadata", "creationTimestamp"), "2026-02-29T10:00:00Z"),
    "timestamp as number": _set(("metadata", "creationTimestamp"), 1700000000),
    "null deletionTimestamp": _set(("metadata", "deletionTimestamp"), None),
    "bad deletionTimestamp": _set(("metadata", "deletionTimestamp"), "2026-01-01 10:00:00"),
    "grace period": _set(("metadata", "deletionGracePeriodSeconds"), 30),
    "grace period as text": _set(("metadata", "deletionGracePeriodSeconds"), "30"),
    "grace period too big": _set(("metadata", "deletionGracePeriodSeconds"), 2**63),
    "selfLink as number": _set(("metadata", "selfLink"), 1),
    "owner": _set(("metadata", "ownerReferences"), [_OWNER]),
    "owner without uid": _set(("metadata", "ownerReferences"), [{**_OWNER, "uid": ""}]),
    "owner without anything": _set(("metadata", "ownerReferences"), [{}]),
    "null owner": _set(("metadata", "ownerReferences"), [None]),
    "owner uid as number": _set(("metadata", "ownerReferences"), [{**_OWNER, "uid": 7}]),
    "owner controller as text": _set(
        ("metadata", "ownerReferences"), [{**_OWNER, "controller": "true"}]
    ),
    "owner unknown field": _set(("metadata", "ownerReferences"), [{**_OWNER, "future": 1}]),
    "owner version with two slashes": _set(
        ("metadata", "ownerReferences"), [{**_OWNER, "apiVersion": "a/b/c"}]
    ),
    "owner group without version": _set(
        ("metadata", "ownerReferences"), [{**_OWNER, "apiVersion": "apps/"}]
    ),
    "event owner": _set(
        ("metadata", "ownerReferences"), [{**_OWNER, "kind": "Event", "name": "<e>&"}]
    ),
    "event owner of another group": _set(
        ("metadata", "ownerReferences"),
        [{**_OWNER, "apiVersion": "events.k8s.io/v1", "kind": "Event"}],
    ),
    "two controllers": _set(
        ("metadata", "ownerReferences"), [_OWNER, {**_OWNER, "name": "node-2", "uid": "u2"}]
    ),
    "one controller, one not": _set(
        ("metadata", "ownerReferences"),
        [_OWNER, {**_OWNER, "name": "node-2", "controller": False, "blockOwnerDeletion": True}],
    ),
    "owners as text": _set(("metadata", "ownerReferences"), "node-1"),
    "managed fields": _set(("metadata", "managedFields"), [_MANAGED]),
    "managed without operation": _set(
        ("metadata", "managedFields"), [{**_MANAGED, "operation": ""}]
    ),
    "managed unknown operation": _set(
        ("metadata", "managedFields"), [{**_MANAGED, "operation": "Patch"}]
    ),
    "managed fieldsType": _set(("metadata", "managedFields"), [{**_MANAGED, "fieldsType": "V2"}]),
    "manager too long": _set(("metadata", "managedFields"), [{**_MANAGED, "manager": "m" * 129}]),
    "manager not printable": _set(
        ("metadata", "managedFields"), [{**_MANAGED, "manager": "kübe\u2028let\t"}]
    ),
    "managed subresource too long": _set(
        ("metadata", "managedFields"), [{**_MANAGED, "subresource": "s" * 257}]
    ),
    "managed time": _set(("metadata", "managedFields"), [{**_MANAGED, "time": "yesterday"}]),
    "managed fieldsV1 anything": _set(("metadata", "managedFields"), [{**_MANAGED, "fieldsV1": 5}]),
}


_EDITS: dict[str, Edit] = {
    # fields the Structs do not know, and nulls
    "unknown top field": _set(("status",), {"x": 1}),
    "unknown spec field": _set(("spec", "futureField"), [1]),
    "unknown metadata field": _set(("metadata", "futureMeta"), {"k": [1, None]}),
    "unknown device field": _on_device(lambda d: d.update(futureField={"x": 1})),
    "unknown attribute field": _on_attribute({"int": 1, "future": 2}),
    "unknown capacity field": _on_capacity({"value": "1", "future": 2}),
    "null name": _set(("metadata", "name"), None),
    "null labels": _set(("metadata", "labels"), None),
    "labels": _set(("metadata", "labels"), {"a": "b", "c": ""}),
    "bad label value": _set(("metadata", "labels"), {"a": 1}),
    "annotations": _set(("metadata", "annotations"), {"x/y": "z" * 100}),
    # labels and annotations the API server refuses (the fast path must not take them)
    "bad label key": _set(("metadata", "labels"), {"bad key!": "x"}),
    "label value too long": _set(("metadata", "labels"), {"a": "v" * 64}),
    "label value with a space": _set(("metadata", "labels"), {"a": "b c"}),
    "bad annotation key": _set(("metadata", "annotations"), {"Bad Key!": "y"}),
    "upper-case annotation key": _set(("metadata", "annotations"), {"Example.COM/Key": "y"}),
    "annotations too big": _set(("metadata", "annotations"), {"a": "z" * (256 * 1024)}),
    # other ObjectMeta fields the API server checks
    **_METADATA_EDITS,
    "null nodeName": _set(("spec", "nodeName"), None),
    "null devices": _set(("spec", "devices"), None),
    "no devices": _set(("spec", "devices"), []),
    "null sharedCounters": _set(("spec", "sharedCounters"), None),
    "null pool generation": _set(("spec", "pool", "generation"), None),
    "pool generation too big": _set(("spec", "pool", "generation"), 2**70),
    "slice count zero": _set(("spec", "pool", "resourceSliceCount"), 0),
    "metadata generation too big": _set(("metadata", "generation"), 2**64),
    "no metadata": _drop(("metadata",)),
    "no spec": _drop(("spec",)),
    "no driver": _drop(("spec", "driver")),
    "new driver": _set(("spec", "driver"), "new.example.com"),
    "bad driver": _set(("spec", "driver"), "Bad_Driver"),
    "null device taints": _on_device(lambda d: d.update(taints=None)),
    "null attributes": _on_device(lambda d: d.update(attributes=None)),
    "null capacity": _on_device(lambda d: d.update(capacity=None)),
    "no device name": _on_device(lambda d: d.pop("name", None)),
    "new device name": _on_device(lambda d: d.update(name="brand-new-device")),
    "bad device name": _on_device(lambda d: d.update(name="GPU_0")),
    # attribute values
    "null value": _on_attribute({"string": None}),
    "two values": _on_attribute({"string": "x", "int": 1}),
    "no value": _on_attribute({}),
    "ints": _on_attribute({"ints": [1, 2]}),
    "strings": _on_attribute({"strings": ["a", "b"]}),
    "versions": _on_attribute({"versions": ["1.0.0"]}),
    "bools": _on_attribute({"bools": [True]}),
    "new int": _on_attribute({"int": 2**40}, "serial"),
    "int out of range": _on_attribute({"int": 2**63}, "serial"),
    "int as float": _on_attribute({"int": 1.0}),
    "bool as int": _on_attribute({"bool": 1}),
    "new bool": _on_attribute({"bool": False}, "flag"),
    "new version": _on_attribute({"version": "9.9.9-rc.1"}, "fw"),
    "bad version": _on_attribute({"version": "1.2"}, "fw"),
    "new short string": _on_attribute({"string": "é" * 16}, "tag"),
    "string of 64 bytes": _on_attribute({"string": "x" * 64}, "tag"),
    "string too long": _on_attribute({"string": "x" * 65}, "tag"),
    "non-ASCII too long": _on_attribute({"string": "é" * 33}, "tag"),
    "new qualified key": _on_attribute({"int": 1}, "other.example.com/x"),
    "negative int": _on_attribute({"int": -42}, "offset"),
    "int of 18 digits": _on_attribute({"int": -(10**17) - 7}, "serial"),
    "int of 19 digits": _on_attribute({"int": 10**18 + 3}, "serial"),
    "int as fraction": _on_attribute({"int": 2.5}),
    "list kind named in a string": _on_attribute({"string": '"ints"'}, "note"),
    "escaped key": _on_attribute({"int": 1}, 'quote"d'),
    "escaped value": _on_attribute({"string": "tab\there"}, "note"),
    "non-ASCII value": _on_attribute({"string": "Grafikkarte ü"}, "note"),
    "attributes as list": _on_device(lambda d: d.update(attributes=[])),
    "attributes as text": _on_device(lambda d: d.update(attributes="x")),
    "empty attributes": _on_device(lambda d: d.update(attributes={})),
    "capacity as number map": _on_device(lambda d: d.update(capacity={"memory": 5})),
    "bad key": _on_attribute({"int": 1}, "bad key!"),
    "key with and without domain": _on_device(
        lambda d: d.setdefault("attributes", {}).update(
            {key: {"string": "same"} for key in _DRIVER_KEYS}
        )
    ),
    "too many attributes": _on_device(
        lambda d: d.setdefault("attributes", {}).update({f"a{i}": {"int": i} for i in range(33)})
    ),
    # capacities
    "request policy": _on_capacity(
        {"value": "80Gi", "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi"}}}
    ),
    "null request policy": _on_capacity({"value": "80Gi", "requestPolicy": None}),
    "new quantity": _on_capacity({"value": "1.5Ti"}),
    "bad quantity": _on_capacity({"value": "1K"}),
    "numeric quantity": _on_capacity({"value": 5}),
    "bare quantity": _on_capacity("80Gi"),
    # device extras and node selection
    "taints": _on_device(lambda d: d.update(taints=[{"key": "k", "effect": "NoSchedule"}])),
    "counters": _on_device(
        lambda d: d.update(
            consumesCounters=[{"counterSet": "cs", "counters": {"mem": {"value": "1Gi"}}}]
        )
    ),
    "shared counters": _set(
        ("spec", "sharedCounters"), [{"name": "cs", "counters": {"mem": {"value": "8Gi"}}}]
    ),
    # counter texts the builder remembers: each distinct one goes the checked way once
    "null counters": _on_device(lambda d: d.update(consumesCounters=None)),
    "no counters": _on_device(lambda d: d.update(consumesCounters=[])),
    "counters as object": _on_device(lambda d: d.update(consumesCounters={"counterSet": "cs"})),
    "bad counter quantity": _on_device(
        lambda d: d.update(
            consumesCounters=[{"counterSet": "cs", "counters": {"mem": {"value": "1K"}}}]
        )
    ),
    "counter set twice": _on_device(
        lambda d: d.update(
            consumesCounters=[
                {"counterSet": "cs", "counters": {"mem": {"value": "1Gi"}}},
                {"counterSet": "cs", "counters": {"mem": {"value": "2Gi"}}},
            ]
        )
    ),
    "null shared counters": _set(("spec", "sharedCounters"), None),
    "no shared counters": _set(("spec", "sharedCounters"), []),
    "shared counters as object": _set(("spec", "sharedCounters"), {"name": "cs"}),
    "bad shared counter name": _set(
        ("spec", "sharedCounters"), [{"name": "Bad_Set", "counters": {"mem": {"value": "8Gi"}}}]
    ),
    "shared counters without counters": _set(("spec", "sharedCounters"), [{"name": "cs"}]),
    "binding conditions": _on_device(lambda d: d.update(bindingConditions=["ready"])),
    "multiple allocations": _on_device(lambda d: d.update(allowMultipleAllocations=True)),
    "per-device node selection": _per_device_nodes,
    "all nodes": _all_nodes,
    "node selector": _node_selector,
    "both nodeName and allNodes": _set(("spec", "allNodes"), True),
    "allNodes false": _set(("spec", "allNodes"), False),
    "70 plain devices": _many_devices(taint=False),
    "70 devices, one tainted": _many_devices(taint=True),
    # other versions and kinds
    "v1beta2": _set(("apiVersion",), "resource.k8s.io/v1beta2"),
    "v1beta1": _v1beta1,
    "unknown version": _set(("apiVersion",), "resource.k8s.io/v9"),
    "empty kind": _set(("kind",), ""),
    "DeviceClass kind": _set(("kind",), "DeviceClass"),
}

_edits = st.lists(
    st.tuples(st.sampled_from(sorted(_EDITS)), st.integers(0, 10**6)), min_size=1, max_size=3
)


def _edited(kind: str, edits: list[tuple[str, int]]) -> list[dict[str, Any]]:
    slices = _cluster(kind).slices
    for name, seed in edits:
        pick = random.Random(seed)
        # (an earlier edit may have taken away what this one changes)
        with contextlib.suppress(TypeError, KeyError, AttributeError):
            _EDITS[name](pick.choice(slices), pick)
    return slices


def _write(doc: Any, style: str) -> bytes:
    """The JSON text of ``doc``: compact (as the API server writes it), indented (as
    kubectl prints it), or with every non-ASCII character escaped."""
    if style == "compact":
        return msgspec.json.encode(doc)
    if style == "indented":
        return json.dumps(doc, indent=2, ensure_ascii=False).encode()
    if style == "kubectl":  # four spaces a level (read without them: see bulk.py)
        return json.dumps(doc, indent=4, ensure_ascii=False).encode()
    return json.dumps(doc, ensure_ascii=True).encode()


_STYLES = ["compact", "indented", "kubectl", "escaped"]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(sorted(KINDS)),
    edits=_edits,
    shape=st.sampled_from(["List", "ResourceSliceList"]),
    style=st.sampled_from(_STYLES),
    validate=st.booleans(),
)
def test_edited_clusters(
    kind: str, edits: list[tuple[str, int]], shape: str, style: str, validate: bool
) -> None:
    slices = _edited(kind, edits)
    doc = _as_list(slices) if shape == "List" else _as_slice_list(slices)
    _same(_write(doc, style), validate)


@pytest.mark.parametrize("name", sorted(_EDITS))
def test_each_edit(name: str) -> None:
    """Every edit at least once, on a cluster of GPU nodes, in both list shapes and
    every style of text."""
    slices = _cluster("nvidia-gpu").slices
    _EDITS[name](slices[-1], random.Random(0))
    for doc in (_as_list(slices), _as_slice_list(slices)):
        for style in _STYLES:
            for validate in (True, False):
                _same(_write(doc, style), validate)


# ------------------------------------------------------------------ claims

_CLAIM_CLUSTER: list[Any] = []


def _claims() -> list[dict[str, Any]]:
    """Allocated claims of a small cluster (results, node selectors), one reserved."""
    if not _CLAIM_CLUSTER:
        cluster = generate("scheduler-perf", 3, seed=1, fill=0.5)
        claims = cluster.claims
        claims[0]["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": "u-1"}]
        claims[1]["metadata"].update(
            uid="0d6f",
            resourceVersion="12",
            generation=1,
            labels={"app": "x"},
            annotations={"resource.kubernetes.io/pod-claim-name": "gpu"},
            creationTimestamp="2026-01-01T00:00:00Z",
            generateName="pod-gpu-",
            finalizers=["resource.kubernetes.io/delete-protection"],
            ownerReferences=[
                {"apiVersion": "v1", "kind": "Pod", "name": "pod", "uid": "u-1", "controller": True}
            ],
        )
        claims[2]["spec"]["devices"]["requests"][0]["exactly"].update(
            allocationMode="ExactCount", count=1
        )
        _CLAIM_CLUSTER.append(claims)
    return copy.deepcopy(_CLAIM_CLUSTER[0])


def _result_set(key: str, value: Any) -> Edit:
    def edit(c: dict[str, Any], pick: Any) -> None:
        c["status"]["allocation"]["devices"]["results"][0][key] = value

    return edit


def _selector_set(key: str, value: Any) -> Edit:
    def edit(c: dict[str, Any], pick: Any) -> None:
        selector = c["status"]["allocation"].setdefault(
            "nodeSelector",
            {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
                ]
            },
        )
        selector["nodeSelectorTerms"][0]["matchFields"][0][key] = value

    return edit


def _exact_set(key: str, value: Any) -> Edit:
    return _set(("spec", "devices", "requests", 0, "exactly", key), value)


def _two_requests(same_name: bool) -> Edit:
    def edit(c: dict[str, Any], pick: Any) -> None:
        requests = c["spec"]["devices"]["requests"]
        requests.append(copy.deepcopy(requests[0]))
        if not same_name:
            requests[-1]["name"] = "second"

    return edit


def _many(path: tuple[Any, ...], count: int) -> Edit:
    def edit(c: dict[str, Any], pick: Any) -> None:
        target = c
        for key in path[:-1]:
            target = target[key]
        items = target[path[-1]]
        target[path[-1]] = [copy.deepcopy(items[0]) for _ in range(count)]

    return edit


_CLAIM_EDITS: dict[str, Edit] = {
    "unknown status field": _set(("status", "future"), 1),
    "unknown result field": _result_set("future", 1),
    "null status": _set(("status",), None),
    "empty status": _set(("status",), {}),
    "no status": _drop(("status",)),
    "no spec": _drop(("spec",)),
    "no devices": _set(("spec",), {}),
    "no requests": _set(("spec", "devices", "requests"), []),
    "no metadata": _drop(("metadata",)),
    "no name": _drop(("metadata", "name")),
    "generateName only": _set(("metadata",), {"generateName": "c-", "namespace": "ns"}),
    "bad name": _set(("metadata", "name"), "Bad_Name"),
    "bad namespace": _set(("metadata", "namespace"), "Bad.NS"),
    "no namespace": _drop(("metadata", "namespace")),
    "claim labels": _set(("metadata", "labels"), {"a": "b"}),
    "bad claim label": _set(("metadata", "labels"), {"bad key!": "b"}),
    "bad claim annotation": _set(("metadata", "annotations"), {"Bad Key!": "b"}),
    "claim generation too big": _set(("metadata", "generation"), 2**63),
    **{f"claim {name}": edit for name, edit in _METADATA_EDITS.items()},
    "null uid": _set(("metadata", "uid"), None),
    "bad request name": _set(("spec", "devices", "requests", 0, "name"), "Req_0"),
    "two requests": _two_requests(same_name=False),
    "a request twice": _two_requests(same_name=True),
    "33 requests": _many(("spec", "devices", "requests"), 33),
    "no class": _exact_set("deviceClassName", ""),
    "bad class": _exact_set("deviceClassName", "Bad_Class"),
    "null class": _exact_set("deviceClassName", None),
    "mode All": _exact_set("allocationMode", "All"),
    "empty mode": _exact_set("allocationMode", ""),
    "unknown mode": _exact_set("allocationMode", "Some"),
    "count 0": _exact_set("count", 0),
    "count 3": _exact_set("count", 3),
    "negative count": _exact_set("count", -1),
    "count too big": _exact_set("count", 2**63),
    "count as fraction": _exact_set("count", 1.5),
    "null count": _exact_set("count", None),
    "selectors": _exact_set("selectors", [{"cel": {"expression": "true"}}]),
    "admin access": _exact_set("adminAccess", True),
    "first available": _set(
        ("spec", "devices", "requests", 0),
        {"name": "r", "firstAvailable": [{"name": "s", "deviceClassName": "x"}]},
    ),
    "no allocation": _drop(("status", "allocation")),
    "null allocation": _set(("status", "allocation"), None),
    "no results": _set(("status", "allocation", "devices", "results"), []),
    "unknown request in result": _result_set("request", "other"),
    "subrequest in result": _result_set("request", "req-0/sub"),
    "bad driver in result": _result_set("driver", "Bad_Driver"),
    "bad pool in result": _result_set("pool", "bad pool"),
    "bad device in result": _result_set("device", "Dev_0"),
    "share in result": _result_set("shareID", "7b1dc2f0-3c58-4c6a-9e0a-4d6f1b6e2a11"),
    "bad share in result": _result_set("shareID", "x"),
    "admin access in result": _result_set("adminAccess", True),
    "consumed capacity": _result_set("consumedCapacity", {"memory": "1Gi"}),
    "129 results": _many(("status", "allocation", "devices", "results"), 129),
    "allocation timestamp": _set(
        ("status", "allocation", "allocationTimestamp"), "2026-01-01T00:00:00Z"
    ),
    "allocation config": _set(("status", "allocation", "devices", "config"), []),
    "no node selector": _drop(("status", "allocation", "nodeSelector")),
    "null node selector": _set(("status", "allocation", "nodeSelector"), None),
    "no terms": _set(("status", "allocation", "nodeSelector"), {"nodeSelectorTerms": []}),
    "empty term": _set(("status", "allocation", "nodeSelector"), {"nodeSelectorTerms": [{}]}),
    "expressions term": _set(
        ("status", "allocation", "nodeSelector"),
        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]},
    ),
    "NotIn field": _selector_set("operator", "NotIn"),
    "two node names": _selector_set("values", ["a", "b"]),
    "other field key": _selector_set("key", "metadata.namespace"),
    "bad node name": _selector_set("values", ["Bad_Node"]),
    "reserved": _set(("status", "reservedFor"), [{"resource": "pods", "name": "p", "uid": "u"}]),
    "reserved with api group": _set(
        ("status", "reservedFor"), [{"apiGroup": "x.io", "resource": "r", "name": "p", "uid": "u"}]
    ),
    "reserved unknown field": _set(("status", "reservedFor"), [{"future": 1}]),
    "257 reserved": _set(
        ("status", "reservedFor"),
        [{"resource": "pods", "name": f"p{i}", "uid": "u"} for i in range(257)],
    ),
    "device status": _set(("status", "devices"), [{"driver": "d", "pool": "p", "device": "x"}]),
    "claim v1beta2": _set(("apiVersion",), "resource.k8s.io/v1beta2"),
    "claim v1beta1": _set(("apiVersion",), "resource.k8s.io/v1beta1"),
    "claim kind template": _set(("kind",), "ResourceClaimTemplate"),
}


def _claim_docs(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    typed = [{k: v for k, v in c.items() if k not in ("apiVersion", "kind")} for c in claims]
    return [
        _as_list(claims),
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimList", "items": typed},
    ]


@pytest.mark.parametrize("name", sorted(_CLAIM_EDITS))
def test_each_claim_edit(name: str) -> None:
    """Each edit on the last claim of a list: the bulk path gives what the ordinary
    parse gives (claims, raws, warnings or the error), in both list shapes."""
    claims = _claims()
    with contextlib.suppress(TypeError, KeyError, AttributeError, IndexError):
        _CLAIM_EDITS[name](claims[-1], random.Random(0))
    for doc in _claim_docs(claims):
        for style in _STYLES:
            for validate in (True, False):
                _same(_write(doc, style), validate)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(sorted(_CLAIM_EDITS)), st.integers(0, 10**6)),
        min_size=1,
        max_size=3,
    ),
    style=st.sampled_from(_STYLES),
    validate=st.sampled_from(["strict", "warn", "ignore"]),
)
def test_edited_claims(edits: list[tuple[str, int]], style: str, validate: Validation) -> None:
    claims = _claims()
    for name, seed in edits:
        pick = random.Random(seed)
        with contextlib.suppress(TypeError, KeyError, AttributeError, IndexError):
            _CLAIM_EDITS[name](pick.choice(claims), pick)
    for doc in _claim_docs(claims):
        _same(_write(doc, style), validate)


def test_the_bulk_path_builds_common_claims_itself() -> None:
    built: list[Any] = []
    original = ClaimBuilder.build

    def counted(self: ClaimBuilder, *args: Any) -> Any:
        claim = original(self, *args)
        built.append(claim)
        return claim

    claims = _claims()
    for doc in _claim_docs(claims):
        built.clear()
        ClaimBuilder.build = counted  # type: ignore[method-assign,assignment]
        try:
            loaded = load(msgspec.json.encode(doc)).claims
        finally:
            ClaimBuilder.build = original  # type: ignore[method-assign]
        assert len(loaded) == len(claims) and all(c is not None for c in built)
        assert [c for c in built] == loaded


# ------------------------------------------------- texts that stop being JSON


def _texts_with_a_late_break() -> list[tuple[str, bytes]]:
    slices = _cluster("nvidia-gpu").slices
    bad = copy.deepcopy(slices)
    bad[0]["spec"]["driver"] = "Bad_Driver"  # an error in the first item
    warned = copy.deepcopy(slices)
    warned[0]["spec"]["devices"][0]["attributes"].update(
        {key: {"string": "same"} for key in _DRIVER_KEYS}
    )  # a warning in the first item
    cases = []
    for label, items in (("valid", slices), ("error first", bad), ("warning first", warned)):
        text = json.dumps(_as_list(items), indent=1)
        last = text.rindex('"name"')
        cases += [
            # Each is no JSON to msgspec, but YAML reads the first three and Go's JSON
            # decoding the last (a byte of no UTF-8 is U+FFFD): the ordinary path loads
            # them.
            (f"{label}, trailing comma", text[:last] + '"x": [1,],' + text[last:]),
            (f"{label}, single quotes", text[:last] + "'x': 1," + text[last:]),
            (f"{label}, number too big", text[:last] + '"x": 1e400,' + text[last:]),
            (f"{label}, invalid UTF-8", text[:last] + '"x": "\udcff",' + text[last:]),
        ]
    return [(label, text.encode("utf-8", "surrogateescape")) for label, text in cases]


@pytest.mark.parametrize(("label", "text"), _texts_with_a_late_break(), ids=lambda x: str(x)[:30])
def test_a_late_item_that_is_no_json(label: str, text: bytes) -> None:
    """The bulk path starts, finds the last item is no JSON, and starts over. The break
    is a field "x" the object does not have: strict refuses it, warn warns."""
    outcome = _same(text, True)
    if label.startswith("error"):
        assert outcome[:2] == ("error", "InputError") and "Bad_Driver" in outcome[2]
    else:
        assert outcome[:2] == ("error", "InputError") and '.x"' in outcome[2], outcome[2]
        outcome = _same(text, "warn")
        assert outcome[0] == "objects"
        # Warned once each, not twice: the unknown field, and the first item's warning.
        assert len(outcome[-1]) == 1 + label.startswith("warning")


@pytest.mark.parametrize(
    "value",
    [
        b"1e400",
        b"-1e400",
        b"1" + b"0" * 5000,
        b"0.5",
        b'"\xff"',
        b'"\xed\xa0\x80"',
        b'"\\u00e9\\n"',
        b'{"a": [true, false, null]}',
    ],
)
@pytest.mark.parametrize("where", ["metadata", "device"])
def test_values_in_skipped_and_untyped_fields(value: bytes, where: str) -> None:
    """msgspec skips unknown metadata fields (and takes ``Any`` fields) less strictly
    than it decodes a whole text: numbers out of range and text that is not UTF-8 must
    still end as the ordinary path ends them (here: YAML reads them, or an error)."""
    value = value.decode("unicode_escape").encode("latin-1")
    slices = _cluster("example").slices
    text = msgspec.json.encode(_as_slice_list(slices))
    if where == "metadata":
        marker = b'"metadata":{'
        at = text.rindex(marker) + len(marker)
        text = text[:at] + b'"managedFields":[{"x":' + value + b"}]," + text[at:]
    else:
        marker = b'"devices":[{'
        at = text.rindex(marker) + len(marker)
        text = text[:at] + b'"taints":[{"key":' + value + b"}]," + text[at:]
    _same(text, True)
    _same(text, False)


def test_a_bad_item_is_reported_as_the_ordinary_path_does() -> None:
    slices = _cluster("example").slices
    slices[1]["spec"]["devices"][0]["name"] = "Not_A_Label"
    outcome = _same(msgspec.json.encode(_as_slice_list(slices)), True)
    assert outcome[:3] == (
        "error",
        "InputError",
        f"ResourceSlice {slices[1]['metadata']['name']}: spec.devices[0].name: "
        'Invalid value: "Not_A_Label": a lowercase RFC 1123 label must consist of lower '
        "case alphanumeric characters or '-', and must start and end with an alphanumeric "
        "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    )


def test_text_input_and_limits() -> None:
    slices = _cluster("example").slices
    text = json.dumps(_as_slice_list(slices))
    assert load(text).slices == load(text.encode()).slices
    nested = "[" * 300 + "]" * 300
    deep = text.replace('"metadata": {"resourceVersion": "7"}', f'"metadata": {nested}')
    for given_text in (deep, deep.encode()):
        with pytest.raises(Exception) as fast:
            load(given_text)
        with _ordinary_path(), pytest.raises(Exception) as ordinary:
            load(given_text)
        assert str(fast.value) == str(ordinary.value)
        assert "nest more than 200 levels" in str(fast.value)


# ------------------------------------------------------------ raw on demand


def _lazy_slice() -> ResourceSlice:
    slices = _cluster("nvidia-gpu").slices
    objects = load(msgspec.json.encode(_as_slice_list(slices + slices[-1:])))
    lazy = objects.slices[-1]
    assert lazy.raw_text is not None
    return lazy


def _lazy_claim() -> ResourceClaim:
    """An allocated claim of a bulk List: its ``raw`` stays text until read."""
    cluster = generate("scheduler-perf", 3, seed=1, fill=0.5)
    objects = load(msgspec.json.encode(_as_list([*cluster.slices, *cluster.claims])))
    lazy = objects.claims[-1]
    assert lazy.status.allocation is not None and lazy.raw_text is not None
    return lazy


Lazy = ResourceSlice | ResourceClaim
LAZY: dict[str, Callable[[], Lazy]] = {"slice": _lazy_slice, "claim": _lazy_claim}


@pytest.mark.parametrize("kind", sorted(LAZY))
def test_raw_is_decoded_once_on_first_read(kind: str) -> None:
    lazy = LAZY[kind]()
    assert lazy.raw_text is not None
    expected = msgspec.json.decode(lazy.raw_text)
    first = lazy.raw
    assert first == expected and lazy.raw is first
    assert lazy.raw_text is None


@pytest.mark.parametrize("kind", sorted(LAZY))
def test_raw_through_equality_copies_and_pickling(kind: str) -> None:
    items: list[Lazy] = [LAZY[kind]() for _ in range(6)]
    plain = dataclasses.replace(items[0])
    assert plain.raw_text is None and plain == items[0]
    assert copy.deepcopy(items[1]) == plain
    assert copy.copy(items[2]).raw == plain.raw
    assert pickle.loads(pickle.dumps(items[3])) == plain
    assert "raw={" in repr(items[4])
    cloned = clone(items[5])
    assert cloned == plain and items[5] == plain


def test_a_lazy_claim_is_the_claim_the_ordinary_path_decodes() -> None:
    cluster = generate("scheduler-perf", 3, seed=1, fill=0.5)
    text = msgspec.json.encode(_as_list([*cluster.slices, *cluster.claims]))
    fast = load(text).claims
    with _ordinary_path():
        ordinary = load(text).claims
    assert all(c.raw_text is not None for c in fast)
    assert all(c.raw_text is None for c in ordinary)
    assert fast == ordinary  # raw included, read from the text


@pytest.mark.parametrize("kind", sorted(LAZY))
def test_raw_read_by_two_threads_at_once(kind: str) -> None:
    for _ in range(20):
        lazy = LAZY[kind]()
        barrier = threading.Barrier(2)
        seen: list[Any] = []

        def read(
            lazy: Lazy = lazy, barrier: threading.Barrier = barrier, seen: list[Any] = seen
        ) -> None:
            barrier.wait()
            seen.append(lazy.raw)

        threads = [threading.Thread(target=read) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert seen[0] is seen[1]


@pytest.mark.parametrize("kind", sorted(LAZY))
def test_raw_can_be_set(kind: str) -> None:
    lazy = LAZY[kind]()
    lazy.raw = {"x": 1}
    assert lazy.raw == {"x": 1}
    with pytest.raises(AttributeError, match="no_such_field"):
        _ = lazy.no_such_field  # type: ignore[union-attr,unused-ignore]


def test_counter_texts_are_remembered_and_checked_once() -> None:
    """A dynamic-MIG list: devices repeat their consumesCounters text from node to node
    and counter-set slices their sharedCounters text. The bulk path builds those slices
    itself after the first node, shares the decoded objects, and answers as the ordinary
    path does; a later device with a bad text of its own still fails with the checked
    decoder's error, naming that slice and device."""
    cluster = generate("nvidia-mig", 4, seed=3)
    text = msgspec.json.encode(_as_slice_list(cluster.slices))
    assert _fast_slices(text) > len(cluster.slices) // 2  # all but most of the first node
    objects = load(text)
    uses = [
        use
        for s in objects.slices
        for d in s.spec.devices
        for use in d.consumes_counters
        if use.counter_set == "gpu-0-counter-set"
    ]
    assert len(uses) > 4 and len({id(u) for u in uses}) < len(uses)
    _same(text, True)

    slices = json.loads(json.dumps(cluster.slices))  # no dict shared between devices
    last = [s for s in slices if s["spec"].get("devices")][-1]
    last["spec"]["devices"][-1]["consumesCounters"][0]["counters"]["memory"] = {"value": "1K"}
    outcome = _same(msgspec.json.encode(_as_slice_list(slices)), True)
    assert outcome[0] == "error"
    assert last["metadata"]["name"] in outcome[2]
    assert "consumesCounters[0].counters[memory].value" in outcome[2]
