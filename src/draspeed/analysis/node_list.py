"""The nodes a capacity question is about: named ones looked up in the snapshot."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from draspeed import arguments
from draspeed.api.model import Node, ObjectMeta

if TYPE_CHECKING:
    from draspeed.engine.snapshot import Snapshot


def snapshot_of(value: Any, name: str = "snapshot") -> Snapshot:
    """``value`` if it is a Snapshot, else a TypeError naming ``name``."""
    from draspeed.engine.snapshot import Snapshot

    return arguments.instance_of(value, Snapshot, name, "a Snapshot")


def resolve_nodes(snapshot: Snapshot, nodes: Sequence[Node | str] | None) -> list[Node]:
    """Node objects in the order given (names looked up among the snapshot's nodes;
    an unknown name is an unlabelled node), or the snapshot's nodes."""
    known = snapshot_of(snapshot).nodes
    if nodes is None:
        return known
    # (One node alone is one node: a name is not a sequence of characters.)
    listed = arguments.names_or_items(nodes, Node, "nodes", "Nodes")
    by_name = {n.name: n for n in known}
    out = [
        n if isinstance(n, Node) else by_name.get(n) or Node(metadata=ObjectMeta(name=n))
        for n in listed
    ]
    seen: set[str] = set()
    for n in out:
        if n.name in seen:
            raise ValueError(f"node {n.name!r} is listed twice")
        seen.add(n.name)
    return out
