"""Compile a checked CEL AST into nested Python closures, evaluated once per device.

Each node becomes a function of an :class:`Activation` (the device value, local
variable slots, and the :class:`~draspeed.cel.cost.Meter` of the evaluation). Errors
are :class:`EvalError` exceptions; exceeding the cost limit raises
:class:`CostLimitExceeded` and a passed deadline ``AllocationTimeout``, which nothing
absorbs.

The compiler follows cel-go's program plan (``interpreter/planner.go``) closely enough
to charge exactly what upstream's cost observer charges, and to evaluate exactly the
sub-expressions upstream evaluates (which decides whether a selector reaches the cost
limit):

- Identifiers, field selections and indexes form *attributes*: a root (``device``, a
  local variable, the value of another expression, or a ``?:`` choosing between two
  attributes) and a chain of qualifiers. Each applied qualifier costs 1 and the
  attribute 1 more when it is observed as a whole (not as a ``?:`` branch, not under
  ``has()``); an optional qualifier that finds nothing costs nothing.
- Calls evaluate their arguments as upstream's binary or variadic bindings do (a
  variadic call stops at the first erroring argument), then are charged by
  :func:`draspeed.cel.cost.call_cost`.
- Constant folding as cel-go's optimizer does it: list and map literals of constants,
  type conversions of constants and ``x in [constants]`` cost nothing per evaluation.
- ``optional.or``/``orValue`` short-circuit and cost nothing; ``&&``, ``||`` and ``?:``
  cost nothing themselves.
- Comprehensions charge, per iteration, the steps of cel-go's macro expansion (loop
  condition, accumulator reads, list building) and keep evaluating past an erroring
  element as upstream's accumulator does; ``cel.bind`` initialises its variable on
  first use.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from draspeed.cel import cost as C
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
    Shared,
    Ternary,
)
from draspeed.cel.checker import TYPE_IDENTS, qualified_name
from draspeed.cel.extensions import SUM_ZEROS
from draspeed.cel.functions import FUNCTIONS, NON_STRICT, VARIADIC_OVERLOADS, Function
from draspeed.cel.meter import COST_LIMIT, Meter
from draspeed.cel.stdlib import compare, contains_in, not_equal
from draspeed.cel.values import (
    INT64_MAX,
    OPTIONAL_NONE,
    QUALIFIER_TYPES,
    TWO_63,
    TWO_64,
    CostLimitExceeded,
    DomainMap,
    EvalError,
    GoPanic,
    Optional,
    TypeValue,
    UInt,
    cel_equal,
    format_double,
    format_value,
    go_type_name,
    invalid_qualifier,
    map_find,
    map_insert,
    no_such_key,
    no_such_overload,
    refused_by_trait,
    type_name,
)
from draspeed.errors import AllocationTimeout

_EMPTY: dict[str, Any] = {}

__all__ = ["COST_LIMIT", "Activation", "Compiler", "CostLimitExceeded", "PlanError"]


class Activation(Meter):
    """Per-evaluation state: the ``device`` value, local variable slots, the meter, and
    the :class:`~draspeed.cel.ast.Shared` groups read (a bit mask)."""

    __slots__ = ("device", "groups", "slots")

    def __init__(
        self,
        device: Any,
        nslots: int,
        limit: int = COST_LIMIT,
        deadline: float | None = None,
    ) -> None:
        super().__init__(limit, deadline)
        self.device = device
        self.slots: list[Any] = [None] * nslots if nslots else _NO_SLOTS
        self.groups = 0


_NO_SLOTS: list[Any] = []


class PlanError(Exception):
    """The program cannot be built (cel-go: "program instantiation failed"), e.g. a
    constant conversion that errs."""


class _Err:
    """A local variable holding an error (a ``cel.bind`` initialiser that failed)."""

    __slots__ = ("error",)

    def __init__(self, error: EvalError) -> None:
        self.error = error


_UNSET = object()  # a cel.bind variable not read yet


def unbound_variable(name: str) -> _Err:
    """The slot value of a declared variable the caller gave no value (cel-go's text)."""
    return _Err(EvalError(f"no such attribute(s): {name}"))


Fn = Callable[[Activation], Any]


# ---- plans: what cel-go's planner makes of a node ------------------------------------


class _Const:
    """A constant (literals, folded lists/maps/conversions): costs nothing."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Expr:
    """Any other interpretable: a function that charges its own cost."""

    __slots__ = ("fn",)

    def __init__(self, fn: Fn) -> None:
        self.fn = fn


class _Qual:
    """One qualifier: ``kind`` const (``key`` is the value), attr (``key`` is an _Attr
    resolved without its own observation) or rel (``key`` is an Fn)."""

    __slots__ = ("key", "kind", "optional", "test_only")

    def __init__(self, kind: str, key: Any, optional: bool, test_only: bool = False) -> None:
        self.kind = kind
        self.key = key
        self.optional = optional
        self.test_only = test_only


class _Attr:
    """An attribute: ``root`` is ("device",), ("slot", i), ("bind", i, init Fn),
    ("rel", Fn) or ("cond", cond Fn, then _Attr, else _Attr); qualifiers in order."""

    __slots__ = ("quals", "root", "test_only")

    def __init__(self, root: tuple[Any, ...]) -> None:
        self.root = root
        self.quals: list[_Qual] = []
        self.test_only = False

    def add(self, qual: _Qual) -> None:
        if self.root[0] == "cond":  # cel-go qualifies both branches of a conditional
            self.root[2].add(qual)
            self.root[3].add(qual)
        else:
            self.quals.append(qual)


_Plan = _Const | _Expr | _Attr


class Compiler:
    """Plans an AST as cel-go's planner does, into closures. ``variables`` names the
    declared variables besides ``device``: they take the first slots, which the caller
    fills before evaluating (a value may be :func:`unbound_variable`)."""

    def __init__(self, variables: tuple[str, ...] = (), *, device: bool = True) -> None:
        self._declared = {name: ("var", i) for i, name in enumerate(variables)}
        self._scopes: list[dict[str, tuple[Any, ...]]] = []
        self.nslots = len(variables)
        self._device = device  # the DRA environment: ``device`` is the activation's device

    def _slot(self) -> int:
        self.nslots += 1
        return self.nslots - 1

    def _lookup(self, name: str) -> tuple[Any, ...] | None:
        for scope in reversed(self._scopes):
            if name in scope:
                return scope[name]
        return None

    def compile(self, node: Node) -> Fn:
        return self._finish(self._plan(node))

    def compile_branch(self, node: Node) -> Fn:
        """``node`` as a ``?:`` branch: cel-go resolves a branch that is an attribute
        without observing it (its qualifiers cost, the attribute itself does not)."""
        plan = self._plan(node)
        if type(plan) is _Attr and not plan.test_only:
            return _resolver(plan)
        return self._finish(plan)

    def _plan(self, node: Node) -> _Plan:
        method = getattr(self, "_p_" + type(node).__name__)
        plan: _Plan = method(node)
        return plan

    # ---- finishing plans into functions ------------------------------------------

    def _finish(self, plan: _Plan) -> Fn:
        if type(plan) is _Const:
            value = plan.value
            if type(value) is _Err:
                error = value.error

                def raise_folded(a: Activation) -> Any:
                    raise error

                return raise_folded
            return lambda a: value
        if type(plan) is _Expr:
            return plan.fn
        assert type(plan) is _Attr
        if plan.test_only:
            resolve = _resolver(plan)

            def presence(a: Activation) -> Any:
                v = resolve(a)
                return v.has if type(v) is Optional else v

            return presence
        # A conditional is observed at no cost; any other attribute costs 1 besides its
        # qualifiers.
        return _resolver(plan, 0 if plan.root[0] == "cond" else C.SELECT_AND_IDENT_COST)

    @staticmethod
    def _as_attr(plan: _Plan) -> _Attr:
        if type(plan) is _Attr:
            return plan
        if type(plan) is _Const:
            value = plan.value
            return _Attr(("rel", lambda a: value))
        assert type(plan) is _Expr
        return _Attr(("rel", plan.fn))

    @staticmethod
    def _is_const(plan: _Plan) -> bool:
        return type(plan) is _Const and type(plan.value) is not _Err

    @staticmethod
    def _is_const_string(plan: _Plan) -> bool:
        return type(plan) is _Const and type(plan.value) is str

    # ---- leaves ------------------------------------------------------------------

    def _p_Const(self, node: Const) -> _Plan:
        return _Const(UInt(node.value) if node.kind == "uint" else node.value)

    def _p_Ident(self, node: Ident) -> _Plan:
        name = node.name
        if node.as_type:  # a local holding a type, named like one (see the checker)
            return _Const(TypeValue(_type_value_name(name)))
        if not name.startswith("."):
            local = self._lookup(name)
            if local is not None:
                return _Attr(local)
        name = name.lstrip(".")
        declared = self._declared.get(name)
        if declared is not None:
            return _Attr(declared)
        if name == "device" and self._device:
            return _Attr(("device",))
        if name in TYPE_IDENTS:
            return _Const(TypeValue(_type_value_name(name)))
        # Only an unchecked expression gets here: cel-go fails when the name is read.
        error = EvalError(f"no such attribute(s): {name}")

        def unresolved(a: Activation) -> Any:
            a.charge(C.SELECT_AND_IDENT_COST)
            raise error

        return _Expr(unresolved)

    def _p_Shared(self, node: Shared) -> _Plan:
        path = self.compile(node.path)
        bit = 1 << node.group

        def read(a: Activation) -> Any:
            before = a.cost
            value = path(a)
            a.cost = before  # the initialiser's cost is accounted once, by the caller
            a.groups |= bit
            return value

        return _Attr(("rel", read))

    # ---- selection ---------------------------------------------------------------

    def _p_Select(self, node: Select) -> _Plan:
        qualified = _qualified_type_name(node)
        if qualified is not None and self._lookup(qualified.split(".", 1)[0]) is None:
            return _Const(TypeValue(_type_value_name(qualified)))
        if not node.test_only and not node.optional:
            name = qualified_name(node)
            if name is not None:
                bare = name.lstrip(".")
                declared = self._declared.get(bare)
                # A declared variable with a dotted name, unless a local variable
                # shadows its first part (a leading dot means the global one).
                if declared is not None and (
                    name.startswith(".") or self._lookup(bare.split(".", 1)[0]) is None
                ):
                    return _Attr(declared)
        attr = self._as_attr(self._plan(node.operand))
        if node.test_only:
            attr.add(_Qual("const", node.field, False, test_only=True))
            attr.test_only = True
            return attr
        attr.add(_Qual("const", node.field, node.optional))
        return attr

    def _p_Index(self, node: Index) -> _Plan:
        attr = self._as_attr(self._plan(node.operand))
        key = self._plan(node.key)
        if type(key) is _Const and type(key.value) is not _Err:
            attr.add(_Qual("const", key.value, node.optional))
        elif type(key) is _Attr:
            attr.add(_Qual("attr", key, node.optional))
        else:
            attr.add(_Qual("rel", self._finish(key), node.optional))
        return attr

    # ---- calls -------------------------------------------------------------------

    def _p_Call(self, node: Call) -> _Plan:
        self._resolve_namespaced(node)
        name = node.function = node.function.lstrip(".")
        overload = node.overloads[0] if len(node.overloads) == 1 else ""
        if node.target is not None and name in ("or", "orValue") and len(node.args) == 1:
            return self._optional_or(node)
        if name in ("_==_", "_!=_"):
            return self._equality(node)
        arg_nodes = ([node.target] if node.target is not None else []) + list(node.args)
        plans = [self._plan(x) for x in arg_nodes]
        if name == "@in" and overload == "in_list":
            member = self._set_membership(plans)
            if member is not None:
                return member
        func = FUNCTIONS.get(name)
        if func is None:
            return self._unknown_function(node, plans)
        impl: Callable[..., Any] | None = func.member_impl if node.target is not None else func.impl
        if impl is None:
            # Only unchecked: cel-go dispatches by function name, whatever the call style.
            impl = func.impl or func.member_impl
        if impl is None:
            raise PlanError(f"no such overload: {name}")
        if all(len(o.params) != len(plans) for o in func.overloads):
            # Unchecked only: no overload takes this many arguments.
            return self._no_overload_call(plans)
        if name == "sum" and node.element_type in SUM_ZEROS:
            impl = functools.partial(impl, zero=SUM_ZEROS[node.element_type])
        if func.guarded or (
            name in _REGEX_FUNCTIONS and len(plans) > 1 and not self._is_const_string(plans[1])
        ):
            # The regex library's find and findAll are guarded as any other; with a
            # constant pattern upstream precompiles it into a call that checks its
            # receiver itself (a bare "no such overload").
            impl = _type_guarded(name, impl, _candidate_params(func, node, len(plans)))
        if name == "matches" and len(plans) == 2 and not self._is_const_string(plans[1]):
            impl = _matches_by_trait(impl)
        if name in _CONVERSIONS and len(plans) == 1 and self._is_const(plans[0]):
            # cel-go's optimizer folds conversions of constants when planning; one that
            # fails makes the program fail to build.
            assert type(plans[0]) is _Const
            try:
                return _Const(impl(plans[0].value))
            except EvalError as exc:
                raise PlanError(str(exc)) from None
        fns = [self._finish(p) for p in plans]
        binary = len(fns) <= 1 or (
            len(fns) == 2
            and (func.singleton or (overload != "" and overload not in VARIADIC_OVERLOADS))
        )
        if name in _FOLDABLE and all(self._is_const(p) for p in plans):
            folded = self._fold_constructor(name, overload, impl, plans)
            if folded is not None:
                return folded
        right = plans[1] if len(plans) == 2 else None
        if name in _ORDERINGS and type(right) is _Const and self._is_const(right):
            fast = self._ordering_const(name, overload, fns[0], right)
            if fast is not None:
                return fast
        return _Expr(_call(name, overload, impl, fns, binary, name not in NON_STRICT))

    def _resolve_namespaced(self, node: Call) -> None:
        """``optional.of(x)`` parsed as a member call on ``optional``: a global call of
        ``optional.of`` (the checker does this for checked expressions)."""
        if node.target is None:
            return
        prefix = qualified_name(node.target)
        if prefix is None or prefix.startswith("."):
            return
        root = prefix.split(".", 1)[0]
        known = self._lookup(root) is not None or root in self._declared
        if f"{prefix}.{node.function}" in FUNCTIONS and not known and root != "device":
            node.function = f"{prefix}.{node.function}"
            node.target = None

    def _unknown_function(self, node: Call, plans: list[_Plan]) -> _Plan:
        """A function no library declares (unchecked expressions only): with arguments,
        cel-go fails when the call is evaluated; without, when the program is built."""
        if not plans:
            raise PlanError(f"no such overload: {node.function}()")
        return self._no_overload_call(plans, f"no such overload: {node.function}")

    def _no_overload_call(self, plans: list[_Plan], message: str = "no such overload") -> _Plan:
        """A call no overload can take: its arguments are evaluated, then it fails."""
        fns = [self._finish(p) for p in plans]
        error = EvalError(message)

        def unknown(a: Activation) -> Any:
            for f in fns:
                f(a)  # argument errors come first
            a.charge(C.CALL_COST)
            raise error

        return _Expr(unknown)

    def _fold_constructor(
        self, name: str, overload: str, impl: Callable[..., Any], plans: list[_Plan]
    ) -> _Plan | None:
        """Literal constructors (quantity("40Gi"), semver("1.1.0")...) are pure: parse
        once, charge every time. A literal that fails to parse stays a runtime error."""
        args = [p.value for p in plans if type(p) is _Const]
        try:
            value = impl(*args)
        except EvalError:
            return None
        cost = C.call_cost(name, overload, args)

        def folded(a: Activation) -> Any:
            a.charge(cost)
            return value

        return _Expr(folded)

    def _ordering_const(self, name: str, overload: str, left: Fn, right: _Const) -> _Plan | None:
        """``x < 5`` where the ordering costs 1 whatever x is: a direct int compare."""
        const = right.value
        if type(const) is not int or not C.has_constant_cost(name, overload):
            return None
        op = _INT_ORDER[name]
        want = _ORDER_RESULTS[name]

        def order_const(a: Activation) -> bool:
            try:
                v = left(a)
            except EvalError:
                a.charge(1)
                raise
            a.charge(1)
            if type(v) is int:
                return op(v, const)
            return compare(v, const, name) in want

        return _Expr(order_const)

    def _set_membership(self, plans: list[_Plan]) -> _Plan | None:
        """``x in [constants]``: cel-go tests a set of the (primitive, non-bytes)
        constants; the membership test itself is not charged."""
        items = plans[1]
        if type(items) is not _Const or type(items.value) not in (list, tuple):
            return None
        values = items.value
        if not values:
            return _Const(False)  # never evaluates x
        if any(type(v) not in _PRIMITIVES for v in values):
            return None
        elem = self._finish(plans[0])
        keys = _set_keys(values)

        def in_set(a: Activation) -> bool:
            v = elem(a)
            key = _member_key(v)
            if key is None:  # not a primitive: equal to none of them
                return contains_in(v, values)
            return key in keys

        return _Expr(in_set)

    def _optional_or(self, node: Call) -> _Plan:
        """cel-go's evalOptionalOr(Value): short-circuits, is not charged, and hands a
        non-optional receiver back unchanged."""
        assert node.target is not None
        target = self.compile(node.target)
        other = self.compile(node.args[0])
        unwrap = node.function == "orValue"

        def or_(a: Activation) -> Any:
            v = target(a)
            if type(v) is not Optional:
                return v
            if v.has:
                return v.value if unwrap else v
            return other(a)

        return _Expr(or_)

    def _equality(self, node: Call) -> _Plan:
        """``==``/``!=``: cel-go's evalEq/evalNe evaluate both sides and are charged as
        the overloads ``equals``/``not_equals``."""
        name = node.function
        overload = "equals" if name == "_==_" else "not_equals"
        left = self.compile(node.args[0])
        right_plan = self._plan(node.args[1])
        right = self._finish(right_plan)
        if name == "_!=_":
            return _Expr(_call(name, overload, not_equal, [left, right], True))
        const = right_plan.value if self._is_const(right_plan) else None  # type: ignore[union-attr]
        ctype = type(const)
        if ctype not in (str, int, bool):
            return _Expr(_call(name, overload, cel_equal, [left, right], True))
        const_size = C.actual_size(const)

        def eq_const(a: Activation) -> bool:
            try:
                v = left(a)
            except EvalError as exc:
                a.charge(C.call_cost(name, overload, (exc, const)))
                raise
            if type(v) is ctype:
                if ctype is str:
                    a.charge(math.ceil(min(len(v), const_size) * C.STRING_TRAVERSAL_FACTOR))
                else:
                    a.charge(1)
                return bool(v == const)
            a.charge(C.call_cost(name, overload, (v, const)))
            return cel_equal(v, const)

        return _Expr(eq_const)

    # ---- logic -------------------------------------------------------------------

    def _p_Logical(self, node: Logical) -> _Plan:
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

        return _Expr(logical)

    def _p_Ternary(self, node: Ternary) -> _Plan:
        cond = self.compile(node.cond)
        then = self._as_attr(self._plan(node.then))
        other = self._as_attr(self._plan(node.other))
        return _Attr(("cond", cond, then, other))

    # ---- literals ----------------------------------------------------------------

    def _p_ListLit(self, node: ListLit) -> _Plan:
        plans = [self._plan(e) for e in node.elements]
        optional = node.optional_indices
        if not optional and all(self._is_const(p) for p in plans):
            # cel-go builds a list of constants once, when planning.
            return _Const([p.value for p in plans if type(p) is _Const])
        fns = [self._finish(p) for p in plans]

        def build(a: Activation) -> Any:
            out = []
            try:
                for i, f in enumerate(fns):
                    v = f(a)
                    if i in optional:
                        if type(v) is not Optional:
                            raise EvalError(
                                "cannot initialize optional list element from non-optional "
                                f"value {format_value(v)}"
                            )
                        if not v.has:
                            continue
                        v = v.value
                    out.append(v)
            except EvalError:
                a.charge(C.LIST_CREATE_COST)
                raise
            a.charge(C.LIST_CREATE_COST)
            return out

        def build_plain(a: Activation) -> Any:
            try:
                out = [f(a) for f in fns]
            except EvalError:
                a.charge(C.LIST_CREATE_COST)
                raise
            a.charge(C.LIST_CREATE_COST)
            return out

        return _Expr(build if optional else build_plain)

    def _p_MapLit(self, node: MapLit) -> _Plan:
        plans = [(self._plan(k), self._plan(v), opt) for k, v, opt in node.entries]
        entries = [(self._finish(k), self._finish(v), opt) for k, v, opt in plans]

        def fill(a: Activation) -> Any:
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
                # As cel-go builds a map literal (a Go map): a repeated key keeps the
                # last value.
                out = map_insert(out, k, v)
            return out

        if all(self._is_const(k) and self._is_const(v) for k, v, _ in plans):
            # Built once when planning; an error becomes the value of every evaluation.
            try:
                return _Const(fill(Activation(None, 0)))
            except EvalError as exc:
                return _Const(_Err(exc))
            except GoPanic as exc:
                # Upstream builds it when planning and the panic ends the process; here
                # every evaluation ends in it instead.
                panic = exc

                def panicking(a: Activation) -> Any:
                    raise panic

                return _Expr(panicking)

        def build(a: Activation) -> Any:
            try:
                out = fill(a)
            except EvalError:
                a.charge(C.MAP_CREATE_COST)
                raise
            a.charge(C.MAP_CREATE_COST)
            return out

        return _Expr(build)

    # ---- comprehensions ----------------------------------------------------------

    def _p_Bind(self, node: Bind) -> _Plan:
        init = self.compile(node.init)
        slot = self._slot()
        self._scopes.append({node.var: ("bind", slot, init)})
        try:
            body = self.compile(node.body)
        finally:
            self._scopes.pop()

        def bind(a: Activation) -> Any:
            a.slots[slot] = _UNSET  # initialised on first read, as cel-go's fold accumulator
            return body(a)

        return _Expr(bind)

    def _p_Comprehension(self, node: Comprehension) -> _Plan:
        if node.kind == "sortBy":
            return self._sort_by(node)
        rng = self.compile(node.range)
        slot1 = self._slot()
        scope: dict[str, tuple[Any, ...]] = {node.var: ("slot", slot1)}
        slot2 = -1
        if node.var2 is not None:
            slot2 = self._slot()
            scope[node.var2] = ("slot", slot2)
        self._scopes.append(scope)
        try:
            pred = self.compile(node.predicate) if node.predicate is not None else None
            trans_plan = self._plan(node.transform) if node.transform is not None else None
        finally:
            self._scopes.pop()
        trans = self._finish(trans_plan) if trans_plan is not None else None
        # The element list ``[t]`` of a map/transformList step is folded when t is constant.
        element_cost = 0 if trans_plan is None or self._is_const(trans_plan) else C.LIST_CREATE_COST
        builder = _COMPREHENSIONS[node.kind]
        return _Expr(builder(rng, pred, trans, slot1, slot2, element_cost))

    def _sort_by(self, node: Comprehension) -> _Plan:
        """``l.sortBy(v, key)``: cel-go's ``cel.bind(in, l, in.@sortByAssociatedKeys(
        in.map(v, key)))``, a binary call: both arguments evaluated."""
        from draspeed.cel.extensions import sort_by_keys

        target = self.compile(node.range)
        slot = self._slot()
        self._scopes.append({node.var: ("slot", slot)})
        try:
            assert node.transform is not None
            key_plan = self._plan(node.transform)
        finally:
            self._scopes.pop()
        key = self._finish(key_plan)
        step_cost = 2 + (0 if self._is_const(key_plan) else C.LIST_CREATE_COST)
        overload = node.overloads[0] if len(node.overloads) == 1 else ""

        def sort_by(a: Activation) -> Any:
            err: EvalError | None = None
            try:
                items = target(a)  # the bound input, initialised by its first read
            except EvalError as exc:
                items = err = exc
            a.charge(2)  # the receiver, and the map's range: the input read twice
            keys: Any
            if err is not None:
                keys = err  # the map fails on its range, before any step
            else:
                try:
                    keys = _collect(a, _items(items), slot, -1, None, key, step_cost)
                except EvalError as exc:
                    keys = err = exc
            a.charge(C.call_cost("@sortByAssociatedKeys", overload, (items, keys)))
            if err is not None:
                raise err
            return sort_by_keys(items, keys)

        return _Expr(sort_by)


# ---- attribute resolution ------------------------------------------------------------


def _resolver(attr: _Attr, observed: int = 0) -> Fn:
    """Resolve ``attr`` charging its qualifiers, plus ``observed`` for the attribute
    itself (charged even when resolving fails, as upstream's observer sees errors)."""
    root = _root(attr.root)
    quals = attr.quals
    if all(q.kind == "const" and not q.optional and not q.test_only for q in quals):
        keys = tuple(q.key for q in quals)
        return _const_chain(root, keys, observed)
    steps = [_qualifier(q) for q in quals]

    def apply_all(a: Activation) -> Any:
        obj = root(a)
        is_opt = False
        if type(obj) is Optional:
            if not obj.has:
                return obj
            obj = obj.value
            is_opt = True
        for apply, if_present, optional in steps:
            if is_opt or optional:
                is_opt = True
                present, obj = if_present(a, obj)
                if not present:
                    return OPTIONAL_NONE
            else:
                obj = apply(a, obj)
        return Optional(True, obj) if is_opt else obj

    return _charged(apply_all, observed)


def _charged(fn: Fn, observed: int) -> Fn:
    """``fn``, charging ``observed`` after it, also when it ends in a CEL error."""
    if not observed:
        return fn

    def charged(a: Activation) -> Any:
        try:
            value = fn(a)
        except EvalError:
            a.charge(observed)
            raise
        a.charge(observed)
        return value

    return charged


def _const_chain(root: Fn, keys: tuple[Any, ...], observed: int) -> Fn:
    """The common attribute: a root and plain constant qualifiers (``device.driver``,
    ``x.attributes["d"].model``). Charges once at the end: the total is what counts."""
    n = len(keys)
    if n == 0:
        return _charged(root, observed)
    if n == 1:
        (key,) = keys

        def one(a: Activation) -> Any:
            try:
                v = root(a)
            except EvalError:
                a.charge(observed)
                raise
            if type(v) is Optional:
                return _optional_tail(a, v, keys, observed)
            try:
                if type(v) is dict and type(key) is str:
                    try:
                        v = v[key]
                    except KeyError:
                        raise no_such_key(key) from None
                else:
                    v = _qualify(v, key)
            except EvalError:
                a.charge(1 + observed)
                raise
            a.charge(1 + observed)
            return v

        return one

    def chain(a: Activation) -> Any:
        try:
            v = root(a)
        except EvalError:
            a.charge(observed)
            raise
        if type(v) is Optional:
            return _optional_tail(a, v, keys, observed)
        applied = 0
        try:
            for key in keys:
                applied += 1
                t = type(v)
                if t is DomainMap and type(key) is str:
                    v = v.get(key, _EMPTY)
                elif t is dict and type(key) is str:
                    try:
                        v = v[key]
                    except KeyError:
                        raise no_such_key(key) from None
                else:
                    v = _qualify(v, key)
        except EvalError:
            a.charge(applied + observed)
            raise
        a.charge(n + observed)
        return v

    return chain


def _optional_tail(a: Activation, opt: Optional, keys: tuple[Any, ...], observed: int) -> Any:
    """Constant qualifiers applied to an optional value: each one that finds a value
    costs 1; the result is an optional."""
    if not opt.has:
        a.charge(observed)
        return opt
    obj = opt.value
    for key in keys:
        try:
            found, obj = _qualify_if_present(obj, key)
        except EvalError:
            a.charge(observed)
            raise
        if not found:
            a.charge(observed)
            return OPTIONAL_NONE
        a.charge(1)
    a.charge(observed)
    return Optional(True, obj)


def _root(root: tuple[Any, ...]) -> Fn:
    kind = root[0]
    if kind == "device":
        return lambda a: a.device
    if kind == "slot":
        slot = root[1]
        return lambda a: a.slots[slot]
    if kind == "var":
        return _variable_reader(root[1])
    if kind == "bind":
        return _bind_reader(root[1], root[2])
    if kind == "rel":
        fn: Fn = root[1]
        return fn
    assert kind == "cond"
    cond, then_attr, else_attr = root[1], root[2], root[3]
    then = _resolver(then_attr)
    other = _resolver(else_attr)

    def choose(a: Activation) -> Any:
        c = cond(a)
        if c is True:
            return then(a)
        if c is False:
            return other(a)
        raise no_such_overload()

    return choose


def _variable_reader(slot: int) -> Fn:
    def read(a: Activation) -> Any:
        v = a.slots[slot]
        if type(v) is _Err:
            raise v.error
        return v

    return read


def _bind_reader(slot: int, init: Fn) -> Fn:
    def read(a: Activation) -> Any:
        v = a.slots[slot]
        if v is _UNSET:
            try:
                v = init(a)
            except EvalError as exc:
                v = _Err(exc)
            a.slots[slot] = v
        if type(v) is _Err:
            raise v.error
        return v

    return read


QualStep = tuple[
    Callable[[Activation, Any], Any], Callable[[Activation, Any], tuple[bool, Any]], bool
]


def _qualifier(q: _Qual) -> QualStep:
    """(apply, apply-if-present, optional) for one qualifier. ``apply`` is charged 1 even
    when it fails; ``apply-if-present`` only when it finds a value."""
    test_only = q.test_only
    if q.kind == "const":
        const = q.key
        key_of: Fn = lambda a: const  # noqa: E731
    else:
        computed = _resolver(q.key) if q.kind == "attr" else q.key  # (attr: charged inside)

        def key_of(a: Activation) -> Any:
            # A computed index becomes a qualifier of its value's type (the planner
            # refuses constant ones the same way).
            key = computed(a)
            if type(key) not in QUALIFIER_TYPES:
                raise invalid_qualifier(key, a.device)
            return key

    def apply(a: Activation, obj: Any) -> Any:
        try:
            key = key_of(a)
            value = _presence(obj, key) if test_only else _qualify(obj, key)
        except EvalError:
            a.charge(1)
            raise
        a.charge(1)
        return value

    def if_present(a: Activation, obj: Any) -> tuple[bool, Any]:
        key = key_of(a)
        if test_only:
            found = _presence(obj, key)
            value: Any = True
        else:
            found, value = _qualify_if_present(obj, key)
        if found:
            a.charge(1)
        return found, value

    return apply, if_present, q.optional


# ---- qualification (cel-go's refQualify) ----------------------------------------------


def _list_position(key: Any) -> int:
    """cel-go's IndexOrError: an int, or a uint or double that converts to one losslessly."""
    t = type(key)
    if t is int:
        return key
    if t is UInt:
        if key <= INT64_MAX:
            return int(key)
        raise EvalError(f"unsupported index value {int(key)} in list")
    if t is float:
        if key.is_integer() and -(2.0**63) < key < 2.0**63:  # (both bounds excluded)
            return int(key)
        raise EvalError(f"unsupported index value {format_double(key)} in list")
    raise EvalError(f"unsupported index type '{_tn(key)}' in list")


def _tn(value: Any) -> str:
    from draspeed.cel.values import type_name

    return type_name(value)


def _qualify_if_present(obj: Any, key: Any) -> tuple[bool, Any]:
    t = type(obj)
    if t is DomainMap:  # DRA's attribute/capacity maps: an unknown domain is {}
        found, value = map_find(obj, key)
        return True, (value if found else _EMPTY)
    if t is dict:
        if type(key) is str:
            if key in obj:
                return True, obj[key]
            return False, None
        return map_find(obj, key)
    if t is list or t is tuple:
        i = _list_position(key)
        if 0 <= i < len(obj):
            return True, obj[i]
        return False, None
    if isinstance(obj, dict):
        return map_find(obj, key)
    return False, None


def _qualify(obj: Any, key: Any) -> Any:
    found, value = _qualify_if_present(obj, key)
    if found:
        return value
    if type(obj) is list or type(obj) is tuple:
        _list_position(key)  # (an index that is no int64 fails first)
        # The index as given, in Go's %v: a double as a double.
        raise EvalError(f"index out of bounds: {format_value(key)}")
    raise no_such_key(key)


def _presence(obj: Any, key: Any) -> bool:
    """``has(obj.key)``."""
    if type(obj) is Optional:
        if not obj.has:
            return False
        obj = obj.value
    return _qualify_if_present(obj, key)[0]


def _qualified_type_name(node: Select) -> str | None:
    """``net.IP``, ``google.protobuf.Timestamp``: a dotted name naming a type."""
    parts: list[str] = []
    current: Node = node
    while isinstance(current, Select) and not current.test_only and not current.optional:
        parts.append(current.field)
        current = current.operand
    if not isinstance(current, Ident):
        return None
    name = ".".join([current.name.lstrip("."), *reversed(parts)])
    return name if name in TYPE_IDENTS else None


def _type_value_name(name: str) -> str:
    t = TYPE_IDENTS[name]
    return str(t) if t.kind not in ("list", "map", "optional_type", "type") else t.kind


# ---- calls ---------------------------------------------------------------------------


_REGEX_FUNCTIONS = frozenset({"find", "findAll"})


def _matches_by_trait(impl: Callable[..., Any]) -> Callable[..., Any]:
    """``matches`` as cel-go binds it once for values that can match (strings): another
    receiver is refused by name. (A constant string pattern is precompiled upstream into
    a function that refuses without the name: ``impl`` as it is. A constant of another
    type, ``dyn(1)`` folded, is not: this.)"""

    def matches(s: Any, pattern: Any) -> Any:
        if type(s) is not str:
            raise refused_by_trait("matches", s)
        return impl(s, pattern)

    return matches


def _candidate_params(func: Function, node: Call, n: int) -> list[tuple[T.Type, ...]]:
    """The signatures a call may take at run time: the overloads the checker found
    (all of the function's, unchecked), of ``n`` arguments."""
    wanted = set(node.overloads)
    return [
        o.params for o in func.overloads if len(o.params) == n and (not wanted or o.id in wanted)
    ]


def _runtime_match(t: T.Type, value: Any) -> bool:
    """Whether a runtime value is of type ``t`` as cel-go's overload guards check it
    (by kind: any list for a list type, any map for a map type)."""
    kind = t.kind
    if kind in ("dyn", "param"):
        return True
    if kind == "object":
        return type_name(value) == t.name
    if kind == "null":
        return value is None
    if type_name(value) != kind:
        return False
    # A list or map is judged by its first element, or entry (cel-go's runtime check).
    if kind == "list" and t.params and len(value):
        return _runtime_match(t.params[0], value[0])
    if kind == "map" and len(t.params) == 2 and len(value):
        key = next(iter(value))
        return _runtime_match(t.params[0], key) and _runtime_match(t.params[1], value[key])
    return True


def _type_guarded(
    name: str, impl: Callable[..., Any], candidates: list[tuple[T.Type, ...]]
) -> Callable[..., Any]:
    """``impl`` behind cel-go's runtime type guard: arguments that no candidate
    signature takes fail with "no such overload: name(type, ...)"."""

    def guarded(*args: Any) -> Any:
        for params in candidates:
            if all(_runtime_match(t, v) for t, v in zip(params, args, strict=False)):
                return impl(*args)
        raise EvalError(f"no such overload: {name}({', '.join(type_name(v) for v in args)})")

    return guarded


def _call(
    name: str,
    overload: str,
    impl: Callable[..., Any],
    fns: list[Fn],
    binary: bool,
    strict: bool = True,
) -> Fn:
    """A call as cel-go's evalUnary/evalBinary (every argument evaluated, the first
    error is the result) or evalVarArgs (stops at the first erroring argument, and is
    then not charged). Charged before running: a call over the limit does no work.
    A non-``strict`` unary or binary call hands errors to ``impl`` as values."""
    constant = C.has_constant_cost(name, overload)
    if len(fns) == 1:
        (f0,) = fns

        def call1(a: Activation) -> Any:
            try:
                x = f0(a)
            except EvalError as exc:
                a.charge(1 if constant else C.call_cost(name, overload, (exc,)))
                if strict:
                    raise exc from None
                return impl(exc)
            a.charge(1 if constant else C.call_cost(name, overload, (x,)))
            return impl(x)

        return call1
    if len(fns) == 2 and binary:
        f0, f1 = fns

        def call2(a: Activation) -> Any:
            err: EvalError | None = None
            try:
                x = f0(a)
            except EvalError as exc:
                x = err = exc
            try:
                y = f1(a)
            except EvalError as exc:
                y = exc
                err = err or exc
            a.charge(1 if constant else C.call_cost(name, overload, (x, y)))
            if err is not None and strict:
                raise err
            return impl(x, y)

        return call2
    if not fns:

        def call0(a: Activation) -> Any:
            a.charge(1 if constant else C.call_cost(name, overload, ()))
            return impl()

        return call0

    def call_n(a: Activation) -> Any:
        args = []
        for f in fns:
            args.append(f(a))  # an error ends the call before it is charged
        a.charge(1 if constant else C.call_cost(name, overload, args))
        return impl(*args)

    return call_n


# ---- comprehensions ------------------------------------------------------------------
#
# Per iteration, cel-go evaluates the loop condition, then the step; after the last
# iteration (or when the condition is false) the result. The costs below are those of
# the macro expansions (parser/macro.go, ext/comprehensions.go): reading the
# accumulator or an iteration variable costs 1, @not_strictly_false / ! / + / == / the
# map insertion 1 each, building ``[elem]`` 10 (unless elem is a constant).


def _items(v: Any) -> Any:
    t = type(v)
    if t is list or t is tuple or isinstance(v, dict):
        return v
    raise _not_iterable(v, two=False)


def _pairs(v: Any) -> Any:
    t = type(v)
    if t is list or t is tuple:
        return enumerate(v)
    if isinstance(v, dict):
        return v.items()
    raise _not_iterable(v, two=True)


def _not_iterable(v: Any, two: bool) -> EvalError:
    """cel-go's fold error, naming the Go type of the range value."""
    name = go_type_name(v)
    if two:
        return EvalError(f"unsupported comprehension range type: {name}")
    return EvalError(f"got '{name}', expected iterable type")


def _tick(deadline: float) -> None:
    if time.monotonic() > deadline:
        raise AllocationTimeout()


def _bind_vars(a: Activation, s1: int, s2: int, item: Any) -> None:
    if s2 < 0:
        a.slots[s1] = item
    else:
        a.slots[s1], a.slots[s2] = item


Builder = Callable[[Fn, Fn | None, Fn | None, int, int, int], Fn]


def _quantifier(decisive: bool) -> Builder:
    """all (decisive False) and exists (decisive True), one or two variables.

    all: condition ``@not_strictly_false(@result)`` (2), step ``@result && p`` (1 + p);
    exists: condition ``@not_strictly_false(!@result)`` (3), step ``@result || p``."""
    cond_cost = 3 if decisive else 2

    def build(rng: Fn, pred: Fn | None, _t: Fn | None, s1: int, s2: int, _e: int) -> Fn:
        assert pred is not None

        def run(a: Activation) -> Any:
            items = _pairs(rng(a)) if s2 >= 0 else _items(rng(a))
            deadline = a.deadline
            accu: Any = not decisive  # True for all, False for exists; or an EvalError
            for item in items:
                a.charge(cond_cost)
                if accu is decisive:
                    break
                _bind_vars(a, s1, s2, item)
                a.charge(1)
                try:
                    v = pred(a)
                except EvalError as exc:
                    v = exc
                if v is decisive:
                    accu = decisive
                elif accu is not decisive and type(accu) is bool and type(v) is not bool:
                    accu = v if isinstance(v, EvalError) else no_such_overload()
                if deadline is not None:
                    _tick(deadline)
            a.charge(1)
            if type(accu) is bool:
                return accu
            raise accu

        return run

    return build


def _exists_one(rng: Fn, pred: Fn | None, _t: Fn | None, s1: int, s2: int, _e: int) -> Fn:
    """Step ``p ? @result + 1 : @result`` (p, plus 2 when p is true); result
    ``@result == 1`` (2). Runs over every element; the last failing p is the error."""
    assert pred is not None

    def run(a: Activation) -> Any:
        items = _pairs(rng(a)) if s2 >= 0 else _items(rng(a))
        deadline = a.deadline
        accu: Any = 0
        for item in items:
            _bind_vars(a, s1, s2, item)
            try:
                v = pred(a)
            except EvalError as exc:
                v = exc
            if v is True:
                a.charge(2)
                if type(accu) is int:
                    accu += 1
            elif v is not False:
                accu = v if isinstance(v, EvalError) else no_such_overload()
            if deadline is not None:
                _tick(deadline)
        a.charge(2)
        if type(accu) is int:
            return accu == 1
        raise accu

    return run


def _map_build(
    rng: Fn, pred: Fn | None, trans: Fn | None, s1: int, s2: int, element_cost: int
) -> Fn:
    """map / transformList: step ``@result + [t]`` (2 + building [t]), behind
    ``f ? ... : @result`` when filtered (a false filter costs nothing more)."""
    assert trans is not None
    step_cost = 2 + element_cost

    def run(a: Activation) -> Any:
        source = rng(a)
        items = _pairs(source) if s2 >= 0 else _items(source)
        return _collect(a, items, s1, s2, pred, trans, step_cost)

    return run


def _collect(
    a: Activation, items: Any, s1: int, s2: int, pred: Fn | None, trans: Fn, step_cost: int
) -> list[Any]:
    """The loop of map/transformList. The accumulator keeps its first error; a failing
    filter replaces it (``f ? ... : @result`` yields the condition's error)."""
    deadline = a.deadline
    out: list[Any] = []
    accu: EvalError | None = None
    for item in items:
        _bind_vars(a, s1, s2, item)
        if pred is not None:
            try:
                keep = pred(a)
            except EvalError as exc:
                accu = exc
                continue
            if keep is False:
                continue
            if keep is not True:
                accu = no_such_overload()
                continue
        try:
            value = trans(a)
        except EvalError as exc:
            a.charge(step_cost)
            accu = accu or exc
            continue
        a.charge(step_cost)
        if accu is None:
            out.append(value)
        if deadline is not None:
            _tick(deadline)
    a.charge(1)
    if accu is not None:
        raise accu
    return out


def _filter_build(rng: Fn, pred: Fn | None, _t: Fn | None, s1: int, s2: int, _e: int) -> Fn:
    """filter: step ``f ? @result + [x] : @result`` (f, plus 13 when it keeps x)."""
    assert pred is not None

    def run(a: Activation) -> Any:
        deadline = a.deadline
        out: list[Any] = []
        accu: EvalError | None = None
        source = rng(a)
        for item in _items(source):
            a.slots[s1] = item
            try:
                keep = pred(a)
            except EvalError as exc:
                accu = exc
                continue
            if keep is True:
                a.charge(13)
                if accu is None:
                    out.append(item)
            elif keep is not False:
                accu = no_such_overload()
            if deadline is not None:
                _tick(deadline)
        a.charge(1)
        if accu is not None:
            raise accu
        return out

    return run


def _transform_map(entry: bool) -> Builder:
    """transformMap: step ``cel.@mapInsert(@result, k, t)`` (3 + t; a variadic call,
    so 1 once the accumulator holds an error); transformMapEntry: step
    ``cel.@mapInsert(@result, t)`` (2 + t)."""

    def build(rng: Fn, pred: Fn | None, trans: Fn | None, s1: int, s2: int, _e: int) -> Fn:
        assert trans is not None

        def run(a: Activation) -> Any:
            deadline = a.deadline
            out: dict[Any, Any] = {}
            accu: EvalError | None = None
            for k, v in _pairs(rng(a)):
                a.slots[s1] = k
                a.slots[s2] = v
                if pred is not None:
                    try:
                        keep = pred(a)
                    except EvalError as exc:
                        accu = exc
                        continue
                    if keep is False:
                        continue
                    if keep is not True:
                        accu = no_such_overload()
                        continue
                if not entry and accu is not None:
                    a.charge(1)  # reads the failed accumulator, stops
                    continue
                try:
                    result = trans(a)
                except EvalError as exc:
                    a.charge(2 if entry else 3)
                    accu = accu or exc
                    continue
                a.charge(2 if entry else 3)
                if accu is not None:
                    continue
                if not entry:
                    out = map_insert(out, k, result)
                elif not isinstance(result, dict):
                    accu = no_such_overload()
                else:
                    for rk, rv in result.items():
                        if map_find(out, rk)[0]:
                            accu = EvalError(
                                f"insert failed: key {format_value(rk)} already exists"
                            )
                            break
                        out = map_insert(out, rk, rv)
                if deadline is not None:
                    _tick(deadline)
            a.charge(1)
            if accu is not None:
                raise accu
            return out

        return run

    return build


_COMPREHENSIONS: dict[str, Builder] = {
    "all": _quantifier(False),
    "exists": _quantifier(True),
    "all2": _quantifier(False),
    "exists2": _quantifier(True),
    "exists_one": _exists_one,
    "exists_one2": _exists_one,
    "map": _map_build,
    "filter": _filter_build,
    "transformList": _map_build,
    "transformMap": _transform_map(False),
    "transformMapEntry": _transform_map(True),
}

# cel-go folds these conversions of a constant when planning (IsTypeConversionFunction).
_CONVERSIONS = frozenset(
    {"bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp", "type", "uint"}
)

# Pure functions of their (literal) arguments, evaluated once at compile time.
_FOLDABLE = frozenset(
    {"quantity", "isQuantity", "semver", "isSemver", "ip", "isIP", "cidr", "isCIDR", "url", "isURL"}
)

_PRIMITIVES = frozenset({bool, int, UInt, float, str})
_MEMBER_KINDS = {bool: "bool", int: "int", UInt: "uint", float: "double", str: "string"}


def _member_key(value: Any) -> tuple[str, Any] | None:
    """A primitive value as a key of cel-go's membership set (its type and value; a
    NaN is no key's equal), or None for any other value."""
    kind = _MEMBER_KINDS.get(type(value))
    if kind is None:
        return None
    if kind == "double" and math.isnan(value):
        return ("nan", None)  # (in no set)
    return (kind, int(value) if kind == "uint" else value)


def _set_keys(values: Sequence[Any]) -> frozenset[tuple[str, Any]]:
    """The keys of cel-go's set for ``x in [constants]``: each constant, and each
    number as the other number types too, converted as cel-go converts for the set --
    a double to an int or uint only when that is exact (integral, within the type's
    open range), an int or uint to a double always (rounded), an int to a uint when not
    negative and a uint to an int when within its range. So an int is found by a
    double only when they are exactly equal, while ``==`` rounds the int."""
    keys: set[tuple[str, Any]] = set()
    for value in values:
        key = _member_key(value)
        if key is None or key[0] == "nan":
            continue
        keys.add(key)
        kind = key[0]
        if kind == "double":
            whole = math.isfinite(value) and value == math.trunc(value)
            if whole and -TWO_63 < value < TWO_63:
                keys.add(("int", int(value)))
            if whole and 0 <= value < TWO_64:
                keys.add(("uint", int(value)))
        elif kind == "int":
            keys.add(("double", float(value)))
            if value >= 0:
                keys.add(("uint", value))
        elif kind == "uint":
            keys.add(("double", float(value)))
            if value <= INT64_MAX:
                keys.add(("int", int(value)))
    return frozenset(keys)


_ORDERINGS = frozenset({"_<_", "_<=_", "_>_", "_>=_"})

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
