"""The CEL abstract syntax tree draspeed parses selectors into.

Operators and functions keep cel-go's names (``_+_``, ``_[_]``, ``!_``, ``@in``...),
so overload tables and error texts read like upstream's. Macros are expanded by the
parser into :class:`Comprehension` and :class:`Bind` nodes (cel-go expands them into
generic comprehensions; the specialised forms here evaluate the same way, faster).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False, slots=True)
class Node:
    """Base node; ``pos`` is the character offset cel-go reports errors at."""

    pos: int


@dataclass(eq=False, slots=True)
class Const(Node):
    """A literal; ``kind`` is one of int, uint, double, string, bytes, bool, null."""

    kind: str
    value: Any


@dataclass(eq=False, slots=True)
class Ident(Node):
    """A name; ``as_type`` (set by the checker): a local variable that holds a type and
    is named like one, which cel-go's planner reads as that type (see the checker)."""

    name: str
    as_type: bool = False


@dataclass(eq=False, slots=True)
class Select(Node):
    """``operand.field``; ``test_only`` for has(); ``optional`` for ``operand.?field``."""

    operand: Node
    field: str
    test_only: bool = False
    optional: bool = False


@dataclass(eq=False, slots=True)
class Index(Node):
    """``operand[key]`` or, with ``optional``, ``operand[?key]``."""

    operand: Node
    key: Node
    optional: bool = False


@dataclass(eq=False, slots=True)
class Call(Node):
    """A function or operator call; ``target`` is the receiver of a member call.
    ``element_type`` is set by the checker where the runtime needs the resolved
    overload (the element type of the list ``sum`` adds up).
    ``overloads``: the ids of the overloads the checker found applicable (cel-go's
    reference map); one id pins the implementation and its cost rule."""

    function: str
    args: list[Node]
    target: Node | None = None
    element_type: str = ""
    overloads: tuple[str, ...] = ()


@dataclass(eq=False, slots=True)
class ListLit(Node):
    elements: list[Node]
    optional_indices: frozenset[int] = frozenset()


@dataclass(eq=False, slots=True)
class MapLit(Node):
    """Entries are ``(key, value, optional)``."""

    entries: list[tuple[Node, Node, bool]]


@dataclass(eq=False, slots=True)
class CreateMessage(Node):
    """``Name{field: value, ?field: value}``; ``pos`` is the '{'. No type of the DRA
    environment is a message, so a checked expression never keeps one."""

    type_name: str
    fields: list[tuple[str, Node, bool, int]]  # (field, value, optional, where its ':' is)


@dataclass(eq=False, slots=True)
class Comprehension(Node):
    """An expanded comprehension macro.

    ``kind``: all, exists, exists_one, map, filter (one variable), or their two-variable
    forms all2, exists2, exists_one2, transformList, transformMap, transformMapEntry.
    ``var2`` is the second variable of the two-variable forms (value for lists/maps).
    ``predicate`` filters (map with three args, filter, transform* with four args);
    ``transform`` is the mapped expression.
    """

    kind: str
    range: Node
    var: str
    var2: str | None = None
    predicate: Node | None = None
    transform: Node | None = None
    overloads: tuple[str, ...] = ()  # sortBy: its @sortByAssociatedKeys call's overloads
    var_pos: int = -1  # where the (first) variable is written


@dataclass(eq=False, slots=True)
class Bind(Node):
    """``cel.bind(var, init, body)``."""

    var: str
    init: Node
    body: Node


@dataclass(eq=False, slots=True)
class Ternary(Node):
    cond: Node
    then: Node
    other: Node


@dataclass(eq=False, slots=True)
class Logical(Node):
    """``&&`` / ``||`` over a flattened list of operands (commutative error absorption)."""

    op: str  # "&&" or "||"
    operands: list[Node] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class Shared(Node):
    """A ``cel.bind`` variable replaced by its initialiser, a path into ``device`` that
    cannot fail (the vector planner's rewrite). Reading it costs what reading the
    variable costs; the initialiser's one-time cost (``init_cost``) is accounted per
    evaluation by whoever rewrote it, through bit ``group`` of the read groups."""

    path: Node
    group: int
    init_cost: int


def children(node: Node) -> list[Node]:
    """The direct sub-expressions of ``node``, in evaluation order."""
    if isinstance(node, Select):
        return [node.operand]
    if isinstance(node, Index):
        return [node.operand, node.key]
    if isinstance(node, Call):
        return ([node.target] if node.target is not None else []) + list(node.args)
    if isinstance(node, ListLit):
        return list(node.elements)
    if isinstance(node, MapLit):
        out: list[Node] = []
        for k, v, _ in node.entries:
            out += [k, v]
        return out
    if isinstance(node, Comprehension):
        return [n for n in (node.range, node.predicate, node.transform) if n is not None]
    if isinstance(node, Bind):
        return [node.init, node.body]
    if isinstance(node, Ternary):
        return [node.cond, node.then, node.other]
    if isinstance(node, Logical):
        return list(node.operands)
    if isinstance(node, Shared):
        return [node.path]
    if isinstance(node, CreateMessage):
        return [value for _, value, _, _ in node.fields]
    return []


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree, ``node`` first (iterative, as :func:`count_nodes`)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))


def count_nodes(node: Node) -> int:
    """Number of nodes in the tree (iterative: deep trees must not hit Python's stack)."""
    total = 0
    stack = [node]
    while stack:
        n = stack.pop()
        total += 1
        stack.extend(children(n))
    return total
