"""Type-check a parsed selector the way cel-go checks it in the Kubernetes environment.

Reports undeclared references, overloads that do not resolve, undefined fields, bad
comprehension ranges, mixed-type literals (HomogeneousAggregateLiterals and its
validator), invalid regex literals, and rewrites namespaced calls (``optional.of``,
``sets.contains``, ``lists.range``, ``strings.quote``) into global calls. The result is
the expression's output type; the caller checks it is bool or dyn.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
from draspeed.cel.functions import FUNCTIONS, Function
from draspeed.cel.parser import ErrorList
from draspeed.cel.regex import regex_error

DEVICE_FIELDS: dict[str, T.Type] = {
    "driver": T.STRING,
    "allowMultipleAllocations": T.BOOL,
    "attributes": T.map_of(T.STRING, T.map_of(T.STRING, T.DYN)),
    "capacity": T.map_of(T.STRING, T.map_of(T.STRING, T.QUANTITY)),
}

OBJECT_FIELDS: dict[str, dict[str, T.Type]] = {"kubernetes.DRADevice": DEVICE_FIELDS}

VARIABLES: dict[str, T.Type] = {"device": T.DEVICE}

# Identifiers that name types (``type(x) == int``).
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
    "type": T.type_of(T.DYN),
    "dyn": T.DYN,
    "optional_type": T.optional_of(T.DYN),
    "google.protobuf.Timestamp": T.TIMESTAMP,
    "google.protobuf.Duration": T.DURATION,
    "kubernetes.Quantity": T.QUANTITY,
    "kubernetes.Semver": T.SEMVER,
    "net.IP": T.IP,
    "net.CIDR": T.CIDR,
    "kubernetes.URL": T.URL,
}

_CONST_TYPES = {
    "int": T.INT,
    "uint": T.UINT,
    "double": T.DOUBLE,
    "string": T.STRING,
    "bytes": T.BYTES,
    "bool": T.BOOL,
    "null": T.NULL,
}

# Functions whose list/map literal arguments may mix element types.
_HOMOGENEITY_EXEMPT = frozenset({"format"})


@dataclass(slots=True)
class CheckResult:
    output: T.Type
    types: dict[int, T.Type] = field(default_factory=dict)


class Checker:
    def __init__(self, errors: ErrorList) -> None:
        self.errors = errors
        self.types: dict[int, T.Type] = {}
        self._scopes: list[dict[str, T.Type]] = []
        self._exempt_depth = 0
        self._fresh_count = 0

    def _fresh(self, t: T.Type) -> T.Type:
        """Give the type parameters left in a call's result type unique names, so that a
        later use (e.g. a literal list element) can still bind them, as cel-go's type
        variables are."""
        if t.kind == "param":
            self._fresh_count += 1
            return T.param(f"_var{self._fresh_count}")
        if t.params:
            return T.Type(t.kind, tuple(self._fresh(p) for p in t.params), t.name)
        return t

    # ---- entry -------------------------------------------------------------------

    def check(self, root: Node) -> CheckResult:
        out = self._check(root)
        return CheckResult(out, self.types)

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
        raise AssertionError(type(node))

    # ---- names -------------------------------------------------------------------

    def lookup_var(self, name: str) -> T.Type | None:
        if name.startswith("."):
            root = name[1:]
            if root in VARIABLES:
                return VARIABLES[root]
            return T.type_of(TYPE_IDENTS[root]) if root in TYPE_IDENTS else None
        for scope in reversed(self._scopes):
            if name in scope:
                return scope[name]
        if name in VARIABLES:
            return VARIABLES[name]
        if name in TYPE_IDENTS:
            return T.type_of(TYPE_IDENTS[name])
        return None

    def _ident(self, node: Ident) -> T.Type:
        t = self.lookup_var(node.name)
        if t is None:
            self.errors.add(
                node.pos, f"undeclared reference to '{node.name.lstrip('.')}' (in container '')"
            )
            return T.ERROR
        return t

    def _qualified_name(self, node: Node) -> str | None:
        parts: list[str] = []
        while isinstance(node, Select) and not node.test_only and not node.optional:
            parts.append(node.field)
            node = node.operand
        if isinstance(node, Ident):
            parts.append(node.name)
            return ".".join(reversed(parts))
        return None

    # ---- selection ---------------------------------------------------------------

    def _select(self, node: Select) -> T.Type:
        qualified = self._qualified_name(node)
        if qualified is not None and qualified in TYPE_IDENTS and "." in qualified:
            root = qualified.split(".", 1)[0]
            if self.lookup_var(root) is None:
                return T.type_of(TYPE_IDENTS[qualified])
        result = self._select_field(node, node.operand, node.field, node.optional)
        if node.test_only:
            return T.BOOL
        return result

    def _select_field(self, node: Node, operand: Node, name: str, optional: bool) -> T.Type:
        operand_type = self._check(operand)
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
        elif T.is_dyn_like(target):
            result = T.DYN
        else:
            self.errors.add(node.pos, f"type '{target}' does not support field selection")
            result = T.DYN
        if is_opt or optional:
            return T.optional_of(result)
        return result

    def _index(self, node: Index) -> T.Type:
        operand_type = self._check(node.operand)
        key_type = self._check(node.key)
        target, is_opt = _unwrap_optional(operand_type)
        name = "_[?_]" if node.optional else "_[_]"
        if target.kind == "list":
            if not T.assignable(T.INT, key_type, {}):
                self._no_overload(node, name, [operand_type, key_type], False)
                return T.ERROR
            result = target.params[0]
        elif target.kind == "map":
            if not T.assignable(target.params[0], key_type, {}):
                self._no_overload(node, name, [operand_type, key_type], False)
                return T.ERROR
            result = target.params[1]
        elif T.is_dyn_like(target):
            result = T.DYN
        else:
            self._no_overload(node, name, [operand_type, key_type], False)
            return T.ERROR
        if is_opt or node.optional:
            return T.optional_of(result)
        return result

    # ---- calls -------------------------------------------------------------------

    def _call(self, node: Call) -> T.Type:
        if node.target is not None:
            prefix = self._qualified_name(node.target)
            if prefix is not None:
                qualified = f"{prefix}.{node.function}"
                root = prefix.split(".", 1)[0]
                if qualified in FUNCTIONS and self.lookup_var(root) is None:
                    node.function = qualified
                    node.target = None
        exempt = node.function in _HOMOGENEITY_EXEMPT
        if exempt:
            self._exempt_depth += 1
        try:
            target_type = self._check(node.target) if node.target is not None else None
            arg_types = [self._check(a) for a in node.args]
        finally:
            if exempt:
                self._exempt_depth -= 1
        fn = FUNCTIONS.get(node.function)
        if fn is None:
            self.errors.add(
                node.pos, f"undeclared reference to '{node.function}' (in container '')"
            )
            return T.ERROR
        all_types = ([target_type] if target_type is not None else []) + arg_types
        result = self._resolve(node, fn, all_types, node.target is not None)
        if result is not None and fn.name == "matches":
            self._check_regex_literal(node)
        return result if result is not None else T.ERROR

    def _resolve(
        self, node: Node, fn: Function, arg_types: list[T.Type], member: bool
    ) -> T.Type | None:
        result: T.Type | None = None
        for overload in fn.overloads:
            if overload.member != member or len(overload.params) != len(arg_types):
                continue
            subst: T.Subst = {}
            if all(
                T.assignable(p, a, subst) for p, a in zip(overload.params, arg_types, strict=False)
            ):
                rt = self._fresh(T.substitute(overload.result, subst, free_to_dyn=False))
                if result is None:
                    result = rt
                elif result.kind != "dyn" and rt != result:
                    result = T.DYN
        if result is None:
            self._no_overload(node, fn.name, arg_types, member)
        return result

    def _no_overload(self, node: Node, name: str, arg_types: list[T.Type], member: bool) -> None:
        shown = [str(T.substitute(t, {})) for t in arg_types]
        joined = ", ".join(shown[1:] if member else shown)
        signature = f"{shown[0]}.({joined})" if member else f"({joined})"
        self.errors.add(
            node.pos, f"found no matching overload for '{name}' applied to '{signature}'"
        )

    def _check_regex_literal(self, node: Call) -> None:
        # cel-go's ValidateRegexLiterals: the pattern (first argument after the receiver
        # of the member form) must compile when it is a literal.
        # cel-go looks at the first non-receiver argument in both call styles.
        pattern = node.args[0] if node.args else None
        if (
            isinstance(pattern, Const)
            and pattern.kind == "string"
            and regex_error(pattern.value) is not None
        ):
            self.errors.add(pattern.pos, "invalid matches argument")

    # ---- logic and conditionals --------------------------------------------------

    def _logical(self, node: Logical) -> T.Type:
        ok = True
        for operand in node.operands:
            t = self._check(operand)
            if not T.assignable(T.BOOL, t, {}):
                self.errors.add(operand.pos, f"expected type 'bool' but found '{t}'")
                ok = False
        return T.BOOL if ok else T.ERROR

    def _ternary(self, node: Ternary) -> T.Type:
        cond = self._check(node.cond)
        then = self._check(node.then)
        other = self._check(node.other)
        subst: T.Subst = {}
        if (
            T.assignable(T.BOOL, cond, subst)
            and T.assignable(T.param("A"), then, subst)
            and T.assignable(T.param("A"), other, subst)
        ):
            return T.substitute(T.param("A"), subst)
        self._no_overload(node, "_?_:_", [cond, then, other], False)
        return T.ERROR

    # ---- literals ----------------------------------------------------------------

    def _list(self, node: ListLit) -> T.Type:
        elem: T.Type | None = None
        first: T.Type | None = None
        mismatch_reported = False
        for i, e in enumerate(node.elements):
            t = self._check(e)
            if i in node.optional_indices:
                if t.kind == "optional_type":
                    t = t.params[0]
                elif not T.is_dyn_like(t):
                    self.errors.add(e.pos, f"expected type 'optional_type({t})' but found '{t}'")
            if first is None:
                first = t
            elif (
                self._exempt_depth == 0
                and t != first
                and not mismatch_reported
                and not (_has_param(t) or _has_param(first))
            ):
                self.errors.add(e.pos, f"expected type '{first}' but found '{t}'")
                mismatch_reported = True
            elem = t if elem is None else _join_elem(elem, t)
        return T.list_of(elem if elem is not None else T.DYN)

    def _map(self, node: MapLit) -> T.Type:
        key_t: T.Type | None = None
        val_t: T.Type | None = None
        first_k: T.Type | None = None
        first_v: T.Type | None = None
        for k, v, optional in node.entries:
            kt = self._check(k)
            vt = self._check(v)
            if kt.kind not in ("string", "int", "uint", "bool") and not T.is_dyn_like(kt):
                self.errors.add(k.pos, f"unsupported map key type: {kt}")
            if optional:
                if vt.kind == "optional_type":
                    vt = vt.params[0]
                elif not T.is_dyn_like(vt):
                    self.errors.add(v.pos, f"expected type 'optional_type({vt})' but found '{vt}'")
            if first_k is None:
                first_k, first_v = kt, vt
            elif self._exempt_depth == 0:
                if kt != first_k and not (_has_param(kt) or _has_param(first_k)):
                    self.errors.add(k.pos, f"expected type '{first_k}' but found '{kt}'")
                if vt != first_v and not (_has_param(vt) or _has_param(first_v)):
                    self.errors.add(v.pos, f"expected type '{first_v}' but found '{vt}'")
            key_t = kt if key_t is None else _join_elem(key_t, kt)
            val_t = vt if val_t is None else _join_elem(val_t, vt)
        return T.map_of(key_t or T.DYN, val_t or T.DYN)

    # ---- comprehensions and bindings ---------------------------------------------

    def _comprehension(self, node: Comprehension) -> T.Type:
        range_t = self._check(node.range)
        two = node.var2 is not None
        if range_t.kind == "list":
            var_t, var2_t = (T.INT, range_t.params[0]) if two else (range_t.params[0], T.DYN)
        elif range_t.kind == "map":
            var_t, var2_t = range_t.params[0], range_t.params[1]
        elif T.is_dyn_like(range_t):
            var_t, var2_t = T.DYN, T.DYN
        else:
            self.errors.add(
                node.range.pos,
                f"expression of type '{range_t}' cannot be range of a comprehension "
                "(must be list, map, or dynamic)",
            )
            var_t, var2_t = T.DYN, T.DYN
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
        if (
            pred_t is not None
            and node.predicate is not None
            and not T.assignable(T.BOOL, pred_t, {})
        ):
            op = "_||_" if node.kind.startswith("exists") and node.kind != "exists_one" else "_&&_"
            if node.kind in ("map", "filter", "exists_one", "exists_one2") or node.kind.startswith(
                "transform"
            ):
                op = "_?_:_"
                self._no_overload(node.predicate, op, [pred_t, T.DYN, T.DYN], False)
            else:
                self._no_overload(node.predicate, op, [T.BOOL, pred_t], False)
        kind = node.kind
        if kind in ("all", "exists", "exists_one", "all2", "exists2", "exists_one2"):
            return T.BOOL
        if kind == "map":
            return T.list_of(trans_t or T.DYN)
        if kind == "filter":
            return T.list_of(var_t if range_t.kind != "map" else range_t.params[0])
        if kind == "transformList":
            return T.list_of(trans_t or T.DYN)
        if kind == "transformMap":
            key = (
                range_t.params[0]
                if range_t.kind == "map"
                else (T.INT if range_t.kind == "list" else T.DYN)
            )
            return T.map_of(key, trans_t or T.DYN)
        if kind == "transformMapEntry":
            if trans_t is not None and trans_t.kind == "map":
                return trans_t
            if trans_t is not None and not T.is_dyn_like(trans_t):
                self.errors.add(node.pos, f"expected type 'map(dyn, dyn)' but found '{trans_t}'")
            return T.map_of(T.DYN, T.DYN)
        if kind == "sortBy":
            return range_t
        raise AssertionError(kind)

    def _bind(self, node: Bind) -> T.Type:
        init_t = self._check(node.init)
        self._scopes.append({node.var: init_t})
        try:
            return self._check(node.body)
        finally:
            self._scopes.pop()


def _has_param(t: T.Type | None) -> bool:
    if t is None:
        return False
    return t.kind == "param" or any(_has_param(p) for p in t.params)


def _unwrap_optional(t: T.Type) -> tuple[T.Type, bool]:
    if t.kind == "optional_type":
        return t.params[0], True
    return t, False


def _join_elem(a: T.Type, b: T.Type) -> T.Type:
    if T.assignable(a, b, {}):
        return (
            a
            if b.kind in ("dyn", "error") or a == b
            else (b if a.kind in ("dyn",) else T.join(a, b))
        )
    return T.DYN


def check(root: Node, errors: ErrorList) -> CheckResult:
    return Checker(errors).check(root)
