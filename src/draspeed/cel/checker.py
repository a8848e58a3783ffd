"""Type-check a parsed selector the way cel-go checks it in the Kubernetes environment.

Types are inferred as cel-go's checker infers them: one substitution of type parameters
for the whole expression (so ``[[], [1]]`` is ``list(list(int))``), overloads resolved in
declaration order with fresh type variables, literals whose elements do not unify typed
``dyn`` (Kubernetes' validator then rejects them, see :mod:`draspeed.cel.validators`).
Reports undeclared references, overloads that do not resolve, undefined fields and bad
comprehension ranges, and rewrites namespaced calls (``optional.of``, ``sets.contains``,
``lists.range``, ``strings.quote``...) into global calls. The result is the expression's
output type; the caller checks it is bool or dyn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from draspeed.cel import types as T
from draspeed.cel.ast import (
    Bind,
    Call,
    Comprehension,
    Const,
    CreateMessage,
    Ident,
    Index,
    ListLit,
    Logical,
    MapLit,
    Node,
    Select,
    Ternary,
)
from draspeed.cel.functions import FUNCTIONS, Function, Overload
from draspeed.cel.parser import ErrorList

DEVICE_FIELDS: dict[str, T.Type] = {
    "driver": T.STRING,
    "allowMultipleAllocations": T.BOOL,
    "attributes": T.map_of(T.STRING, T.map_of(T.STRING, T.DYN)),
    "capacity": T.map_of(T.STRING, T.map_of(T.STRING, T.QUANTITY)),
}

OBJECT_FIELDS: dict[str, dict[str, T.Type]] = {"kubernetes.DRADevice": DEVICE_FIELDS}

VARIABLES: dict[str, T.Type] = {"device": T.DEVICE}

# Identifiers that name types (``type(x) == int``): cel-go's standard type identifiers,
# optional_type (OptionalTypes) and the two types Kubernetes registers (IP and CIDR).
# Not dyn, and not kubernetes.Quantity, Semver, URL or NamedFormat: upstream reports
# "undeclared reference" for those.
TYPE_IDENTS: dict[str, T.Type] = {
    "int": T.INT,
    "uint": T.UINT,
    "double": T.DOUBLE,
    "bool": T.BOOL,
    "string": T.STRING,
    "bytes": T.BYTES,
    "list": T.list_of(T.DYN),
    "map": T.map_of(T.DYN, T.DYN),
    "null_type": T.NULL,
    "type": T.Type("type"),
    "optional_type": T.Type("optional_type"),  # cel-go names it without a parameter
    "google.protobuf.Timestamp": T.TIMESTAMP,
    "google.protobuf.Duration": T.DURATION,
    "google.protobuf.Empty": T.Type("object", name="google.protobuf.Empty"),
    "net.IP": T.IP,
    "net.CIDR": T.CIDR,
}

# Two more names cel-go's checker takes as types (its type provider knows them by these
# short names too) but its planner cannot find: an expression that uses one as a value
# passes the checker and then fails to build ("reference to undefined type: duration").
# So are google.protobuf's Any, JSON and wrapper types (named in full when refused).
UNPLANNED_TYPE_IDENTS: dict[str, T.Type] = {
    "timestamp": T.TIMESTAMP,
    "duration": T.DURATION,
    "google.protobuf.Any": T.Type("any"),
    "google.protobuf.Value": T.DYN,
    "google.protobuf.Struct": T.map_of(T.STRING, T.DYN),
    "google.protobuf.ListValue": T.list_of(T.DYN),
    **{
        f"google.protobuf.{name}Value": T.Type("wrapper", (value,))
        for name, value in (
            ("Bool", T.BOOL),
            ("Bytes", T.BYTES),
            ("Double", T.DOUBLE),
            ("Float", T.DOUBLE),
            ("Int32", T.INT),
            ("Int64", T.INT),
            ("String", T.STRING),
            ("UInt32", T.UINT),
            ("UInt64", T.UINT),
        )
    },
}

# Type names cel-go constructs as protobuf messages, besides google.protobuf's own.
_WELL_KNOWN_MESSAGES = frozenset({"list", "null_type"})

_CONST_TYPES = {
    "int": T.INT,
    "uint": T.UINT,
    "double": T.DOUBLE,
    "string": T.STRING,
    "bytes": T.BYTES,
    "bool": T.BOOL,
    "null": T.NULL,
}


def _pseudo(name: str, *signatures: str) -> Function:
    """Operators the checker resolves like functions (``_[_]``, ``_?_:_``...)."""
    fn = Function(name)
    for sig in signatures:
        params, _, result = sig.partition("->")
        fn.overloads.append(
            Overload(
                tuple(T.parse_type(p) for p in T.split_top_level(params)),
                T.parse_type(result),
                False,
            )
        )
    return fn


_INDEX = _pseudo(
    "_[_]",
    "list(A), int -> A",
    "map(A, B), A -> B",
    "opt(list(A)), int -> opt(A)",
    "opt(map(A, B)), A -> opt(B)",
)
_OPT_INDEX = _pseudo(
    "_[?_]",
    "list(A), int -> opt(A)",
    "opt(list(A)), int -> opt(A)",
    "map(A, B), A -> opt(B)",
    "opt(map(A, B)), A -> opt(B)",
)
_CONDITIONAL = _pseudo("_?_:_", "bool, A, A -> A")


@dataclass(slots=True)
class CheckResult:
    """The output type, and every node's type (by ``id(node)``), free parameters as dyn."""

    output: T.Type
    types: dict[int, T.Type] = field(default_factory=dict)
    # Identifiers that name an UNPLANNED_TYPE_IDENTS type, in the order checked.
    undefined_types: list[str] = field(default_factory=list)


# Object types of Kubernetes' CEL libraries that have no fields (measured with the
# upstream allocator: selecting a field of one is a failed resolution, not a type error).
_FIELDLESS_OBJECTS = frozenset(
    {"kubernetes.Quantity", "kubernetes.Semver", "kubernetes.NamedFormat", "kubernetes.URL"}
)


class _Implicit(NamedTuple):
    """Type variables cel-go's checker makes while checking the parts of a macro's
    expansion draspeed does not build, by where they fall among the user's parts:
    an empty accumulator literal (one for a list, two for a map), the loop step's
    operators (``+`` and ``_?_:_`` one each, ``cel.@mapInsert`` four: every overload
    is instantiated), exists_one's final ``==``; sortBy is a bind over an empty list."""

    before_range: int = 0
    accumulator: int = 0
    step: int = 0
    result: int = 0


# (kind, with a filter predicate) -> implicit variables; all and exists make none.
_IMPLICIT_VARS: dict[tuple[str, bool], _Implicit] = {
    **{(k, p): _Implicit() for k in ("all", "exists", "all2", "exists2") for p in (False, True)},
    **{(k, True): _Implicit(step=2, result=1) for k in ("exists_one", "exists_one2")},
    ("map", False): _Implicit(accumulator=1, step=1),
    ("map", True): _Implicit(accumulator=1, step=2),
    ("filter", True): _Implicit(accumulator=1, step=2),
    ("transformList", False): _Implicit(accumulator=1, step=1),
    ("transformList", True): _Implicit(accumulator=1, step=2),
    ("transformMap", False): _Implicit(accumulator=2, step=4),
    ("transformMap", True): _Implicit(accumulator=2, step=5),
    ("transformMapEntry", False): _Implicit(accumulator=2, step=4),
    ("transformMapEntry", True): _Implicit(accumulator=2, step=5),
    ("sortBy", False): _Implicit(before_range=1, accumulator=1, step=1),
}


def _collect_params(t: T.Type, names: dict[str, None]) -> None:
    """The type parameters of ``t`` in the order they are met, depth first."""
    if t.kind == "param":
        names.setdefault(t.name, None)
    for p in t.params:
        _collect_params(p, names)


class Checker:
    def __init__(self, errors: ErrorList, variables: dict[str, T.Type] | None = None) -> None:
        self.errors = errors
        self.variables = VARIABLES if variables is None else variables
        self.types: dict[int, T.Type] = {}
        self.mapping: T.Mapping = {}
        self._scopes: list[dict[str, T.Type]] = []
        self._var_count = 0
        self._sums: list[Call] = []
        self._undefined_types: list[str] = []

    def _skip_vars(self, count: int) -> None:
        """Type variables cel-go makes for parts of a macro's expansion that draspeed
        does not build: later free variables are named after the count (``_var5``)."""
        self._var_count += count

    def _new_var(self) -> T.Type:
        self._var_count += 1
        return T.param(f"_var{self._var_count - 1}")

    # ---- entry -------------------------------------------------------------------

    def check(self, root: Node) -> CheckResult:
        out = self._check(root)
        final = {key: T.substitute(self.mapping, t, True) for key, t in self.types.items()}
        for call in self._sums:
            assert call.target is not None
            receiver = final.get(id(call.target), T.DYN)
            if receiver.kind == "list":
                call.element_type = str(receiver.params[0])
        return CheckResult(T.substitute(self.mapping, out, True), final, self._undefined_types)

    def _set(self, node: Node, t: T.Type) -> T.Type:
        self.types[id(node)] = t
        return t

    def _check(self, node: Node) -> T.Type:
        if isinstance(node, Const):
            return self._set(node, _CONST_TYPES[node.kind])
        if isinstance(node, Ident):
            return self._set(node, self._ident(node))
        if isinstance(node, Select):
            return self._set(node, self._select(node))
        if isinstance(node, Index):
            return self._set(node, self._index(node))
        if isinstance(node, Call):
            return self._set(node, self._call(node))
        if isinstance(node, Logical):
            return self._set(node, self._logical(node))
        if isinstance(node, Ternary):
            return self._set(node, self._ternary(node))
        if isinstance(node, ListLit):
            return self._set(node, self._list(node))
        if isinstance(node, MapLit):
            return self._set(node, self._map(node))
        if isinstance(node, Comprehension):
            return self._set(node, self._comprehension(node))
        if isinstance(node, Bind):
            return self._set(node, self._bind(node))
        if isinstance(node, CreateMessage):
            return self._set(node, self._create_message(node))
        raise TypeError(f"unknown CEL node {type(node).__name__}")

    # ---- names -------------------------------------------------------------------

    def is_local(self, name: str) -> bool:
        return any(name in scope for scope in self._scopes)

    def lookup_var(self, name: str) -> T.Type | None:
        """A name's type: a local (innermost first), a declared variable, a type name.
        A leading dot skips the locals."""
        if name.startswith("."):
            name = name[1:]
        else:
            for scope in reversed(self._scopes):
                if name in scope:
                    return scope[name]
        if name in self.variables:
            return self.variables[name]
        return self._type_name(name)

    def _type_name(self, name: str) -> T.Type | None:
        """The type of a type name used as a value, or None."""
        if name in TYPE_IDENTS:
            return T.type_of(TYPE_IDENTS[name])
        if name in UNPLANNED_TYPE_IDENTS:
            self._undefined_types.append(name)
            return T.type_of(UNPLANNED_TYPE_IDENTS[name])
        return None

    def _ident(self, node: Ident) -> T.Type:
        t = self.lookup_var(node.name)
        if t is None:
            self.errors.add(node.pos, f"undeclared reference to '{node.name}' (in container '')")
            return T.ERROR
        if self.is_local(node.name) and T.substitute(self.mapping, t, False).kind == "type":
            # cel-go's planner takes every checked identifier whose type is a type for a
            # type's name: a macro or bind variable holding a type is read as the type
            # its name names, and fails the program when no type has that name.
            if node.name in TYPE_IDENTS:
                node.as_type = True
            else:
                self._undefined_types.append(node.name)
        return t

    def _create_message(self, node: CreateMessage) -> T.Type:
        """``Name{...}`` as cel-go checks it against the DRA environment, which has no
        message types: an unknown name stops at the name (the fields are not checked);
        a type that is not a message is said so, and then each field is unknown."""
        name = node.type_name[1:] if node.type_name.startswith(".") else node.type_name
        if name in _WELL_KNOWN_MESSAGES or name.startswith("google.protobuf."):
            # cel-go builds these (wrapper types, list and null as protobuf values).
            self.errors.add(node.pos, f"unsupported message construction: '{name}' (draspeed)")
            return T.ERROR
        if name not in TYPE_IDENTS:
            self.errors.add(
                node.pos, f"undeclared reference to '{node.type_name}' (in container '')"
            )
            return T.ERROR
        self.errors.add(node.pos, f"'{name}' is not a message type")
        for field_name, value, optional, at in node.fields:
            value_type = self._check(value)
            if "." in name:  # a library's opaque type: no struct type to look a field up in
                self.errors.add(at, f"unexpected failed resolution of '{name}'")
            else:
                self.errors.add(at, f"undefined field '{field_name}'")
            if optional and value_type.kind not in ("optional_type", "error"):
                self.errors.add(
                    value.pos,
                    f"expected type 'optional_type({value_type})' but found '{value_type}'",
                )
        return T.ERROR

    # ---- selection ---------------------------------------------------------------

    def _select(self, node: Select) -> T.Type:
        if not node.test_only and not node.optional:
            qualified = qualified_name(node)
            if qualified is not None and not self.is_local(qualified.split(".", 1)[0]):
                name = qualified.lstrip(".")
                if name in self.variables:
                    return self.variables[name]
                found = self._type_name(name)
                if found is not None:
                    return found
        result = self._select_field(node, node.operand, node.field, node.optional)
        if node.test_only:
            return T.BOOL
        return T.substitute(self.mapping, result, False)

    def _select_field(self, node: Node, operand: Node, name: str, optional: bool) -> T.Type:
        operand_type = T.substitute(self.mapping, self._check(operand), False)
        target, is_opt = _unwrap_optional(operand_type)
        if target.kind == "map":
            result = target.params[1]
        elif target.kind == "object" and target.name in OBJECT_FIELDS:
            fields = OBJECT_FIELDS[target.name]
            if name in fields:
                result = fields[name]
            else:
                self.errors.add(node.pos, f"undefined field '{name}'")
                result = T.ERROR
        elif target.kind == "param":
            self._assign(T.DYN, target)
            result = T.DYN
        elif target.kind in ("dyn", "error"):
            result = T.DYN
        elif target.kind == "object" and target.name in _FIELDLESS_OBJECTS:
            # Kubernetes declares these as object types without fields: cel-go looks the
            # field up and fails there.
            self.errors.add(node.pos, f"unexpected failed resolution of '{target.name}'")
            result = T.ERROR
        else:
            self.errors.add(
                node.pos, f"type '{T.format_cel_type(target)}' does not support field selection"
            )
            result = T.DYN
        if is_opt or optional:
            return T.optional_of(result)
        return result

    def _index(self, node: Index) -> T.Type:
        arg_types = [self._check(node.operand), self._check(node.key)]
        fn = _OPT_INDEX if node.optional else _INDEX
        result, _ = self._resolve(node, fn, arg_types, False)
        return result if result is not None else T.ERROR

    # ---- calls -------------------------------------------------------------------

    def _call(self, node: Call) -> T.Type:
        if node.target is not None:
            prefix = qualified_name(node.target)
            if prefix is not None and not prefix.startswith("."):
                qualified = f"{prefix}.{node.function}"
                root = prefix.split(".", 1)[0]
                if qualified in FUNCTIONS and self.lookup_var(root) is None:
                    node.function = qualified
                    node.target = None
        # cel-go checks the arguments before the receiver: the order fresh type variables
        # are numbered in, which error texts show (``optional_type(_var0)``).
        arg_types = [self._check(a) for a in node.args]
        target_type = self._check(node.target) if node.target is not None else None
        fn = FUNCTIONS.get(node.function.lstrip("."))
        if fn is None:
            self.errors.add(
                node.pos, f"undeclared reference to '{node.function}' (in container '')"
            )
            return T.ERROR
        all_types = ([target_type] if target_type is not None else []) + arg_types
        result, node.overloads = self._resolve(node, fn, all_types, node.target is not None)
        if fn.name == "sum" and node.target is not None:
            self._sums.append(node)
        return result if result is not None else T.ERROR

    def _assign(self, t1: T.Type, t2: T.Type) -> bool:
        """Is ``t1`` assignable to ``t2``? Keeps the bindings that makes so."""
        trial = T.is_assignable(self.mapping, t1, t2)
        if trial is None:
            return False
        self.mapping = trial
        return True

    def _instantiate(self, overload: Overload) -> tuple[list[T.Type], T.Type]:
        """The overload's signature with fresh type variables for its parameters."""
        names: dict[str, None] = {}
        for t in (overload.result, *overload.params):
            _collect_params(t, names)
        if not names:
            return list(overload.params), overload.result
        # cel-go numbers them in its map's iteration order, which Go randomises: the
        # order they are first met in (the result, then the arguments) is what it
        # yields most often (7 times in 8 for two parameters).
        fresh = {name: self._new_var() for name in names}
        params = [T.substitute(fresh, p, False) for p in overload.params]
        return params, T.substitute(fresh, overload.result, False)

    def _resolve(
        self, node: Node, fn: Function, arg_types: list[T.Type], member: bool
    ) -> tuple[T.Type | None, tuple[str, ...]]:
        """cel-go's overload resolution: every matching overload in turn binds its type
        variables; the first gives the result type, a differing later one makes it dyn.
        Also the ids of the matching overloads (cel-go's reference map)."""
        result: T.Type | None = None
        matched: list[str] = []
        for overload in fn.overloads:
            if overload.member != member or len(overload.params) != len(arg_types):
                continue
            params, result_type = self._instantiate(overload)
            trial = T.is_assignable_list(self.mapping, arg_types, params)
            if trial is None:
                continue
            self.mapping = trial
            matched.append(overload.id)
            rt = T.substitute(self.mapping, result_type, False)
            if result is None:
                result = rt
            elif not T.is_dyn(result) and rt != result:
                result = T.DYN
        if result is None:
            self._no_overload(node, fn.name, arg_types, member)
        return result, tuple(matched)

    def _no_overload(self, node: Node, name: str, arg_types: list[T.Type], member: bool) -> None:
        shown = [T.format_cel_type(T.substitute(self.mapping, t, True)) for t in arg_types]
        joined = ", ".join(shown[1:] if member else shown)
        signature = f"{shown[0]}.({joined})" if member else f"({joined})"
        self.errors.add(
            node.pos, f"found no matching overload for '{name}' applied to '{signature}'"
        )

    # ---- logic and conditionals --------------------------------------------------

    def _logical(self, node: Logical) -> T.Type:
        ok = True
        for operand in node.operands:
            t = self._check(operand)
            if not self._assign(t, T.BOOL):
                self.errors.add(
                    operand.pos, f"expected type 'bool' but found '{T.format_cel_type(t)}'"
                )
                ok = False
        return T.BOOL if ok else T.ERROR

    def _ternary(self, node: Ternary) -> T.Type:
        arg_types = [self._check(node.cond), self._check(node.then), self._check(node.other)]
        result, _ = self._resolve(node, _CONDITIONAL, arg_types, False)
        return result if result is not None else T.ERROR

    # ---- literals ----------------------------------------------------------------

    def _join(self, previous: T.Type | None, current: T.Type) -> T.Type:
        """cel-go's joinTypes for literal elements: the more general of two types that
        unify, dyn when they do not (the homogeneity validator reports that later)."""
        if previous is None:
            return current
        if self._assign(previous, current):
            return T.most_general(previous, current)
        return T.DYN

    def _unwrap_optional_entry(self, node: Node, t: T.Type) -> T.Type:
        inner, is_opt = _unwrap_optional(t)
        if not is_opt and not T.is_dyn(inner):
            shown = T.format_cel_type(inner)
            self.errors.add(node.pos, f"expected type 'optional_type({shown})' but found '{shown}'")
        return inner

    def _list(self, node: ListLit) -> T.Type:
        elem: T.Type | None = None
        for i, e in enumerate(node.elements):
            t = self._check(e)
            if i in node.optional_indices:
                t = self._unwrap_optional_entry(e, t)
            elem = self._join(elem, t)
        return T.list_of(elem if elem is not None else self._new_var())

    def _map(self, node: MapLit) -> T.Type:
        key_t: T.Type | None = None
        val_t: T.Type | None = None
        for k, v, optional in node.entries:
            key_t = self._join(key_t, self._check(k))
            vt = self._check(v)
            if optional:
                vt = self._unwrap_optional_entry(v, vt)
            val_t = self._join(val_t, vt)
        if key_t is None or val_t is None:
            return T.map_of(self._new_var(), self._new_var())
        return T.map_of(key_t, val_t)

    # ---- comprehensions and bindings ---------------------------------------------

    def _comprehension(self, node: Comprehension) -> T.Type:
        implicit = _IMPLICIT_VARS[node.kind, node.predicate is not None]
        self._skip_vars(implicit.before_range)
        range_t = T.substitute(self.mapping, self._check(node.range), False)
        self._skip_vars(implicit.accumulator)
        two = node.var2 is not None
        if range_t.kind == "list":
            var_t, var2_t = (T.INT, range_t.params[0]) if two else (range_t.params[0], T.DYN)
        elif range_t.kind == "map":
            var_t, var2_t = range_t.params[0], range_t.params[1]
        elif range_t.kind in ("dyn", "error", "param"):
            self._assign(T.DYN, range_t)
            var_t, var2_t = T.DYN, T.DYN
        else:
            # sortBy's comprehension ranges over its bound input, placed at the call.
            where = node.pos if node.kind == "sortBy" else node.range.pos
            self.errors.add(
                where,
                f"expression of type '{T.format_cel_type(range_t)}' cannot be range of a "
                "comprehension (must be list, map, or dynamic)",
            )
            var_t, var2_t = T.ERROR, T.ERROR
        if node.kind in ("transformMap", "transformMapEntry") and range_t.kind == "list":
            var_t, var2_t = T.INT, range_t.params[0]
        scope: dict[str, T.Type] = {node.var: var_t}
        if node.var2 is not None:
            scope[node.var2] = var2_t
        self._scopes.append(scope)
        try:
            pred_t = self._check(node.predicate) if node.predicate is not None else None
            trans_t = self._check(node.transform) if node.transform is not None else None
        finally:
            self._scopes.pop()
        if node.var.startswith(".") and node.kind in ("filter", "transformMap"):
            # The loop step reads the variable back by name (filter the user's own
            # identifier, transformMap a new one at the call): a leading '.' skips the
            # locals, so it is an undeclared reference.
            where = node.var_pos if node.kind == "filter" else node.pos
            self.errors.add(where, f"undeclared reference to '{node.var}' (in container '')")
        self._skip_vars(implicit.step + implicit.result)
        kind = node.kind
        if pred_t is not None and node.predicate is not None:
            self._check_predicate(node, pred_t, trans_t, var_t, range_t)
        if kind in ("all", "exists", "exists_one", "all2", "exists2", "exists_one2"):
            return T.BOOL
        if kind in ("map", "transformList"):
            return T.list_of(trans_t or T.DYN)
        if kind == "filter":
            return T.list_of(var_t)
        if kind == "transformMap":
            key = var_t if range_t.kind in ("list", "map") else T.DYN
            return T.map_of(key, trans_t or T.DYN)
        if kind == "transformMapEntry":
            if trans_t is not None and trans_t.kind == "map":
                return trans_t
            if trans_t is not None and not T.is_dyn_like(trans_t):
                shown = T.format_cel_type(trans_t)
                self.errors.add(node.pos, f"expected type 'map(dyn, dyn)' but found '{shown}'")
            return T.map_of(T.DYN, T.DYN)
        if kind == "sortBy":
            # cel-go expands sortBy into ``input.@sortByAssociatedKeys(input.map(v, key))``.
            keys = T.list_of(trans_t or T.DYN)
            fn = FUNCTIONS["@sortByAssociatedKeys"]
            found, node.overloads = self._resolve(node, fn, [range_t, keys], True)
            return range_t if found is not None else T.ERROR
        raise ValueError(f"unknown comprehension {kind}")

    def _check_predicate(
        self,
        node: Comprehension,
        pred_t: T.Type,
        trans_t: T.Type | None,
        var_t: T.Type,
        range_t: T.Type,
    ) -> None:
        """The predicate is a bool, reported as cel-go's expanded macro reports it: in
        ``accu && p`` / ``accu || p`` for all/exists, in a conditional otherwise."""
        assert node.predicate is not None
        if self._assign(pred_t, T.BOOL):
            return
        kind = node.kind
        if kind in ("all", "exists", "all2", "exists2"):
            shown = T.format_cel_type(pred_t)
            self.errors.add(node.predicate.pos, f"expected type 'bool' but found '{shown}'")
            return
        if kind in ("exists_one", "exists_one2"):
            branches = [T.INT, T.INT]
        elif kind == "filter":
            branches = [T.list_of(var_t)] * 2
        elif kind in ("map", "transformList"):
            branches = [T.list_of(trans_t or T.DYN)] * 2
        elif kind == "transformMap":
            key = var_t if range_t.kind in ("list", "map") else T.DYN
            branches = [T.map_of(key, trans_t or T.DYN)] * 2
        else:
            branches = [T.map_of(T.DYN, T.DYN)] * 2
        # The expanded macro's conditional is reported at the macro call.
        self._no_overload(node, "_?_:_", [pred_t, *branches], False)

    def _bind(self, node: Bind) -> T.Type:
        self._skip_vars(1)  # cel-go's bind ranges over an empty list literal
        init_t = self._check(node.init)
        if node.var.startswith("."):
            # cel-go's loop step reads the variable back by name: a leading '.' skips
            # the locals, so the name is an undeclared reference (at the call).
            self.errors.add(node.pos, f"undeclared reference to '{node.var}' (in container '')")
        self._scopes.append({node.var: init_t})
        try:
            return self._check(node.body)
        finally:
            self._scopes.pop()


def qualified_name(node: Node) -> str | None:
    """``a.b.c`` for a chain of plain field selections on an identifier, else None."""
    parts: list[str] = []
    while isinstance(node, Select) and not node.test_only and not node.optional:
        parts.append(node.field)
        node = node.operand
    if isinstance(node, Ident):
        parts.append(node.name)
        return ".".join(reversed(parts))
    return None


def _unwrap_optional(t: T.Type) -> tuple[T.Type, bool]:
    if t.kind == "optional_type":
        return t.params[0], True
    return t, False


def check(root: Node, errors: ErrorList, variables: dict[str, T.Type] | None = None) -> CheckResult:
    """Type-check ``root`` against the declared ``variables`` (default: DRA's ``device``)."""
    return Checker(errors, variables).check(root)
