"""Claims, nodes and cluster state as the engines take them, from what the caller holds.

The allocators' entry points take draspeed's own objects; a caller may hold plain
dicts (``kubectl get -o json``), kubernetes-client models (``ResourceV1ResourceClaim``,
``V1Node``, the items of a list call without ``apiVersion``/``kind``) or a list
object (``V1ResourceClaimList``). These helpers decode such inputs once, with the
loader's validation, and pass draspeed's objects through untouched (the common case
costs one type check per object).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from draspeed import arguments
from draspeed.api.model import (
    DeviceClass,
    Node,
    ObjectMeta,
    ResourceClaim,
    ResourceSlice,
)
from draspeed.arguments import type_name
from draspeed.errors import InputError

# Every item's metadata.name in one call (draspeed.engine._read.object_names).
NamesOf = Callable[[list[Any]], list[str]]

# What the allocators' entry points take: draspeed's claims, dicts, kubernetes-client
# models or a list object; a Node, a node name, a dict or a ``V1Node``. (The client's
# classes cannot be named without importing it.)
ClaimsInput = Iterable[object]
NodeInput = object


def as_claims(claims: ClaimsInput | Any) -> list[ResourceClaim]:
    """``claims`` as ResourceClaims: a sequence of claims, dicts or client models, or a
    list object (``V1ResourceClaimList``, ``{"kind": "ResourceClaimList", ...}``)."""
    if isinstance(claims, (list, tuple)) and all(type(c) is ResourceClaim for c in claims):
        return list(claims)
    items: list[Any]
    if _is_list_object(claims):
        items = [claims]
    elif isinstance(claims, Iterable) and not isinstance(claims, (str, bytes, dict)):
        items = list(claims)
        if all(type(c) is ResourceClaim for c in items):
            return items
    else:
        raise TypeError(f"claims: expected a list of ResourceClaims, got {_name(claims)}")
    from draspeed.api.loader import load

    out: list[ResourceClaim] = []
    for i, item in enumerate(items):
        if isinstance(item, ResourceClaim):
            out.append(item)
            continue
        if not _object_like(item):
            raise TypeError(
                f"claims[{i}]: expected a ResourceClaim (or its mapping or client model), "
                f"got {_name(item)}"
            )
        found = load(item, kind="ResourceClaim")
        others = len(found) - len(found.claims)
        if others:
            raise InputError(_name(item), "", "expected a ResourceClaim")
        out.extend(found.claims)
    return out


def as_node(node: NodeInput, name: str = "node") -> Node:
    """A Node from a dict or client model (``V1Node``), or a name (a node with that
    name and no labels; an allocator that knows Nodes looks names up first). Anything
    else is a TypeError naming the argument (``name``)."""
    if isinstance(node, Node):
        return node
    if isinstance(node, str):
        return Node(metadata=ObjectMeta(name=node))
    if not _object_like(node):
        raise TypeError(
            f"{name}: expected a Node, a node name, or a Node's mapping or client model, "
            f"got {_name(node)}"
        )
    from draspeed.api.loader import load

    found = load(node, kind="Node")
    if len(found.nodes) != 1 or len(found) != 1:
        raise InputError(_name(node), "", "expected one Node")
    return found.nodes[0]


def cluster_slices(
    slices: Any, name: str = "slices", names_of: NamesOf | None = None
) -> list[ResourceSlice]:
    """The ResourceSlices of a cluster state: a sequence of them, one per name (an equal
    repeat is dropped, two different ones are a ValueError naming both). ``names_of``:
    reads every slice's name in one call (each slice's ``metadata.name`` otherwise)."""
    found = arguments.items_of(slices, ResourceSlice, name, "a ResourceSlice")
    return arguments.unique(found, object_name, name, "ResourceSlices", names_of)


def cluster_classes(classes: Any, name: str = "classes") -> list[DeviceClass]:
    """The DeviceClasses of a cluster state, one per name (as :func:`cluster_slices`)."""
    found = arguments.items_of(classes, DeviceClass, name, "a DeviceClass")
    return arguments.unique(found, object_name, name, "DeviceClasses")


def cluster_claims(claims: Any, name: str) -> list[ResourceClaim]:
    """Claims of a cluster state (allocated ones), one per namespace/name."""
    found = arguments.items_of(claims, ResourceClaim, name, "a ResourceClaim")
    return arguments.unique(found, _claim_key, name, "ResourceClaims")


def cluster_nodes(
    nodes: Any, name: str = "nodes", names_of: NamesOf | None = None
) -> dict[str, Node]:
    """Nodes of a cluster state, given as Nodes or names, by name (one per name; a
    name alone is one node without labels; ``names_of`` as for :func:`cluster_slices`)."""
    found = arguments.names_or_items(nodes, Node, name, "a Node")
    if set(map(type, found)) <= {Node}:  # all Nodes already (the usual case)
        as_nodes = cast("list[Node]", found)
    else:
        as_nodes = [n if isinstance(n, Node) else Node(metadata=ObjectMeta(name=n)) for n in found]
    return arguments.by_name(as_nodes, object_name, name, "Nodes", names_of)


# Keys read in C (attrgetter): thousands of objects per snapshot build.
object_name: Callable[[Any], str] = operator.attrgetter("metadata.name")  # Node.name too
_claim_key = operator.attrgetter("key")


def _object_like(value: Any) -> bool:
    """A mapping or an object a Kubernetes client made (what the loader reads): not a
    scalar, a string or a sequence."""
    if isinstance(value, Mapping):
        return True
    if value is None or isinstance(value, (str, bytes, bytearray, int, float, list, tuple)):
        return False
    return any(hasattr(value, attr) for attr in ("attribute_map", "model_dump", "to_dict", "raw"))


def _is_list_object(value: Any) -> bool:
    if isinstance(value, dict):
        return str(value.get("kind", "")).endswith("List")
    return hasattr(value, "attribute_map") and hasattr(value, "items")


def _name(value: Any) -> str:
    return type_name(value)
