"""A node's first answer made from an earlier node's answer of the same kind.

A scheduler asks every node once per pod. Answers on different nodes whose chosen
devices take the same alternatives and read alike for the node selector (each in a
node-local slice, or in slices with the same selector object) differ only in strings:
the node's name and each chosen device's driver, pool and name. Building each
answer's result objects in Python cost half of a node's share of a first pass (13.3 of
27 us on 500 scheduler_perf nodes, the snapshot's and the claim arrays' builds spread
over the nodes), while the compiled copy of a remembered answer
(:func:`draspeed.api._model_tree.fill_template`) costs under one.

So the first node of a kind builds its answer the long way and once more with marker
strings in place of the names; where a marker lands in the answer's leaves is where
every later node's names go (a :class:`Recipe`). The recipe is only kept if it gives
back the first node's real answer exactly, and is only used on nodes whose answers
take the same branches in :func:`draspeed.rules.results.build_allocation_result`:
no shared (multi-allocatable) device, no binding conditions when the feature reads them,
and the same node selection (see :func:`kind_of_answer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from draspeed.api._model_tree import Template, split_template
from draspeed.api.model import Device, ResourceClaim, ResourceSlice
from draspeed.rules.ids import DeviceID
from draspeed.rules.results import ChosenDevice, build_allocation_result

if TYPE_CHECKING:
    from draspeed.engine.claim_arrays import ClaimArrays

# Marker strings start with a NUL: no Kubernetes name holds one, and the check of the
# recipe against the real answer catches any that would.
_MARK = "\x00draspeed-analogy:"
_NODE_MARK = _MARK + "node"

# A pick as the search gives it, per claim: (alternative, layout position).
Picks = Sequence[Sequence[tuple[int, int]]]
# Each pick's alternative, (driver, pool, device) names, device and slice, per claim.
Located = list[list[tuple[int, tuple[str, str, str], Device, ResourceSlice]]]


@dataclass(frozen=True, slots=True)
class Recipe:
    """The answer of one kind: its compiled shape, the first node's leaves, and the
    leaves each node fills with its own names."""

    shape: Template
    leaves: tuple[object, ...]
    # (leaf position, pick index in claim order or -1 for the node, 0/1/2 for the
    # device ID's driver/pool/device)
    holes: tuple[tuple[int, int, int], ...]

    def fill(self, node_name: str, located: Located) -> tuple[object, ...]:
        """The leaves of the answer on a node with these names."""
        ids = [device_id for claim in located for _, device_id, _, _ in claim]
        leaves = list(self.leaves)
        for at, pick, field in self.holes:
            leaves[at] = node_name if pick < 0 else ids[pick][field]
        return tuple(leaves)


def located_picks(arrays: ClaimArrays, picks: Picks) -> tuple[Located, tuple[Any, ...]] | None:
    """Each pick located (absolute layout positions) and what its device makes of the
    node selector, or None when the answer is not one that analogy can make: a shared
    device, or binding conditions the answer copies."""
    layout = arrays.layout
    reads_binding = arrays.snap.features.device_binding_and_status
    out: Located = []
    selection = []
    for claim in picks:
        located = []
        for a, lp in claim:
            if arrays.share_at(a, lp) is not None:
                return None
            rs, device = layout.slice_and_device(lp)
            if reads_binding and (device.binding_conditions or device.binding_failure_conditions):
                return None
            spec = rs.spec
            located.append((a, (spec.driver, spec.pool.name, device.name), device, rs))
            selection.append(_node_selection(device, rs))
        out.append(located)
    return out, tuple(selection)


# What _node_selection says of a device bound to the node by its name.
PINNED = -1


def _node_selection(device: Device, rs: ResourceSlice) -> int:
    """What a chosen device makes of the allocation's node selector, as upstream's
    createNodeSelector reads it: the node's name alone (``PINNED``), or the terms of
    its slice's (or its own) selector, named by the selector object, 0 for none.
    Answers whose devices read alike here have node selectors alike but for the
    node's name."""
    spec = rs.spec
    if spec.per_device_node_selection:
        local, selector = device.node_name, device.node_selector
    else:
        local, selector = spec.node_name, spec.node_selector
    if local is not None or device.binds_to_node:
        return PINNED
    return 0 if selector is None else id(selector)


def kind_of_answer(
    picks: Picks, chosen_sub: Sequence[int], selection: tuple[Any, ...]
) -> tuple[Any, ...]:
    """What answers of one kind share: each claim's alternatives in pick order, the
    subrequests taken, and what each device makes of the node selector."""
    return tuple([tuple([a for a, _ in claim]) for claim in picks]), tuple(chosen_sub), selection


def make_recipe(
    arrays: ClaimArrays,
    claims: list[ResourceClaim],
    located: Located,
    chosen_sub: Sequence[int],
    node_name: str,
    real: list[Any],
) -> Recipe | None:
    """The recipe of ``real`` (the answer built the long way on this node), or None if
    the answer built with markers does not say where every name goes."""
    marks: dict[str, tuple[int, int]] = {_NODE_MARK: (-1, 0)}
    marked = []
    pick = 0
    subs = tuple(chosen_sub)
    plan = arrays.plan
    assert plan is not None
    for c, claim in enumerate(claims):
        chosen = []
        for a, _, device, rs in located[c]:
            alt = plan.alternatives[a]
            names = []
            for field in range(3):
                mark = f"{_MARK}{pick}:{field}"
                marks[mark] = (pick, field)
                names.append(mark)
            chosen.append(
                ChosenDevice(
                    request=alt.name,
                    parent_request=alt.parent,
                    device_id=DeviceID(*names),
                    device=device,
                    slice=rs,
                    share_id=None,
                    consumed_capacity=None,
                    admin_access=alt.admin,
                )
            )
            pick += 1
        classes, selected, config = arrays.configs[(c, subs)]
        marked.append(
            build_allocation_result(
                claim, chosen, classes, selected, _NODE_MARK, arrays.snap.features, config
            )
        )
    key, shape, leaves = split_template(real, arrays.shapes)
    marked_key, _, marked_leaves = split_template(marked, {})
    if marked_key != key or len(marked_leaves) != len(leaves):
        return None
    ids = [device_id for claim in located for _, device_id, _, _ in claim]
    holes = []
    for at, (value, marked_value) in enumerate(zip(leaves, marked_leaves, strict=True)):
        if type(marked_value) is str and _MARK in marked_value:
            source = marks.get(marked_value)
            if source is None:  # a string made from a name: not a leaf to swap
                return None
            p, field = source
            if value != (node_name if p < 0 else ids[p][field]):
                return None
            holes.append((at, p, field))
        elif not (value is marked_value or value == marked_value):
            return None
    return Recipe(shape, leaves, tuple(holes))
