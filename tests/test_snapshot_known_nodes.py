"""The nodes a snapshot knows, in every version, and the answers laid out over them.

A snapshot knows the nodes it was given (in their order) and then, sorted by name, the
nodes only its live slices name. It tells them apart by their names' string ids and
hands those ids to the pool gathering; these tests follow that through versions that
add and remove slices and nodes, against a fresh snapshot of the same objects.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from draspeed import Allocator, Snapshot
from draspeed.api.loader import load
from draspeed.api.model import Node, ObjectMeta

_NODES = ("n0", "n1", "n2", "n3", "n4")
_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "c"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "d.example.com"'}}]},
}
_CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "claim", "namespace": "ns"},
    "spec": {
        "devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "count": 2}}]}
    },
}


def _slice(name: str, node: str, devices: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "d.example.com",
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": [{"name": f"dev-{k}"} for k in range(devices)],
        },
    }


def _expected_nodes(given: list[str], slices: dict[str, tuple[str, int]]) -> list[str]:
    on_slices = {node for node, _ in slices.values()}
    return [*given, *sorted(on_slices - set(given))]


def _answers(snapshot: Snapshot, claims: list[Any]) -> dict[str, tuple[bool, str | None]]:
    answer = Allocator(snapshot).feasible_nodes(claims)
    return {name: (answer.fits(name), answer.error(name)) for name in answer.nodes}


_slice_specs = st.dictionaries(
    st.sampled_from(("s0", "s1", "s2", "s3", "s4", "s5")),
    st.tuples(st.sampled_from(_NODES), st.integers(0, 3)),
    max_size=6,
)
_given = st.lists(st.sampled_from(_NODES), unique=True, max_size=5)


@settings(max_examples=60, deadline=None)
@given(first=_slice_specs, given_nodes=_given, later=_slice_specs, later_nodes=_given)
def test_known_nodes_and_their_answers_follow_every_version(
    first: dict[str, tuple[str, int]],
    given_nodes: list[str],
    later: dict[str, tuple[str, int]],
    later_nodes: list[str],
) -> None:
    claims = load([_CLAIM], validate=False).claims
    classes = load([_CLASS], validate=False).classes

    def slices_of(specs: dict[str, tuple[str, int]]) -> list[Any]:
        docs = [_slice(name, node, n) for name, (node, n) in sorted(specs.items())]
        return load(docs, validate=False).slices if docs else []

    nodes = [Node(ObjectMeta(name=n, labels={"given": "yes"})) for n in given_nodes]
    snapshot = Snapshot.build(slices_of(first), classes, nodes=nodes)
    assert [n.name for n in snapshot.nodes] == _expected_nodes(given_nodes, first)
    answers = _answers(snapshot, claims)
    assert list(answers) == _expected_nodes(given_nodes, first)

    # Slices replaced, added and removed: the nodes named by slices change.
    removed = sorted(set(first) - set(later))
    version = snapshot.update_slices(slices_of(later), removed)
    expected = _expected_nodes(given_nodes, later)
    assert [n.name for n in version.nodes] == expected
    fresh = Snapshot.build(slices_of(later), classes, nodes=nodes)
    assert _answers(version, claims) == _answers(fresh, claims)

    # Other given nodes: some only slices named before, some no slice names.
    renamed = [Node(ObjectMeta(name=n)) for n in later_nodes]
    gone = [n for n in given_nodes if n not in later_nodes]
    moved = version.update_nodes(renamed, gone)
    expected = _expected_nodes(
        [
            *[n for n in given_nodes if n in later_nodes],
            *[n for n in later_nodes if n not in given_nodes],
        ],
        later,
    )
    assert [n.name for n in moved.nodes] == expected
    assert list(_answers(moved, claims)) == expected
    # Each node alone (a layout of its own, or its place in the known nodes' layout).
    allocator = Allocator(moved)
    for node in moved.nodes:
        verdict = allocator.feasible_nodes(claims, nodes=[node])
        assert verdict.fits(node.name) == _answers(moved, claims)[node.name][0]

    # The first snapshot is unchanged by its versions.
    assert [n.name for n in snapshot.nodes] == _expected_nodes(given_nodes, first)
    assert _answers(snapshot, claims) == answers


def test_a_cel_table_holds_one_driver_name_object_per_driver() -> None:
    """Every slice decodes its own driver name; the CEL table's driver list holds one
    object per name (its columns then read a run of one object without a lookup)."""
    docs = [_slice(f"s{k}", f"n{k % 3}", 2) for k in range(6)]
    objects = load(docs, validate=False)
    assert len({id(s.spec.driver) for s in objects.slices}) > 1
    snapshot = Snapshot.build(objects.slices, load([_CLASS], validate=False).classes)
    Allocator(snapshot).feasible_nodes(load([_CLAIM], validate=False).claims)
    drivers, devices = snapshot.table.device_lists(0)
    assert len(devices) == 12
    assert drivers == ["d.example.com"] * 12
    assert len({id(d) for d in drivers}) == 1
