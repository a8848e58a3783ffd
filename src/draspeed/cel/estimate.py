"""The worst-case cost estimate the API server checks DRA selectors against.

``kubernetes/kubernetes`` ``pkg/apis/resource/validation`` compiles each CEL selector
with the DRA compiler and rejects it (``Forbidden: too complex, exceeds cost limit``)
when cel-go's estimate (``cel.Env.EstimateCost``) exceeds
``CELSelectorExpressionMaxCost``. This module computes that estimate as cel-go v0.27.0
``checker/cost.go`` does, with the estimators upstream plugs in: the apiserver's
``library.CostEstimator`` (``pkg/cel/library/cost.go``), DRA's size estimates for the
``device`` variable and its ``includes`` estimate (``dynamic-resource-allocation``
``cel/compile.go``), and the per-overload estimators of the lists and sets extensions.

cel-go estimates over the macro-expanded AST (comprehensions with an accumulator, a
loop condition and a loop step); :func:`expand` rebuilds that shape from draspeed's AST
and the checker's types, and :class:`_Coster` follows ``checker/cost.go`` step by step.
Estimates are (min, max) pairs of uint64 that saturate instead of overflowing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from draspeed.cel import types as T
from draspeed.cel.ast import (
    Bind,
    Call,
    Comprehension,
    Const,
    Ident,
    Index,
    ListLit,
    Logical,
    MapLit,
    Node,
    Select,
    Ternary,
)
from draspeed.cel.checker import TYPE_IDENTS, CheckResult
from draspeed.cel.cost import (
    LIBRARY_NOMINAL,
    LIST_CREATE_COST,
    MAP_CREATE_COST,
    REGEX_LENGTH_FACTOR,
    SELECT_AND_IDENT_COST,
    SIZE_COMPARISONS,
    STRING_TRAVERSAL_FACTOR,
)

U64 = (1 << 64) - 1
_TWO_TO_64 = float(1 << 64)


# ---- saturating (min, max) estimates ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Est:
    """A size or cost estimate: a (min, max) range of uint64 values."""

    min: int
    max: int

    def add(self, other: Est) -> Est:
        return Est(_add(self.min, other.min), _add(self.max, other.max))

    def mul(self, other: Est) -> Est:
        return Est(_mul(self.min, other.min), _mul(self.max, other.max))

    def factor(self, f: float) -> Est:
        """``MultiplyByCostFactor``: the product rounded up."""
        return Est(_factor(self.min, f), _factor(self.max, f))

    def union(self, other: Est) -> Est:
        return Est(min(self.min, other.min), max(self.max, other.max))


def _add(x: int, y: int) -> int:
    return U64 if y > 0 and x > U64 - y else x + y


def _mul(x: int, y: int) -> int:
    return U64 if y != 0 and x > U64 // y else x * y


def _factor(x: int, y: float) -> int:
    fx = float(x)
    if fx > 0 and y > 0 and fx > _TWO_TO_64 / y:
        return U64
    ceil = math.ceil(fx * y)
    return U64 if ceil >= _TWO_TO_64 else int(ceil)


def fixed(n: int) -> Est:
    return Est(n, n)


UNKNOWN = Est(0, U64)
ONE = fixed(1)
ZERO = fixed(0)


# ---- the cel-go-shaped AST --------------------------------------------------------------


class G:
    """A node of the expanded AST; ``type`` is the checker's type."""

    __slots__ = ("type",)

    def __init__(self, type_: T.Type) -> None:
        self.type = type_


class GLit(G):
    __slots__ = ("value",)

    def __init__(self, value: Any, type_: T.Type) -> None:
        super().__init__(type_)
        self.value = value


class GIdent(G):
    __slots__ = ("name",)

    def __init__(self, name: str, type_: T.Type) -> None:
        super().__init__(type_)
        self.name = name


class GSelect(G):
    __slots__ = ("field", "operand", "test_only")

    def __init__(self, operand: G, field_name: str, test_only: bool, type_: T.Type) -> None:
        super().__init__(type_)
        self.operand = operand
        self.field = field_name
        self.test_only = test_only


class GCall(G):
    __slots__ = ("args", "function", "overloads", "target")

    def __init__(
        self,
        function: str,
        target: G | None,
        args: list[G],
        overloads: Sequence[str],
        type_: T.Type,
    ) -> None:
        super().__init__(type_)
        self.function = function
        self.target = target
        self.args = args
        self.overloads = tuple(overloads)


class GList(G):
    __slots__ = ("elements",)

    def __init__(self, elements: list[G], type_: T.Type) -> None:
        super().__init__(type_)
        self.elements = elements


class GMap(G):
    __slots__ = ("entries",)

    def __init__(self, entries: list[tuple[G, G]], type_: T.Type) -> None:
        super().__init__(type_)
        self.entries = entries


class GComp(G):
    __slots__ = (
        "accu_init",
        "accu_var",
        "cond",
        "iter_range",
        "iter_var",
        "iter_var2",
        "result",
        "step",
    )

    def __init__(
        self,
        iter_range: G,
        iter_var: str,
        iter_var2: str | None,
        accu_var: str,
        accu_init: G,
        cond: G,
        step: G,
        result: G,
        type_: T.Type,
    ) -> None:
        super().__init__(type_)
        self.iter_range = iter_range
        self.iter_var = iter_var
        self.iter_var2 = iter_var2
        self.accu_var = accu_var
        self.accu_init = accu_init
        self.cond = cond
        self.step = step
        self.result = result


ACCUMULATOR = "@result"  # cel-go's hidden accumulator name
_LEGACY_ACCUMULATOR = "__result__"
_SORT_BY_INPUT = "@__sortBy_input__"
_UNUSED = "#unused"
_BOOL_LIST = T.list_of(T.DYN)


def expand(node: Node, types: dict[int, T.Type]) -> G:
    """The AST cel-go's parser would have produced (macros expanded), with types."""
    return _Expander(types).expand(node)


class _Expander:
    def __init__(self, types: dict[int, T.Type]) -> None:
        self.types = types

    def type_of(self, node: Node) -> T.Type:
        return self.types.get(id(node), T.DYN)

    def expand(self, node: Node) -> G:
        t = self.type_of(node)
        if isinstance(node, Const):
            return GLit(node.value, t)
        if isinstance(node, Ident):
            return GIdent(node.name, t)
        if isinstance(node, Select):
            qualified = _qualified_name(node)
            if qualified is not None and qualified in TYPE_IDENTS and "." in qualified:
                return GIdent(qualified, t)
            operand = self.expand(node.operand)
            if node.optional:
                field = GLit(node.field, T.STRING)
                return GCall("_?._", None, [operand, field], ("select_optional_field",), t)
            return GSelect(operand, node.field, node.test_only, t)
        if isinstance(node, Index):
            operand = self.expand(node.operand)
            key = self.expand(node.key)
            name = "_[?_]" if node.optional else "_[_]"
            overloads = _index_overloads(operand.type, key.type, node.optional)
            return GCall(name, None, [operand, key], overloads, t)
        if isinstance(node, Call):
            target = self.expand(node.target) if node.target is not None else None
            args = [self.expand(a) for a in node.args]
            return GCall(node.function, target, args, node.overloads, t)
        if isinstance(node, Logical):
            fn = "_&&_" if node.op == "&&" else "_||_"
            overload = "logical_and" if node.op == "&&" else "logical_or"
            terms = [self.expand(o) for o in node.operands]
            return _balanced(fn, overload, terms)
        if isinstance(node, Ternary):
            args = [self.expand(node.cond), self.expand(node.then), self.expand(node.other)]
            return GCall("_?_:_", None, args, ("conditional",), t)
        if isinstance(node, ListLit):
            return GList([self.expand(e) for e in node.elements], t)
        if isinstance(node, MapLit):
            return GMap([(self.expand(k), self.expand(v)) for k, v, _ in node.entries], t)
        if isinstance(node, Bind):
            init = self.expand(node.init)
            body = self.expand(node.body)
            return GComp(
                GList([], _BOOL_LIST),
                _UNUSED,
                None,
                node.var,
                init,
                GLit(False, T.BOOL),
                GIdent(node.var, init.type),
                body,
                t,
            )
        if isinstance(node, Comprehension):
            return self._comprehension(node, t)
        raise AssertionError(type(node))

    def _comprehension(self, node: Comprehension, t: T.Type) -> G:
        kind = node.kind
        rng = self.expand(node.range)
        if kind == "sortBy":
            return self._sort_by(node, rng, t)
        pred = self.expand(node.predicate) if node.predicate is not None else None
        trans = self.expand(node.transform) if node.transform is not None else None

        def accu(type_: T.Type) -> GIdent:
            return GIdent(ACCUMULATOR, type_)

        def comp(init: G, cond: G, step: G, result: G) -> GComp:
            return GComp(rng, node.var, node.var2, ACCUMULATOR, init, cond, step, result, t)

        if kind in ("all", "all2", "exists", "exists2"):
            assert pred is not None
            every = kind.startswith("all")
            cond_arg: G = accu(T.BOOL)
            if not every:
                cond_arg = GCall("!_", None, [accu(T.BOOL)], ("logical_not",), T.BOOL)
            cond = GCall("@not_strictly_false", None, [cond_arg], ("not_strictly_false",), T.BOOL)
            logic = ("_&&_", "logical_and") if every else ("_||_", "logical_or")
            step = GCall(logic[0], None, [accu(T.BOOL), pred], (logic[1],), T.BOOL)
            return comp(GLit(every, T.BOOL), cond, step, accu(T.BOOL))
        if kind in ("exists_one", "exists_one2"):
            assert pred is not None
            one = GLit(1, T.INT)
            plus = GCall("_+_", None, [accu(T.INT), one], ("add_int64",), T.INT)
            step = GCall("_?_:_", None, [pred, plus, accu(T.INT)], ("conditional",), T.INT)
            result = GCall("_==_", None, [accu(T.INT), one], ("equals",), T.BOOL)
            return comp(GLit(0, T.INT), GLit(True, T.BOOL), step, result)
        if kind in ("map", "transformList", "filter"):
            if kind == "filter":
                assert pred is not None
                elem = rng.type.params[0] if rng.type.kind == "list" else T.DYN
                item: G = GIdent(node.var, elem)
                appended = GList([item], t)
                step_add: G = GCall("_+_", None, [accu(t), appended], ("add_list",), t)
                step = GCall("_?_:_", None, [pred, step_add, accu(t)], ("conditional",), t)
            else:
                assert trans is not None
                step_add = GCall("_+_", None, [accu(t), GList([trans], t)], ("add_list",), t)
                step = step_add
                if pred is not None:
                    step = GCall("_?_:_", None, [pred, step_add, accu(t)], ("conditional",), t)
            return comp(GList([], t), GLit(True, T.BOOL), step, accu(t))
        assert trans is not None
        if kind == "transformMap":
            key_type = t.params[0] if t.kind == "map" else T.DYN
            key_ident = GIdent(node.var, key_type)
            insert: G = GCall(
                "cel.@mapInsert",
                None,
                [accu(t), key_ident, trans],
                ("@mapInsert_map_key_value",),
                t,
            )
        else:
            insert = GCall("cel.@mapInsert", None, [accu(t), trans], ("@mapInsert_map_map",), t)
        step_insert: G = insert
        if pred is not None:
            step_insert = GCall("_?_:_", None, [pred, insert, accu(t)], ("conditional",), t)
        return comp(GMap([], t), GLit(True, T.BOOL), step_insert, accu(t))

    def _sort_by(self, node: Comprehension, rng: G, t: T.Type) -> G:
        """``cel.bind(in, l, in.@sortByAssociatedKeys(in.map(v, key)))``."""
        assert node.transform is not None
        key = self.expand(node.transform)
        keys_type = T.list_of(key.type)
        source = rng.type

        def input_ident() -> GIdent:
            return GIdent(_SORT_BY_INPUT, source)

        keys = GComp(
            input_ident(),
            node.var,
            None,
            ACCUMULATOR,
            GList([], keys_type),
            GLit(True, T.BOOL),
            GCall(
                "_+_",
                None,
                [GIdent(ACCUMULATOR, keys_type), GList([key], keys_type)],
                ("add_list",),
                keys_type,
            ),
            GIdent(ACCUMULATOR, keys_type),
            keys_type,
        )
        call = GCall("@sortByAssociatedKeys", input_ident(), [keys], node.overloads, t)
        return GComp(
            GList([], _BOOL_LIST),
            _UNUSED,
            None,
            _SORT_BY_INPUT,
            rng,
            GLit(False, T.BOOL),
            input_ident(),
            call,
            t,
        )


def _qualified_name(node: Node) -> str | None:
    parts: list[str] = []
    while isinstance(node, Select) and not node.test_only and not node.optional:
        parts.append(node.field)
        node = node.operand
    if isinstance(node, Ident):
        return ".".join([node.name.lstrip("."), *reversed(parts)])
    return None


def _balanced(fn: str, overload: str, terms: list[G]) -> G:
    """cel-go's parser balances chains of && and || into a tree."""
    if len(terms) == 1:
        return terms[0]
    mid = (len(terms) + 1) // 2
    left = _balanced(fn, overload, terms[:mid])
    right = _balanced(fn, overload, terms[mid:])
    return GCall(fn, None, [left, right], (overload,), T.BOOL)


def _index_overloads(operand: T.Type, key: T.Type, optional: bool) -> tuple[str, ...]:
    """The index overloads the checker finds applicable, in declaration order."""
    if optional:
        names = (
            "list_optindex_optional_int",
            "optional_list_optindex_optional_int",
            "map_optindex_optional_value",
            "optional_map_optindex_optional_value",
        )
    else:
        names = (
            "index_list",
            "optional_list_index_int",
            "index_map",
            "optional_map_index_value",
        )
    kind = operand.kind
    want: tuple[str, ...]
    if kind == "optional_type":
        inner = operand.params[0].kind
        want = {"list": (names[1],), "map": (names[3],)}.get(inner, (names[1], names[3]))
    elif kind == "list":
        want = (names[0],)
    elif kind == "map":
        want = (names[2],)
    else:
        want = names
    int_key = T.is_assignable({}, key, T.INT) is not None
    out = [n for n in want if int_key or "list" not in n]
    if optional:
        return tuple(out)
    # cel-go declares the plain index overloads first, the optional library's after.
    order = ("index_list", "index_map", "optional_list_index_int", "optional_map_index_value")
    return tuple(n for n in order if n in out)


# ---- DRA's size estimates for the device variable -------------------------------------


@dataclass(frozen=True, slots=True)
class _Decl:
    """A declared type and its maximum size (apiserver DeclType.MaxElements)."""

    max_elements: int = 0
    fields: dict[str, _Decl] = field(default_factory=dict)
    key: _Decl | None = None
    elem: _Decl | None = None


# resource.k8s.io/v1 limits
_DRIVER_NAME_MAX = 63
_DOMAIN_MAX = 63
_ID_MAX = 32
_ATTRIBUTES_AND_CAPACITIES_MAX = 32
_ATTRIBUTE_VALUE_MAX = 64  # DeviceAttributeMaxValueLength
_ATTRIBUTE_VALUES_MAX = 48  # ResourceSliceMaxAttributeValuesPerDevice

# The newest device type (ConsumableCapacity and ListTypeAttributes), which upstream's
# estimator uses whatever the environment: attribute values are strings of at most 64
# characters or lists of at most 48 values, hence 64.
_ATTRIBUTE = _Decl(max(_ATTRIBUTE_VALUE_MAX, _ATTRIBUTE_VALUES_MAX))
_ID = _Decl(_ID_MAX)
_DOMAIN = _Decl(_DOMAIN_MAX)
_INNER_ATTRIBUTES = _Decl(_ATTRIBUTES_AND_CAPACITIES_MAX, key=_ID, elem=_ATTRIBUTE)
_INNER_CAPACITY = _Decl(_ATTRIBUTES_AND_CAPACITIES_MAX, key=_ID, elem=_Decl(0))
_DEVICE = _Decl(
    0,
    fields={
        "allowMultipleAllocations": _Decl(1),
        "driver": _Decl(_DRIVER_NAME_MAX),
        "attributes": _Decl(_ATTRIBUTES_AND_CAPACITIES_MAX, key=_DOMAIN, elem=_INNER_ATTRIBUTES),
        "capacity": _Decl(_ATTRIBUTES_AND_CAPACITIES_MAX, key=_DOMAIN, elem=_INNER_CAPACITY),
    },
)


def _device_size(path: Sequence[str] | None) -> Est | None:
    """DRA's sizeEstimator: the maximum size of what ``path`` reaches from ``device``."""
    if not path or path[0] != "device":
        return None
    node = _DEVICE
    for name in path[1:]:
        if name in ("@items", "@values"):
            if node.elem is None:
                return None
            node = node.elem
        elif name == "@keys":
            if node.key is None:
                return None
            node = node.key
        elif name in node.fields:
            node = node.fields[name]
        elif node.elem is _ATTRIBUTE:  # any attribute of a domain
            node = _ATTRIBUTE
        else:
            return None
    return Est(0, node.max_elements)


# ---- the estimator ------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    """entrySizeEstimate: a container kind and the sizes of its keys and values."""

    kind: str
    key: Est
    val: Est

    def union(self, other: _Entry | None) -> _Entry | None:
        if other is None:
            return None
        return _Entry(self.kind, self.key.union(other.key), self.val.union(other.val))


@dataclass(slots=True)
class _Local:
    path: list[str] | None
    size: Est | None
    entry: _Entry | None


@dataclass(slots=True)
class AstNode:
    """What an estimator sees of a node: its path from a variable, type and size."""

    path: list[str] | None
    type: T.Type
    expr: G | None
    computed: Est | None


class _Coster:
    """cel-go's ``coster`` with ``PresenceTestHasCost(false)`` (as Kubernetes sets it)."""

    def __init__(self) -> None:
        self.paths: dict[int, list[str]] = {}
        self.locals: dict[str, list[_Local]] = {}
        self.sizes: dict[int, Est] = {}
        self.entries: dict[int, _Entry] = {}

    # -- locals and paths --

    def push_local(self, name: str, e: G) -> None:
        self.locals.setdefault(name, []).append(
            _Local(self.get_path(e), self.compute_size(e), self.compute_entry(e))
        )

    def push_iter(self, name: str, rng: G, which: str) -> None:
        entry = self.compute_entry(rng)
        container = entry.kind if entry is not None else rng.type.kind
        path = self.get_path(rng)
        size: Est | None
        if which == "single":
            size = entry.key if entry is not None else None
            sub = "@keys"
            if container == "list":
                size = entry.val if entry is not None else None
                sub = "@items"
        elif which == "key":
            size = entry.key if entry is not None else None
            sub = "@indices" if container == "list" else "@keys"
        else:
            size = entry.val if entry is not None else None
            sub = "@items" if container == "list" else "@values"
        full = [*path, sub] if path is not None else [sub]
        self.locals.setdefault(name, []).append(_Local(full, size, None))

    def peek(self, name: str) -> _Local | None:
        stack = self.locals.get(name)
        return stack[-1] if stack else None

    def pop(self, name: str) -> None:
        self.locals[name].pop()

    def get_path(self, e: G) -> list[str] | None:
        if isinstance(e, GIdent):
            local = self.peek(e.name)
            if local is not None:
                return list(local.path) if local.path is not None else None
        path = self.paths.get(id(e))
        return list(path) if path is not None else None

    def node(self, e: G) -> AstNode:
        path = self.get_path(e)
        if path and path[0] in (ACCUMULATOR, _LEGACY_ACCUMULATOR):
            path = None  # only paths from root variables
        return AstNode(path, e.type, e, self.compute_size(e))

    # -- sizes --

    def compute_size(self, e: G) -> Est | None:
        found = self.sizes.get(id(e))
        if found is not None:
            return found
        literal = _expr_size(e)
        if literal is not None:
            return literal
        estimated = _device_size(self.get_path(e))
        if estimated is not None:
            self.sizes[id(e)] = estimated
            return estimated
        if _is_scalar(e.type):
            return ONE
        if isinstance(e, GIdent):
            local = self.peek(e.name)
            if local is not None and local.size is not None:
                return local.size
        return None

    def size_or_unknown(self, e: G | AstNode) -> Est:
        size = e.computed if isinstance(e, AstNode) else self.compute_size(e)
        return size if size is not None else UNKNOWN

    def compute_entry(self, e: G) -> _Entry | None:
        found = self.entries.get(id(e))
        if found is not None:
            return found
        if isinstance(e, GIdent):
            local = self.peek(e.name)
            if local is not None and local.entry is not None:
                return local.entry
        return None

    def set_size(self, e: G, size: Est | None) -> None:
        if size is not None:
            self.sizes[id(e)] = size

    def set_entry(self, e: G, entry: _Entry | None) -> None:
        if entry is not None:
            self.entries[id(e)] = entry

    def copy_sizes(self, dst: G, src: G) -> None:
        self.set_size(dst, self.compute_size(src))
        self.set_entry(dst, self.compute_entry(src))

    # -- costs --

    def cost(self, e: G | None) -> Est:
        if e is None:
            return ZERO
        if isinstance(e, GLit):
            return ZERO
        if isinstance(e, GIdent):
            local = self.peek(e.name)
            self.paths[id(e)] = (
                list(local.path) if local is not None and local.path is not None else [e.name]
            )
            if local is not None and local.path is None:
                self.paths.pop(id(e))
            return fixed(SELECT_AND_IDENT_COST)
        if isinstance(e, GSelect):
            return self.cost_select(e)
        if isinstance(e, GCall):
            return self.cost_call(e)
        if isinstance(e, GList):
            return self.cost_list(e)
        if isinstance(e, GMap):
            return self.cost_map(e)
        assert isinstance(e, GComp)
        if _is_bind(e):
            return self.cost_bind(e)
        return self.cost_comprehension(e)

    def cost_select(self, e: GSelect) -> Est:
        if e.test_only:
            return ZERO.add(self.cost(e.operand))  # presence tests cost nothing
        total = self.cost(e.operand)
        if e.operand.type.kind in ("map", "object", "param"):
            total = total.add(fixed(SELECT_AND_IDENT_COST))
        path = self.get_path(e.operand)
        self.paths[id(e)] = [*(path or []), e.field]
        return total

    def cost_call(self, e: GCall) -> Est:
        if e.function == "dyn" and len(e.args) == 1:
            arg_cost = self.cost(e.args[0])
            self.copy_sizes(e, e.args[0])
            return ONE.add(arg_cost)
        arg_costs = [self.cost(a) for a in e.args]
        arg_nodes = [self.node(a) for a in e.args]
        if not e.overloads:
            return ZERO
        total = ZERO
        target: AstNode | None = None
        if e.target is not None:
            total = total.add(self.cost(e.target))
            target = self.node(e.target)
        fn_cost = Est(U64, 0)
        result_size: Est | None = None
        for overload in e.overloads:
            estimate, size = self.function_cost(e, overload, target, arg_nodes, arg_costs)
            fn_cost = fn_cost.union(estimate)
            if size is not None:
                result_size = size if result_size is None else result_size.union(size)
            if overload == "index_list" and e.args:
                entry = self.compute_entry(e.args[0])
                result_size = entry.val if entry is not None else None
                self.paths[id(e)] = [*(self.get_path(e.args[0]) or []), "@items"]
            elif overload == "index_map" and e.args:
                entry = self.compute_entry(e.args[0])
                result_size = entry.val if entry is not None else None
                self.paths[id(e)] = [*(self.get_path(e.args[0]) or []), "@values"]
            if result_size is None:
                result_size = self.compute_size(e)
        self.set_size(e, result_size)
        return total.add(fn_cost)

    def cost_list(self, e: GList) -> Est:
        total = ZERO
        item = Est(U64, 0) if e.elements else Est(0, 0)
        for elem in e.elements:
            total = total.add(self.cost(elem))
            item = item.union(self.size_or_unknown(elem))
        self.set_entry(e, _Entry("list", ONE, item))
        return total.add(fixed(LIST_CREATE_COST))

    def cost_map(self, e: GMap) -> Est:
        total = ZERO
        keys = Est(U64, 0) if e.entries else Est(0, 0)
        vals = Est(U64, 0) if e.entries else Est(0, 0)
        for k, v in e.entries:
            total = total.add(self.cost(k)).add(self.cost(v))
            keys = keys.union(self.size_or_unknown(k))
            vals = vals.union(self.size_or_unknown(v))
        self.set_entry(e, _Entry("map", keys, vals))
        return total.add(fixed(MAP_CREATE_COST))

    def cost_comprehension(self, e: GComp) -> Est:
        total = self.cost(e.iter_range).add(self.cost(e.accu_init))
        self.push_local(e.accu_var, e.accu_init)
        if e.iter_var2 is not None:
            self.push_iter(e.iter_var, e.iter_range, "key")
            self.push_iter(e.iter_var2, e.iter_range, "value")
        else:
            self.push_iter(e.iter_var, e.iter_range, "single")
        loop = self.cost(e.cond)
        step = self.cost(e.step)
        self.pop(e.iter_var)
        if e.iter_var2 is not None:
            self.pop(e.iter_var2)
        total = total.add(self.cost(e.result))
        self.pop(e.accu_var)
        count = self.size_or_unknown(e.iter_range)
        total = total.add(count.mul(step.add(loop)))
        init = e.accu_init
        if isinstance(init, GLit):
            self.set_size(e, self.compute_size(init))
        elif isinstance(init, (GList, GMap)):
            self.set_size(e, count)
            self.set_entry(e, self.compute_entry(e.step))
        return total

    def cost_bind(self, e: GComp) -> Est:
        total = self.cost(e.iter_range).add(self.cost(e.accu_init))
        self.push_local(e.accu_var, e.accu_init)
        total = total.add(self.cost(e.result))
        self.pop(e.accu_var)
        self.copy_sizes(e, e.result)
        return total

    def function_cost(
        self,
        e: GCall,
        overload: str,
        target: AstNode | None,
        args: list[AstNode],
        arg_costs: list[Est],
    ) -> tuple[Est, Est | None]:
        """(cost with the arguments' costs, result size) of one overload."""
        arg_sum = ZERO
        for c in arg_costs:
            arg_sum = arg_sum.add(c)
        extension = _EXTENSION_ESTIMATES.get(overload)
        if extension is not None:
            found = extension(self, target, args)
            if found is not None:
                return found[0].add(arg_sum), found[1]
        k8s = _kubernetes_estimate(self, e.function, overload, target, args)
        if k8s is not None:
            return k8s[0].add(arg_sum), k8s[1]
        return self.default_cost(e, overload, target, args, arg_costs, arg_sum)

    def default_cost(
        self,
        e: GCall,
        overload: str,
        target: AstNode | None,
        args: list[AstNode],
        arg_costs: list[Est],
        arg_sum: Est,
    ) -> tuple[Est, Est | None]:
        size = self.size_or_unknown
        if overload == "string_format" and target is not None:
            return size(target).factor(STRING_TRAVERSAL_FACTOR).add(arg_sum), None
        if overload == "string_to_bytes" and len(args) == 1:
            sz = size(args[0])
            return sz.factor(STRING_TRAVERSAL_FACTOR).add(arg_sum), Est(sz.min, _mul(sz.max, 4))
        if overload == "bytes_to_string" and len(args) == 1:
            sz = size(args[0])
            return sz.factor(STRING_TRAVERSAL_FACTOR).add(arg_sum), Est(sz.min // 4, sz.max)
        if overload == "strings_quote" and len(args) == 1:
            sz = size(args[0])
            quoted = Est(_add(sz.min, 2), _add(_mul(sz.max, 2), 2))
            return sz.factor(STRING_TRAVERSAL_FACTOR).add(arg_sum), quoted
        if overload in ("starts_with_string", "ends_with_string") and len(args) == 1:
            return size(args[0]).factor(STRING_TRAVERSAL_FACTOR).add(arg_sum), None
        if overload == "in_list" and len(args) == 2:
            return size(args[1]).factor(1).add(arg_sum), None
        if overload == "matches_string" and target is not None and len(args) == 1:
            text = size(target).add(ONE).factor(STRING_TRAVERSAL_FACTOR)
            regex = size(args[0]).factor(REGEX_LENGTH_FACTOR)
            return text.mul(regex).add(arg_sum), None
        if overload == "contains_string" and target is not None and len(args) == 1:
            text = size(target).factor(STRING_TRAVERSAL_FACTOR)
            sub = size(args[0]).factor(STRING_TRAVERSAL_FACTOR)
            return text.mul(sub).add(arg_sum), None
        if overload in ("logical_or", "logical_and"):
            lhs, rhs = arg_costs[0], arg_costs[1]
            return Est(lhs.min, lhs.add(rhs).max), None
        if overload == "conditional":
            result = size(args[1]).union(size(args[2]))
            left = self.compute_entry(e.args[1])
            right = self.compute_entry(e.args[2])
            self.set_entry(e, left.union(right) if left is not None else None)
            choice = arg_costs[1].union(arg_costs[2])
            return arg_costs[0].add(choice), result
        if overload in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            result = size(args[0]).add(size(args[1]))
            first = self.compute_entry(e.args[0])
            second = self.compute_entry(e.args[1])
            merged = first.union(second) if first is not None else None
            if merged is not None:
                self.set_entry(e, merged)
            if overload == "add_list":
                return ONE.add(arg_sum), result
            return result.factor(STRING_TRAVERSAL_FACTOR).add(arg_sum), result
        if overload in SIZE_COMPARISONS:
            lhs, rhs = size(args[0]), size(args[1])
            smallest = min(lhs.max, rhs.max)
            lower = 1 if smallest > 0 else 0
            return Est(lower, smallest).factor(STRING_TRAVERSAL_FACTOR).add(arg_sum), None
        return ONE.add(arg_sum), None


def _expr_size(e: G) -> Est | None:
    """computeExprSize: literal sizes, and the sizes of list and map literals."""
    if isinstance(e, GLit):
        v = e.value
        if isinstance(v, str):
            return fixed(len(v))
        if isinstance(v, bytes):
            return fixed(len(v))
        return ONE  # bool, int, uint, double, null
    if isinstance(e, GList):
        return fixed(len(e.elements))
    if isinstance(e, GMap):
        return fixed(len(e.entries))
    return None


def _is_scalar(t: T.Type) -> bool:
    if t.kind in ("bool", "double", "int", "uint"):
        return True
    if t.kind == "object" and t.name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        return True
    if t.kind == "optional_type":
        return _is_scalar(t.params[0])
    return False


def _is_bind(e: GComp) -> bool:
    return (
        isinstance(e.iter_range, GList)
        and not e.iter_range.elements
        and isinstance(e.cond, GLit)
        and e.cond.value is False
        and e.accu_var != _LEGACY_ACCUMULATOR
    )


# ---- extension estimators (lists v3, sets) -------------------------------------------------

Estimate = tuple[Est, Est | None]


def _size_of(coster: _Coster, node: AstNode) -> Est:
    """The extensions' estimateSize: computed size, else the environment's, else unknown."""
    if node.computed is not None:
        return node.computed
    found = _device_size(node.path)
    return found if found is not None else UNKNOWN


def _int_literal(node: AstNode, default: int) -> int:
    e = node.expr
    if not isinstance(e, GLit) or type(e.value) is not int:
        return default
    return max(0, e.value)


def _allocating(factor: float, size: Est) -> Estimate:
    cost = size.factor(factor).add(ONE).add(fixed(LIST_CREATE_COST))
    return cost, size


def _slice(coster: _Coster, target: AstNode | None, args: list[AstNode]) -> Estimate | None:
    if target is None or len(args) != 2:
        return None
    size = _size_of(coster, target)
    start = _int_literal(args[0], 0)
    end = _int_literal(args[1], size.max)
    return _allocating(1, fixed((end - start) % (1 << 64)))


def _range(coster: _Coster, target: AstNode | None, args: list[AstNode]) -> Estimate | None:
    if target is not None or len(args) != 1:
        return None
    return _allocating(1, fixed(_int_literal(args[0], U64)))


def _reverse(coster: _Coster, target: AstNode | None, args: list[AstNode]) -> Estimate | None:
    if target is None or args:
        return None
    return _allocating(1, _size_of(coster, target))


def _flatten(coster: _Coster, target: AstNode | None, args: list[AstNode]) -> Estimate | None:
    if target is None or len(args) > 1:
        return None
    depth = _int_literal(args[0], U64) if args else 1
    return _allocating(float(depth), _size_of(coster, target))


def _distinct(coster: _Coster, target: AstNode | None, args: list[AstNode]) -> Estimate | None:
    if target is None or args:
        return None
    size = _size_of(coster, target)
    return _allocating(2.0, size.mul(size))


def _sort(elem: str, on_target: bool) -> Any:
    def estimate(coster: _Coster, target: AstNode | None, args: list[AstNode]) -> Estimate | None:
        if target is None or len(args) != (0 if on_target else 1):
            return None
        size = _size_of(coster, target if on_target else args[0])
        factor = 2.0 + (STRING_TRAVERSAL_FACTOR if elem in ("string", "bytes") else 0.0)
        return _allocating(factor, size.mul(size))

    return estimate


def _sets(factor: float) -> Any:
    def estimate(coster: _Coster, target: AstNode | None, args: list[AstNode]) -> Estimate | None:
        if len(args) != 2:
            return None
        left, right = _size_of(coster, args[0]), _size_of(coster, args[1])
        return left.mul(right).factor(factor).add(ONE), None

    return estimate


_COMPARABLE = {
    "int": "int",
    "uint": "uint",
    "double": "double",
    "bool": "bool",
    "google.protobuf.Duration": "duration",
    "google.protobuf.Timestamp": "timestamp",
    "string": "string",
    "bytes": "bytes",
}

_EXTENSION_ESTIMATES: dict[str, Any] = {
    "list_slice": _slice,
    "lists_range": _range,
    "list_reverse": _reverse,
    "list_flatten": _flatten,
    "list_flatten_int": _flatten,
    "list_distinct": _distinct,
    **{f"list_{name}_sort": _sort(elem, True) for name, elem in _COMPARABLE.items()},
    **{
        f"list_{name}_sortByAssociatedKeys": _sort(elem, False)
        for name, elem in _COMPARABLE.items()
    },
    "list_sets_contains_list": _sets(1),
    "list_sets_intersects_list": _sets(1),
    "list_sets_equivalent_list": _sets(2),
}


# ---- the apiserver's EstimateCallCost (and DRA's includes) ------------------------------


def _k8s_size(coster: _Coster, node: AstNode) -> Est:
    if node.computed is not None:
        return node.computed
    found = _device_size(node.path)
    return found if found is not None else UNKNOWN


def _list_element(node: AstNode) -> AstNode | None:
    """listElementNode: the element of a list-typed node (path extended by @items)."""
    if not node.type.params:
        return None
    elem = node.type.params[0]
    path = [*node.path, "@items"] if node.path is not None else None
    return AstNode(path, elem, None, None)


def _kubernetes_estimate(
    coster: _Coster,
    function: str,
    overload: str,
    target: AstNode | None,
    args: list[AstNode],
) -> Estimate | None:
    size = lambda n: _k8s_size(coster, n)  # noqa: E731
    traversal = STRING_TRAVERSAL_FACTOR
    if function == "includes" and overload == "dra_includes_dyn_dyn" and target is not None:
        return Est(0, _ATTRIBUTE_VALUES_MAX).mul(ONE), None
    if function in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
        if target is None:
            return None
        elem = _list_element(target)
        if elem is not None:
            elem_cost = ONE
            if elem.type.kind in ("string", "bytes"):
                elem_cost = elem_cost.add(size(elem).factor(traversal))
            return size(target).mul(elem_cost), None
        return size(target).factor(traversal), None
    if function in ("url", "jsonpatch.escapeKey"):
        if len(args) != 1:
            return None
        sz = size(args[0])
        return sz.factor(traversal), sz
    if function in ("lowerAscii", "upperAscii", "substring", "trim"):
        if target is None:
            return None
        sz = size(target)
        return sz.factor(traversal), sz
    if function == "replace":
        if target is None or len(args) < 2:
            return None
        return _replace_estimate(size(target), size(args[0]), size(args[1]))
    if function == "split":
        if target is None:
            return None
        sz = size(target)
        top = sz.max
        if len(args) > 1:
            e = args[1].expr
            if isinstance(e, GLit) and type(e.value) is int:
                top = e.value % (1 << 64)
        return sz.factor(2 * traversal), Est(0, top)
    if function == "join":
        if target is None:
            return None
        joined = ZERO
        count = size(target)
        elem = _list_element(target)
        if elem is not None:
            joined = count.mul(size(elem))
        if args:
            separators = Est(max(count.min - 1, 0), max(count.max - 1, 0))
            joined = joined.add(size(args[0]).mul(separators))
        return joined.factor(traversal), joined
    if function in ("find", "findAll"):
        if target is None or not args:
            return None
        sz = size(target)
        text = sz.add(ONE).factor(traversal)
        regex = size(args[0]).factor(REGEX_LENGTH_FACTOR)
        return text.mul(regex), Est(0, sz.max)
    if function in ("cidr", "isIP", "isCIDR"):
        if not args:
            return None
        return size(args[0]).factor(traversal), None
    if function == "ip":
        if overload == "cidr_ip":
            return ONE, None
        if not args:
            return None
        return size(args[0]).factor(traversal), None
    if function == "ip.isCanonical":
        if not args:
            return None
        return size(args[0]).factor(2 * traversal), None
    if function in LIBRARY_NOMINAL:
        return ONE, None
    if function in ("containsIP", "containsCIDR"):
        if not args:
            return None
        ip_bytes = Est(4, 16)
        cost = ip_bytes.add(ip_bytes).factor(traversal)
        if function == "containsCIDR":
            cost = cost.add(ip_bytes.factor(traversal)).add(ONE)
        if overload in ("cidr_contains_ip_string", "cidr_contains_cidr_string"):
            cost = cost.add(size(args[0]).factor(traversal))
        return cost, None
    if function in ("quantity", "isQuantity", "semver", "isSemver"):
        if not args:
            return None
        return size(args[0]).factor(traversal), None
    if function == "validate":
        # Priced as a regex match against the longest format regex any named format
        # may have (the checker does not know which format the receiver is).
        if not args:
            return None
        return size(args[0]).factor(traversal).factor(_FORMAT_REGEX_COST), None
    if function == "_==_" and len(args) == 2:
        lhs, rhs = args
        if lhs.type == rhs.type and lhs.type.kind == "object":
            if lhs.type.name in _UNIT_EQUALITY:
                return ONE, None
            if lhs.type.name == "kubernetes.NamedFormat":
                return Est(1, _MAX_FORMAT_SIZE).factor(traversal), None
            if lhs.type.name == "kubernetes.URL":
                sizes = Est(1, 1)
                if rhs.computed is not None:
                    sizes = rhs.computed.union(rhs.computed)
                return Est(1, sizes.max).factor(traversal), None
    return None


# pkg/cel/limits.go: MaxNameFormatRegexSize (128) at the regex length factor, and
# MaxFormatSize, the largest a named format value may be.
_FORMAT_REGEX_COST = 128 * REGEX_LENGTH_FACTOR
_MAX_FORMAT_SIZE = 64

_UNIT_EQUALITY = frozenset({"net.IP", "net.CIDR", "kubernetes.Quantity", "kubernetes.Semver"})


def _replace_estimate(text: Est, old: Est, new: Est) -> Estimate:
    """The apiserver's replace estimate: the longest and shortest possible results."""
    count_max = count_min = 0
    kept_max = kept_min = 0
    if old.min == 0:
        count_max = text.max + 1 if text.max < U64 else text.max
        kept_max = text.max
    elif new.max <= old.min:
        kept_max = text.max
    else:
        count_max = math.ceil(float(text.max) / float(old.min))
    if old.max == 0:
        count_min = text.min + 1 if text.min < U64 else text.min
        kept_min = text.min
    elif old.max <= new.min:
        kept_min = text.min
    else:
        count_min = math.ceil(float(text.min) / float(old.max))
    result = Est(count_min, count_max).mul(new).add(Est(kept_min, kept_max))
    return text.factor(2 * STRING_TRAVERSAL_FACTOR), result


def estimate_cost(checked: CheckResult, root: Node) -> Est:
    """cel-go's estimated (min, max) cost of a checked selector in the DRA environment."""
    return _Coster().cost(expand(root, checked.types))
