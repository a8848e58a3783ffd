"""Claims and nodes as the allocator takes them, from whatever the caller holds.

The allocators' entry points take draspeed's own objects; a caller may hold plain
dicts (``kubectl get -o json``), kubernetes-client models (``ResourceV1ResourceClaim``,
``V1Node``, the items of a list call without ``apiVersion``/``kind``) or a list
object (``V1ResourceClaimList``). These helpers decode such inputs once, with the
loader's validation, and pass draspeed's objects through untouched (the common case
costs one type check per object).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from draspeed.api.model import Node, ObjectMeta, ResourceClaim
from draspeed.errors import InputError

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
        raise InputError(
            "claims", "", f"expected a list of ResourceClaims, got {type(claims).__name__}"
        )
    from draspeed.api.loader import load

    out: list[ResourceClaim] = []
    for item in items:
        if isinstance(item, ResourceClaim):
            out.append(item)
            continue
        found = load(item, kind="ResourceClaim")
        others = len(found) - len(found.claims)
        if others:
            raise InputError(_name(item), "", "expected a ResourceClaim")
        out.extend(found.claims)
    return out


def as_node(node: NodeInput) -> Node:
    """A Node from a dict or client model (``V1Node``), or a name (a node with that
    name and no labels; an allocator that knows Nodes looks names up first)."""
    if isinstance(node, Node):
        return node
    if isinstance(node, str):
        return Node(metadata=ObjectMeta(name=node))
    from draspeed.api.loader import load

    found = load(node, kind="Node")
    if len(found.nodes) != 1 or len(found) != 1:
        raise InputError(_name(node), "", "expected one Node")
    return found.nodes[0]


def _is_list_object(value: Any) -> bool:
    if isinstance(value, dict):
        return str(value.get("kind", "")).endswith("List")
    return hasattr(value, "attribute_map") and hasattr(value, "items")


def _name(value: Any) -> str:
    return type(value).__name__
