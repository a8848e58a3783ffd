"""Compile a checked CEL AST into nested Python closures, evaluated once per device.

Each node becomes a function of an :class:`Activation` (the device value, local
variable slots and the running cost). Errors are :class:`EvalError` exceptions;
``&&``/``||`` and the all/exists macros absorb them commutatively as CEL specifies.
Exceeding the cost limit raises :class:`CostLimitExceeded`, which nothing absorbs.

Cost is counted approximately as cel-go counts it: every comprehension iteration is
charged the size of its body, and calls whose cost depends on their arguments (string
traversal, regex, list/map building) are charged by their cost functions. Plain
expressions without comprehensions cannot come near the limit, so they are not counted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

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
    count_nodes,
)
from draspeed.cel.checker import TYPE_IDENTS, qualified_name
from draspeed.cel.extensions import SUM_ZEROS
from draspeed.cel.functions import FUNCTIONS
from draspeed.cel.stdlib import compare, contains_in, not_equal
from draspeed.cel.values import (
    OPTIONAL_NONE,
    CostLimitExceeded,
    DomainMap,
    EvalError,
    Optional,
    TypeValue,
    UInt,
    cel_equal,
    format_value,
    map_find,
    map_index,
    map_insert,
    no_such_key,
    no_such_overload,
)

COST_LIMIT = 1_000_000
_EMPTY: dict[str, Any] = {}


class Activation:
    """Per-evaluation state: the ``device`` value, local variable slots, cost so far."""

    __slots__ = ("cost", "device", "limit", "slots")

    def __init__(self, device: Any, nslots: int, limit: int = COST_LIMIT) -> None:
        self.device = device
        self.slots: list[Any] = [None] * nslots if nslots else _NO_SLOTS
        self.cost = 0
        self.limit = limit

    def charge(self, amount: int) -> None:
        self.cost += amount
        if self.cost > self.limit:
            raise CostLimitExceeded()


_NO_SLOTS: list[Any] = []


class PlanError(Exception):
    """The program cannot be built (cel-go: "program instantiation failed")."""


class _Err:
    """A ``cel.bind`` variable whose initialiser failed (raised only when read)."""

    __slots__ = ("error",)

    def __init__(self, error: EvalError) -> None:
        self.error = error


def unbound_variable(name: str) -> _Err:
    """The slot value of a declared variable the caller gave no value (cel-go's text)."""
    return _Err(EvalError(f"no such attribute(s): {name}"))


Fn = Callable[[Activation], Any]


class Compiler:
    """Compiles an AST to closures. ``variables`` names the declared variables besides
    ``device``: they take the first slots, which the caller fills before evaluating."""

    def __init__(self, variables: tuple[str, ...] = (), *, device: bool = True) -> None:
        self._scopes: list[dict[str, int]] = [{name: i for i, name in enumerate(variables)}]
        self.nslots = len(variables)
        self._device = device  # the DRA environment: ``device`` is the activation's device

    def _slot(self) -> int:
        self.nslots += 1
        return self.nslots - 1

    def _lookup(self, name: str) -> int | None:
        for scope in reversed(self._scopes):
            if name in scope:
                return scope[name]
        return None

    def compile(self, node: Node) -> Fn:
        method = getattr(self, "_c_" + type(node).__name__)
        fn: Fn = method(node)
        return fn

    # ---- leaves ------------------------------------------------------------------

    def _c_Const(self, node: Const) -> Fn:
        value = node.value
        if node.kind == "uint":
            value = UInt(value)
        return lambda a: value

    def _c_Ident(self, node: Ident) -> Fn:
        resolved = self._name(node.name)
        if resolved is not None:
            return resolved
        # Only an unchecked expression gets here: cel-go fails when the name is read.
        error = EvalError(f"no such attribute(s): {node.name.lstrip('.')}")

        def unresolved(a: Activation) -> Any:
            raise error

        return unresolved

    def _is_local(self, name: str) -> bool:
        return any(name in scope for scope in self._scopes[1:])

    def _name(self, name: str) -> Fn | None:
        """A variable or type name: a local (unless the name has a leading dot), a
        declared variable, ``device``, a type identifier; None if it is none of them."""
        if name.startswith("."):
            name = name[1:]
        else:
            local = self._lookup(name)
            if local is not None and self._is_local(name):
                return self._slot_reader(local)
        slot = self._scopes[0].get(name)
        if slot is not None:
            return self._slot_reader(slot)
        if name == "device" and self._device:
            return lambda a: a.device
        if name in TYPE_IDENTS:
            tv = TypeValue(_type_value_name(name))
            return lambda a: tv
        return None

    def _qualified(self, node: Select) -> Fn | None:
        """``a.b.c`` naming a declared variable or a type (``net.IP``), as the checker
        resolves it; None when the root is a local variable or nothing matches."""
        name = qualified_name(node)
        if name is None or self._is_local(name.split(".", 1)[0]):
            return None
        bare = name.lstrip(".")
        slot = self._scopes[0].get(bare)
        if slot is not None:
            return self._slot_reader(slot)
        if bare in TYPE_IDENTS:
            tv = TypeValue(_type_value_name(bare))
            return lambda a: tv
        return None

    @staticmethod
    def _slot_reader(slot: int) -> Fn:
        def read(a: Activation) -> Any:
            v = a.slots[slot]
            if type(v) is _Err:
                raise v.error
            return v

        return read

    # ---- selection ---------------------------------------------------------------

    def _c_Select(self, node: Select) -> Fn:
        name = node.field
        if not node.test_only and not node.optional:
            resolved = self._qualified(node)
            if resolved is not None:
                return resolved
        if (
            isinstance(node.operand, Ident)
            and node.operand.name in ("device", ".device")
            and (self._lookup("device") is None or node.operand.name == ".device")
        ):
            if node.test_only:
                return lambda a: True
            if node.optional:
                return lambda a: Optional(True, a.device[name])
            return lambda a: a.device[name]
        operand = self.compile(node.operand)
        if node.test_only:

            def has(a: Activation) -> Any:
                return _has_field(operand(a), name)

            return has
        if node.optional:

            def opt_select(a: Activation) -> Any:
                return _optional_select(operand(a), name)

            return opt_select

        def select(a: Activation) -> Any:
            v = operand(a)
            if type(v) is dict:
                try:
                    return v[name]
                except KeyError:
                    raise no_such_key(name) from None
            return _select_slow(v, name)

        return select

    def _c_Index(self, node: Index) -> Fn:
        operand = self.compile(node.operand)
        # device.attributes["domain"] / device.capacity["domain"]: the common case.
        if isinstance(node.key, Const) and node.key.kind == "string" and not node.optional:
            key = node.key.value

            def index_str(a: Activation) -> Any:
                v = operand(a)
                t = type(v)
                if t is DomainMap:
                    return v.get(key, _EMPTY)
                if t is dict:
                    try:
                        return v[key]
                    except KeyError:
                        raise no_such_key(key) from None
                return _index_slow(v, key)

            return index_str
        key_fn = self.compile(node.key)
        if node.optional:
            return lambda a: _optional_index(operand(a), key_fn(a))
        return lambda a: _index_slow(operand(a), key_fn(a))

    # ---- calls -------------------------------------------------------------------

    def _c_Call(self, node: Call) -> Fn:
        self._resolve_namespaced(node)
        name = node.function = node.function.lstrip(".")
        if node.target is not None and name in ("or", "orValue") and len(node.args) == 1:
            return self._optional_or(node)
        if name == "@in" and isinstance(node.args[1], ListLit):
            fast = self._in_literal_list(node)
            if fast is not None:
                return fast
        special = _SPECIAL_CALLS.get(name)
        if special is not None:
            fn = special(self, node)
            if fn is not None:
                return fn
        func = FUNCTIONS.get(name)
        if func is None:
            return self._unknown_function(node)
        impl: Callable[..., Any] | None = func.member_impl if node.target is not None else func.impl
        if impl is None:
            # Only unchecked: cel-go dispatches by function name, whatever the call style.
            impl = func.impl or func.member_impl
        if impl is None:
            raise PlanError(f"no such overload: {name}")
        arity = len(node.args) + (node.target is not None)
        if all(len(o.params) != arity for o in func.overloads):
            # Unchecked only: no overload takes this many arguments.
            return self._no_overload_call(node)
        if name == "sum" and node.element_type in SUM_ZEROS:
            impl = functools.partial(impl, zero=SUM_ZEROS[node.element_type])
        if (
            name in _FOLDABLE
            and node.target is None
            and all(isinstance(x, Const) for x in node.args)
        ):
            # Literal constructors (quantity("40Gi"), semver("1.1.0"), ...) are pure: parse
            # once. A literal that fails to parse stays a runtime error, as upstream.
            try:
                folded = impl(*[x.value for x in node.args if isinstance(x, Const)])
            except EvalError:
                pass
            else:
                return lambda a: folded
        arg_fns = ([self.compile(node.target)] if node.target is not None else []) + [
            self.compile(x) for x in node.args
        ]
        cost = func.cost
        if cost is not None:

            def call_costed(a: Activation) -> Any:
                args = tuple(f(a) for f in arg_fns)
                result = impl(*args)
                a.charge(cost(args, result))
                return result

            return call_costed
        if len(arg_fns) == 1:
            f0 = arg_fns[0]
            return lambda a: impl(f0(a))
        if len(arg_fns) == 2:
            f0, f1 = arg_fns
            return lambda a: impl(f0(a), f1(a))
        if len(arg_fns) == 0:
            return lambda a: impl()
        return lambda a: impl(*[f(a) for f in arg_fns])

    def _resolve_namespaced(self, node: Call) -> None:
        """``optional.of(x)`` parsed as a member call on ``optional``: a global call of
        ``optional.of`` (the checker does this for checked expressions)."""
        if node.target is None:
            return
        prefix = qualified_name(node.target)
        if prefix is None or prefix.startswith("."):
            return
        root = prefix.split(".", 1)[0]
        if f"{prefix}.{node.function}" in FUNCTIONS and self._name(root) is None:
            node.function = f"{prefix}.{node.function}"
            node.target = None

    def _unknown_function(self, node: Call) -> Fn:
        """A function no library declares (unchecked expressions only): with arguments,
        cel-go fails when the call is evaluated; without, when the program is built."""
        name = node.function
        if node.target is None and not node.args:
            raise PlanError(f"no such overload: {name}()")
        return self._no_overload_call(node, f"no such overload: {name}")

    def _no_overload_call(self, node: Call, message: str = "no such overload") -> Fn:
        """A call no overload can take: its arguments are evaluated, then it fails."""
        parts = ([node.target] if node.target is not None else []) + list(node.args)
        arg_fns = [self.compile(x) for x in parts]
        error = EvalError(message)

        def unknown(a: Activation) -> Any:
            for f in arg_fns:
                f(a)  # argument errors come first
            raise error

        return unknown

    def _in_literal_list(self, node: Call) -> Fn | None:
        """``x in ["a", "b"]`` with literals of one hashable kind: a set lookup."""
        items = node.args[1]
        assert isinstance(items, ListLit)
        if items.optional_indices or not items.elements:
            return None
        kinds = {e.kind for e in items.elements if isinstance(e, Const)}
        if len(items.elements) != sum(isinstance(e, Const) for e in items.elements):
            return None
        if kinds not in ({"string"}, {"int"}, {"bool"}):
            return None
        consts = [e.value for e in items.elements if isinstance(e, Const)]
        members = frozenset(consts)
        ctype = type(consts[0])
        elem = self.compile(node.args[0])

        def in_list(a: Activation) -> bool:
            v = elem(a)
            if type(v) is ctype:
                return v in members
            return contains_in(v, consts)

        return in_list

    def _optional_or(self, node: Call) -> Fn:
        assert node.target is not None
        target = self.compile(node.target)
        other = self.compile(node.args[0])
        unwrap = node.function == "orValue"

        def or_(a: Activation) -> Any:
            v = target(a)
            if type(v) is not Optional:
                raise no_such_overload()
            if v.has:
                return v.value if unwrap else v
            o = other(a)
            if not unwrap and type(o) is not Optional:
                raise no_such_overload()
            return o

        return or_

    def _equality(self, node: Call) -> Fn | None:
        left = self.compile(node.args[0])
        right_node = node.args[1]
        if node.function == "_!=_":
            right_ne = self.compile(right_node)
            return lambda a: not_equal(left(a), right_ne(a))
        if isinstance(right_node, Const) and right_node.kind in ("string", "int", "bool"):
            const = right_node.value
            ctype = type(const)

            def eq_const(a: Activation) -> bool:
                v = left(a)
                if type(v) is ctype:
                    return bool(v == const)
                return cel_equal(v, const)

            return eq_const
        right = self.compile(right_node)
        return lambda a: cel_equal(left(a), right(a))

    def _ordering(self, node: Call) -> Fn | None:
        left = self.compile(node.args[0])
        right_node = node.args[1]
        want = _ORDER_RESULTS[node.function]
        if isinstance(right_node, Const) and right_node.kind == "int":
            const = right_node.value
            op = _INT_ORDER[node.function]

            def order_const(a: Activation) -> bool:
                v = left(a)
                if type(v) is int:
                    return op(v, const)
                return compare(v, const) in want

            return order_const
        right = self.compile(right_node)
        return lambda a: compare(left(a), right(a)) in want

    # ---- logic -------------------------------------------------------------------

    def _c_Logical(self, node: Logical) -> Fn:
        fns = [self.compile(o) for o in node.operands]
        stop = node.op == "||"  # the value that decides the result

        def logical(a: Activation) -> Any:
            err: EvalError | None = None
            for f in fns:
                try:
                    v = f(a)
                except EvalError as exc:
                    if err is None:
                        err = exc
                    continue
                if v is stop:
                    return stop
                if type(v) is not bool and err is None:
                    err = no_such_overload()
            if err is not None:
                raise err
            return not stop

        if len(fns) == 2:
            f0, f1 = fns

            def logical2(a: Activation) -> Any:
                try:
                    v0 = f0(a)
                except EvalError as exc:
                    try:
                        v1 = f1(a)
                    except EvalError:
                        raise exc from None
                    if v1 is stop:
                        return stop
                    raise exc from None
                if v0 is stop:
                    return stop
                if type(v0) is not bool:
                    try:
                        v1 = f1(a)
                    except EvalError:
                        raise no_such_overload() from None
                    if v1 is stop:
                        return stop
                    raise no_such_overload()
                v1 = f1(a)
                if type(v1) is bool:
                    return v1
                raise no_such_overload()

            return logical2
        return logical

    def _c_Ternary(self, node: Ternary) -> Fn:
        cond = self.compile(node.cond)
        then = self.compile(node.then)
        other = self.compile(node.other)

        def ternary(a: Activation) -> Any:
            c = cond(a)
            if c is True:
                return then(a)
            if c is False:
                return other(a)
            raise no_such_overload()

        return ternary

    # ---- literals ----------------------------------------------------------------

    def _c_ListLit(self, node: ListLit) -> Fn:
        if not node.optional_indices and all(isinstance(e, Const) for e in node.elements):
            # CEL lists are immutable: a literal of literals is built once.
            const = [
                UInt(e.value) if e.kind == "uint" else e.value
                for e in node.elements
                if isinstance(e, Const)
            ]
            return lambda a: const
        fns = [self.compile(e) for e in node.elements]
        optional = node.optional_indices
        size = len(fns)
        if not optional:
            return lambda a: [f(a) for f in fns]

        def build(a: Activation) -> Any:
            out = []
            for i, f in enumerate(fns):
                v = f(a)
                if i in optional:
                    if type(v) is not Optional:
                        raise EvalError(
                            "cannot initialize optional list element from non-optional "
                            f"value {format_value(v)}"
                        )
                    if v.has:
                        out.append(v.value)
                else:
                    out.append(v)
            return out

        del size
        return build

    def _c_MapLit(self, node: MapLit) -> Fn:
        entries = [(self.compile(k), self.compile(v), opt) for k, v, opt in node.entries]

        # As cel-go builds a map literal (a Go map): any key type, a repeated key keeps
        # the last value, an absent optional value removes the key.
        def build(a: Activation) -> Any:
            out: dict[Any, Any] = {}
            for kf, vf, opt in entries:
                k = kf(a)
                v = vf(a)
                if opt:
                    if type(v) is not Optional:
                        raise EvalError(
                            f"cannot initialize optional entry '{format_value(k)}' "
                            f"from non-optional value {format_value(v)}"
                        )
                    if not v.has:
                        out.pop(k, None)
                        continue
                    v = v.value
                out = map_insert(out, k, v)
            a.charge(len(entries))
            return out

        return build

    # ---- comprehensions ----------------------------------------------------------

    def _c_Bind(self, node: Bind) -> Fn:
        init = self.compile(node.init)
        slot = self._slot()
        self._scopes.append({node.var: slot})
        try:
            body = self.compile(node.body)
        finally:
            self._scopes.pop()

        def bind(a: Activation) -> Any:
            try:
                a.slots[slot] = init(a)
            except EvalError as exc:
                a.slots[slot] = _Err(exc)
            return body(a)

        return bind

    def _c_Comprehension(self, node: Comprehension) -> Fn:
        rng = self.compile(node.range)
        slot1 = self._slot()
        scope = {node.var: slot1}
        slot2 = -1
        if node.var2 is not None:
            slot2 = self._slot()
            scope[node.var2] = slot2
        self._scopes.append(scope)
        try:
            pred = self.compile(node.predicate) if node.predicate is not None else None
            trans = self.compile(node.transform) if node.transform is not None else None
        finally:
            self._scopes.pop()
        body_cost = 3
        for part in (node.predicate, node.transform):
            if part is not None:
                body_cost += count_nodes(part)
        builder = _COMPREHENSIONS[node.kind]
        return builder(rng, pred, trans, slot1, slot2, body_cost)


# ---- runtime helpers ---------------------------------------------------------------


def _type_value_name(name: str) -> str:
    t = TYPE_IDENTS[name]
    return str(t) if t.kind not in ("list", "map", "optional_type", "type") else t.kind


def _select_slow(v: Any, name: str) -> Any:
    t = type(v)
    if t is DomainMap:
        return v.get(name, _EMPTY)
    if t is Optional:
        return _optional_select(v, name)
    if isinstance(v, dict):
        found, value = map_find(v, name)
        if found:
            return value
    raise no_such_key(name)


def _has_field(v: Any, name: str) -> bool:
    t = type(v)
    if t is DomainMap:
        return True
    if isinstance(v, dict):
        return map_find(v, name)[0]
    if t is Optional:
        return v.has and _has_field(v.value, name)
    return False


def _optional_select(v: Any, name: str) -> Optional:
    t = type(v)
    if t is Optional:
        if not v.has:
            return OPTIONAL_NONE
        v = v.value
        t = type(v)
    if t is DomainMap:
        return Optional(True, v.get(name, _EMPTY))
    if isinstance(v, dict):
        found, value = map_find(v, name)
        return Optional(True, value) if found else OPTIONAL_NONE
    return OPTIONAL_NONE


def _list_position(v: Any, key: Any) -> int:
    t = type(key)
    if t is int or t is UInt:
        return int(key)
    if t is float and key.is_integer():
        return int(key)
    if t is float:
        raise EvalError(f"unsupported index value {key} in list")
    raise EvalError(f"unsupported index type '{_tn(key)}' in list")


def _tn(value: Any) -> str:
    from draspeed.cel.values import type_name

    return type_name(value)


def _index_slow(v: Any, key: Any) -> Any:
    t = type(v)
    if t is list or t is tuple:
        i = _list_position(v, key)
        if 0 <= i < len(v):
            return v[i]
        raise EvalError(f"index out of bounds: {i}")
    if isinstance(v, dict):
        return map_index(v, key)
    if t is Optional:
        return _optional_index(v, key)
    raise no_such_key(key)


def _optional_index(v: Any, key: Any) -> Optional:
    t = type(v)
    if t is Optional:
        if not v.has:
            return OPTIONAL_NONE
        v = v.value
        t = type(v)
    if t is list or t is tuple:
        i = _list_position(v, key)
        return Optional(True, v[i]) if 0 <= i < len(v) else OPTIONAL_NONE
    if t is DomainMap:
        found, value = map_find(v, key)
        return Optional(True, value if found else _EMPTY)
    if isinstance(v, dict):
        found, value = map_find(v, key)
        return Optional(True, value) if found else OPTIONAL_NONE
    raise no_such_overload()


_GO_TYPE_NAMES = {
    bool: "types.Bool",
    int: "types.Int",
    UInt: "types.Uint",
    float: "types.Double",
    str: "types.String",
    bytes: "types.Bytes",
    type(None): "types.Null",
    Optional: "*types.Optional",
    TypeValue: "*types.Type",
}


def _not_iterable(v: Any) -> EvalError:
    """cel-go's fold error, naming the Go type of the range value."""
    name = _GO_TYPE_NAMES.get(type(v))
    if name is None:
        cel_name = getattr(v, "cel_type_name", type(v).__name__)
        name = "cel." + str(cel_name).rsplit(".", 1)[-1]
    return EvalError(f"got '{name}', expected iterable type")


def _range_items(v: Any) -> Any:
    t = type(v)
    if t is list or t is tuple or isinstance(v, dict):
        return v
    raise _not_iterable(v)


def _pairs(v: Any) -> Any:
    t = type(v)
    if t is list or t is tuple:
        return enumerate(v)
    if isinstance(v, dict):
        return v.items()
    raise _not_iterable(v)


Builder = Callable[[Fn, Fn | None, Fn | None, int, int, int], Fn]


def _quantifier(decisive: bool, two: bool) -> Builder:
    """all (decisive False) / exists (decisive True), with CEL's error absorption."""

    def build(rng: Fn, pred: Fn | None, trans: Fn | None, s1: int, s2: int, cost: int) -> Fn:
        assert pred is not None

        def run(a: Activation) -> Any:
            items = _pairs(rng(a)) if two else _range_items(rng(a))
            slots = a.slots
            err: EvalError | None = None
            for item in items:
                a.charge(cost)
                if two:
                    slots[s1], slots[s2] = item
                else:
                    slots[s1] = item
                try:
                    v = pred(a)
                except EvalError as exc:
                    if err is None:
                        err = exc
                    continue
                if v is decisive:
                    return decisive
                if type(v) is not bool and err is None:
                    err = no_such_overload()
            if err is not None:
                raise err
            return not decisive

        return run

    return build


def _exists_one(two: bool) -> Builder:
    def build(rng: Fn, pred: Fn | None, trans: Fn | None, s1: int, s2: int, cost: int) -> Fn:
        assert pred is not None

        def run(a: Activation) -> Any:
            items = _pairs(rng(a)) if two else _range_items(rng(a))
            slots = a.slots
            count = 0
            for item in items:
                a.charge(cost)
                if two:
                    slots[s1], slots[s2] = item
                else:
                    slots[s1] = item
                v = pred(a)
                if v is True:
                    count += 1
                elif v is not False:
                    raise no_such_overload()
            return count == 1

        return run

    return build


def _map_build(rng: Fn, pred: Fn | None, trans: Fn | None, s1: int, s2: int, cost: int) -> Fn:
    assert trans is not None

    def run(a: Activation) -> Any:
        out = []
        slots = a.slots
        for item in _range_items(rng(a)):
            a.charge(cost)
            slots[s1] = item
            if pred is not None:
                keep = pred(a)
                if type(keep) is not bool:
                    raise no_such_overload()
                if not keep:
                    continue
            out.append(trans(a))
        return out

    return run


def _filter_build(rng: Fn, pred: Fn | None, trans: Fn | None, s1: int, s2: int, cost: int) -> Fn:
    assert pred is not None

    def run(a: Activation) -> Any:
        out = []
        slots = a.slots
        for item in _range_items(rng(a)):
            a.charge(cost)
            slots[s1] = item
            keep = pred(a)
            if type(keep) is not bool:
                raise no_such_overload()
            if keep:
                out.append(item)
        return out

    return run


def _transform(kind: str) -> Builder:
    def build(rng: Fn, pred: Fn | None, trans: Fn | None, s1: int, s2: int, cost: int) -> Fn:
        assert trans is not None

        def run(a: Activation) -> Any:
            slots = a.slots
            out_list: list[Any] = []
            out_map: dict[Any, Any] = {}
            for k, v in _pairs(rng(a)):
                a.charge(cost)
                slots[s1] = k
                slots[s2] = v
                if pred is not None:
                    keep = pred(a)
                    if type(keep) is not bool:
                        raise no_such_overload()
                    if not keep:
                        continue
                result = trans(a)
                if kind == "transformList":
                    out_list.append(result)
                elif kind == "transformMap":
                    out_map = map_insert(out_map, k, result)
                else:
                    if not isinstance(result, dict):
                        raise no_such_overload()
                    for rk, rv in result.items():
                        if map_find(out_map, rk)[0]:
                            raise EvalError(f"insert failed: key {format_value(rk)} already exists")
                        out_map = map_insert(out_map, rk, rv)
            return out_list if kind == "transformList" else out_map

        return run

    return build


def _sort_by(rng: Fn, pred: Fn | None, trans: Fn | None, s1: int, s2: int, cost: int) -> Fn:
    assert trans is not None
    from draspeed.cel.extensions import sort_by_keys

    def run(a: Activation) -> Any:
        items = rng(a)
        if type(items) is not list and type(items) is not tuple:
            raise no_such_overload()
        keys = []
        for item in items:
            a.charge(cost)
            a.slots[s1] = item
            keys.append(trans(a))
        return sort_by_keys(list(items), keys)

    return run


_COMPREHENSIONS: dict[str, Builder] = {
    "all": _quantifier(False, False),
    "exists": _quantifier(True, False),
    "all2": _quantifier(False, True),
    "exists2": _quantifier(True, True),
    "exists_one": _exists_one(False),
    "exists_one2": _exists_one(True),
    "map": _map_build,
    "filter": _filter_build,
    "transformList": _transform("transformList"),
    "transformMap": _transform("transformMap"),
    "transformMapEntry": _transform("transformMapEntry"),
    "sortBy": _sort_by,
}

# Pure functions of their (literal) arguments, evaluated at compile time.
_FOLDABLE = frozenset(
    {"quantity", "isQuantity", "semver", "isSemver", "ip", "isIP", "cidr", "isCIDR", "url", "isURL"}
)

_ORDER_RESULTS = {
    "_<_": (-1,),
    "_<=_": (-1, 0),
    "_>_": (1,),
    "_>=_": (0, 1),
}

_INT_ORDER: dict[str, Callable[[int, int], bool]] = {
    "_<_": lambda x, y: x < y,
    "_<=_": lambda x, y: x <= y,
    "_>_": lambda x, y: x > y,
    "_>=_": lambda x, y: x >= y,
}

_SPECIAL_CALLS: dict[str, Callable[[Compiler, Call], Fn | None]] = {
    "_==_": Compiler._equality,
    "_!=_": Compiler._equality,
    "_<_": Compiler._ordering,
    "_<=_": Compiler._ordering,
    "_>_": Compiler._ordering,
    "_>=_": Compiler._ordering,
}
