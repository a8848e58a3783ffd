"""Decoded objects are out of the cyclic collector's sight (draspeed.api._model_tree.untrack):
every model object, list, dict and quantity ``load`` makes, whichever way the input came
(bulk JSON, YAML, dicts, single documents, claims, classes, nodes), but not the
caller's own ``raw`` dict; and they behave as before."""

from __future__ import annotations

import copy
import dataclasses
import gc
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import draspeed
from draspeed.api._model_tree import untrack
from draspeed.api.model import DeviceAttribute
from draspeed.engine.allocator import Allocator
from draspeed.engine.snapshot import Snapshot
from draspeed.generate import generate
from draspeed.quantity import Quantity


def _tracked(objects: list[Any]) -> list[str]:
    """The paths of tracked lists, dicts, model objects and quantities under ``objects``
    (``raw`` fields not entered)."""
    found: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[Any, str]] = [(o, f"[{i}]") for i, o in enumerate(objects)]
    while stack:
        o, path = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        if isinstance(o, list):
            children = [(v, f"{path}[{i}]") for i, v in enumerate(o)]
        elif isinstance(o, dict):
            children = [(v, f"{path}[{k!r}]") for k, v in o.items()]
        elif dataclasses.is_dataclass(o) and not isinstance(o, type):
            children = [
                (getattr(o, f.name), f"{path}.{f.name}")
                for f in dataclasses.fields(o)
                if f.name != "raw" and hasattr(o, f.name)
            ]
        elif isinstance(o, Quantity):
            children = []
        else:
            continue
        if gc.is_tracked(o):
            found.append(f"{path} ({type(o).__name__})")
        stack.extend(children)
    return found


def _every_kind(objects: draspeed.Objects) -> list[Any]:
    return [o for kind in objects.by_kind().values() for o in kind]


_KINDS = ("nvidia-mig", "nvidia-gpu", "network-attached", "scheduler-perf")


@pytest.fixture(scope="module", params=_KINDS)
def cluster_items(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    options = {"allocated": 0.5} if request.param in ("nvidia-mig", "nvidia-gpu") else {}
    return generate(request.param, 3, seed=2, **options).items()


def test_bulk_json_yaml_and_dicts_load_untracked(
    cluster_items: list[dict[str, Any]], tmp_path: Path
) -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": cluster_items}
    as_json = tmp_path / "cluster.json"
    as_json.write_text(json.dumps(listed))
    as_yaml = tmp_path / "cluster.yaml"
    as_yaml.write_text(yaml.safe_dump_all(cluster_items))
    for source in (str(as_json), str(as_yaml), copy.deepcopy(cluster_items)):
        for validate in (True, False):
            objects = draspeed.load(source, validate=validate)
            assert objects.slices and objects.classes and objects.nodes
            assert _tracked(_every_kind(objects)) == [], source


def test_the_callers_own_dict_stays_tracked(cluster_items: list[dict[str, Any]]) -> None:
    given = copy.deepcopy(cluster_items[:40])
    objects = draspeed.load(given)
    assert all(gc.is_tracked(item) for item in given)
    raws = [o.raw for o in _every_kind(objects) if getattr(o, "raw", None) is not None]
    assert raws and all(gc.is_tracked(raw) for raw in raws if isinstance(raw, dict) and raw)


def test_untracked_objects_answer_change_and_copy_as_before(
    cluster_items: list[dict[str, Any]],
) -> None:
    objects = draspeed.load(cluster_items)
    tracked = copy.deepcopy(objects)  # made in Python: tracked
    assert _tracked(_every_kind(tracked))
    assert _every_kind(objects) == _every_kind(tracked)
    claims = [c for c in objects.claims if c.status.allocation is None][:1]
    answers = [
        Allocator(Snapshot.build(o.slices, o.classes, nodes=o.nodes))
        .feasible_nodes(claims)
        .to_dict()
        for o in (objects, tracked)
    ]
    assert answers[0] == answers[1]
    device = next(s for s in objects.slices if s.spec.devices).spec.devices[0]
    device.attributes["extra"] = DeviceAttribute("string", "x")
    assert device.attributes["extra"].value == "x"
    assert copy.deepcopy(objects.slices[0]) == objects.slices[0]


def test_untrack_leaves_foreign_objects_and_what_they_hold_alone() -> None:
    class Foreign:
        def __init__(self) -> None:
            self.items = [[1], {"a": [2]}]

    foreign = Foreign()
    holder = [foreign, [1, "two"]]
    untrack([holder])
    assert not gc.is_tracked(holder) and not gc.is_tracked(holder[1])
    assert gc.is_tracked(foreign) and gc.is_tracked(foreign.items)


@pytest.mark.parametrize(
    ("kind", "nodes", "template"),
    [("nvidia-gpu", 150, "single-gpu"), ("nvidia-mig", 8, "mig-1g10gb")],
)
def test_a_snapshot_keeps_no_tracked_container_as_long_as_its_devices(
    kind: str, nodes: int, template: str
) -> None:
    """A snapshot's per-device, per-pool and per-node lists (interned names, pools,
    device and driver lists of the CEL tables, attribute objects, slices, node names)
    are out of the collector's sight: a collection that reached one would visit every
    item (four young lists of 40,000 cost 2.4 ms of a first pass over 5,000 nodes).
    And every answer stays as it was."""
    from draspeed.generate.scenarios import claim_from_template

    cluster = generate(kind, nodes)
    objects = cluster.decoded()
    claim = draspeed.load(
        [claim_from_template(cluster.template(template), "pod-0-claim-0")], validate=False
    ).claims
    n_devices = sum(len(s.spec.devices) for s in objects.slices)
    gc.collect()
    before = {id(o) for o in gc.get_objects()}
    snapshot = Snapshot.build(objects.slices, objects.classes, nodes=objects.nodes)
    allocator = Allocator(snapshot)
    answer = allocator.feasible_nodes(claim)
    pod = allocator.prepare(claim)
    looped = [pod.allocate(node) for node in objects.nodes]
    big = [
        f"{type(o).__name__} of {len(o)}"
        for o in gc.get_objects()
        if id(o) not in before and isinstance(o, (list, dict, tuple)) and len(o) >= n_devices // 2
    ]
    assert big == []
    # (The answers do not depend on it: the loop's agree with a snapshot built afresh.)
    fresh = Allocator(Snapshot.build(objects.slices, objects.classes, nodes=objects.nodes))
    assert answer.to_dict() == fresh.feasible_nodes(claim).to_dict()
    assert looped == [fresh.allocate(claim, node) for node in objects.nodes]
