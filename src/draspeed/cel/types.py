"""CEL types as the checker sees them, printed the way cel-go's FormatCELType prints them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Type:
    """``kind``: a primitive name, ``dyn``, ``list``, ``map``, ``optional_type``, ``type``,
    ``object`` (named by ``name``), ``param`` (a type parameter named by ``name``) or ``error``.
    """

    kind: str
    params: tuple[Type, ...] = ()
    name: str = ""

    def __str__(self) -> str:
        if self.kind in ("object", "param"):
            return self.name
        if self.kind == "null":
            return "null_type"
        if self.kind == "error":
            return "*error*"
        if self.params:
            return f"{self.kind}({', '.join(str(p) for p in self.params)})"
        return self.kind


def format_cel_type(t: Type) -> str:
    """cel-go's checker.FormatCELType, used in type-check messages: like ``str()`` (the
    type's String()) except ``timestamp``, ``duration``, ``null`` and ``!error!``."""
    if t.kind == "null":
        return "null"
    if t.kind == "error":
        return "!error!"
    if t.kind == "object" and t.name == "google.protobuf.Timestamp":
        return "timestamp"
    if t.kind == "object" and t.name == "google.protobuf.Duration":
        return "duration"
    if t.params:
        return f"{t.kind}({', '.join(format_cel_type(p) for p in t.params)})"
    return str(t)


INT = Type("int")
UINT = Type("uint")
DOUBLE = Type("double")
BOOL = Type("bool")
STRING = Type("string")
BYTES = Type("bytes")
NULL = Type("null")
DYN = Type("dyn")
ERROR = Type("error")
TIMESTAMP = Type("object", name="google.protobuf.Timestamp")
DURATION = Type("object", name="google.protobuf.Duration")
QUANTITY = Type("object", name="kubernetes.Quantity")
SEMVER = Type("object", name="kubernetes.Semver")
IP = Type("object", name="net.IP")
CIDR = Type("object", name="net.CIDR")
URL = Type("object", name="kubernetes.URL")
NAMED_FORMAT = Type("object", name="kubernetes.NamedFormat")
DEVICE = Type("object", name="kubernetes.DRADevice")
AUTHORIZER = Type("object", name="kubernetes.authorization.Authorizer")
PATH_CHECK = Type("object", name="kubernetes.authorization.PathCheck")
GROUP_CHECK = Type("object", name="kubernetes.authorization.GroupCheck")
RESOURCE_CHECK = Type("object", name="kubernetes.authorization.ResourceCheck")
DECISION = Type("object", name="kubernetes.authorization.Decision")


def list_of(elem: Type) -> Type:
    return Type("list", (elem,))


def map_of(key: Type, value: Type) -> Type:
    return Type("map", (key, value))


def optional_of(value: Type) -> Type:
    return Type("optional_type", (value,))


def type_of(value: Type) -> Type:
    return Type("type", (value,))


def param(name: str) -> Type:
    return Type("param", name=name)


_NAMED = {
    "int": INT,
    "uint": UINT,
    "double": DOUBLE,
    "bool": BOOL,
    "string": STRING,
    "bytes": BYTES,
    "null": NULL,
    "dyn": DYN,
    "timestamp": TIMESTAMP,
    "duration": DURATION,
    "Quantity": QUANTITY,
    "Semver": SEMVER,
    "IP": IP,
    "CIDR": CIDR,
    "URL": URL,
    "NamedFormat": NAMED_FORMAT,
    "Authorizer": AUTHORIZER,
    "PathCheck": PATH_CHECK,
    "GroupCheck": GROUP_CHECK,
    "ResourceCheck": RESOURCE_CHECK,
    "Decision": DECISION,
}


def parse_type(text: str) -> Type:
    """Parse the signature shorthand used by the declaration tables: ``list(A)``,
    ``map(string, dyn)``, ``opt(A)``, ``type(A)``; single capitals are type parameters."""
    text = text.strip()
    if "(" in text:
        head, _, rest = text.partition("(")
        inner = rest[:-1]
        parts = split_top_level(inner)
        args = tuple(parse_type(p) for p in parts)
        if head == "list":
            return list_of(args[0])
        if head == "map":
            return map_of(args[0], args[1])
        if head == "opt":
            return optional_of(args[0])
        if head == "type":
            return type_of(args[0])
        raise ValueError(text)
    if len(text) == 1 and text.isupper():
        return param(text)
    return _NAMED[text]


def split_top_level(text: str) -> list[str]:
    """Comma-separated parts of ``text`` outside parentheses, stripped, empties dropped."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


# ---- type unification (cel-go's checker/types.go, reimplemented) ----------------------
# A mapping binds type parameters (by name) to types. ``is_assignable`` tries to make a
# value of type ``t1`` fit where ``t2`` is expected, binding parameters of either side;
# it returns the extended mapping, or None. Timestamps, durations and every object or
# opaque type (optionals, IP, Quantity...) also accept null, as cel-go's legacy rule says.

Mapping = dict[str, Type]


def is_dyn(t: Type) -> bool:
    return t.kind == "dyn"


def is_dyn_like(t: Type) -> bool:
    return t.kind in ("dyn", "error", "param")


def _nullable(t: Type) -> bool:
    return t.kind in ("object", "optional_type") or t.kind == "null"


def _less_specific(t1: Type, t2: Type) -> bool:
    """Is ``t1`` at most as specific as ``t2`` (cel-go's isEqualOrLessSpecific)?"""
    if t1.kind in ("dyn", "param"):
        return True
    if t2.kind in ("dyn", "param") or t1.kind != t2.kind:
        return False
    if t1.kind in ("list", "map", "optional_type"):
        return len(t1.params) == len(t2.params) and all(
            _less_specific(a, b) for a, b in zip(t1.params, t2.params, strict=True)
        )
    if t1.kind == "type":
        return True
    return t1 == t2


def most_general(t1: Type, t2: Type) -> Type:
    return t1 if _less_specific(t1, t2) else t2


def _not_referenced_in(m: Mapping, t: Type, within: Type) -> bool:
    if t == within:
        return False
    if within.kind == "param":
        bound = m.get(within.name)
        return True if bound is None else _not_referenced_in(m, t, bound)
    return all(_not_referenced_in(m, t, p) for p in within.params)


def _valid_substitution(m: Mapping, t1: Type, t2: Type) -> tuple[bool, bool]:
    """Can parameter ``t2`` stand for ``t1``? (valid, t2 already had a binding)."""
    if t1 == t2:
        return True, True
    bound = m.get(t2.name)
    if bound is not None:
        if t1 == bound:
            return True, True
        if _assignable(m, t1, bound):
            widened = most_general(t1, bound)
            if _not_referenced_in(m, t2, widened):
                m[t2.name] = widened
            return True, True
        return False, True
    if _not_referenced_in(m, t2, t1):
        m[t2.name] = t1
        return True, False
    return False, False


def _assignable(m: Mapping, t1: Type, t2: Type) -> bool:
    if t2.kind == "param":
        valid, had_binding = _valid_substitution(m, t1, t2)
        if valid:
            return True
        if had_binding:
            return False
    if t1.kind == "param":
        return _valid_substitution(m, t2, t1)[0]
    if t1.kind in ("dyn", "error") or t2.kind in ("dyn", "error"):
        return True
    if t1.kind == "null":
        return _nullable(t2)
    if t2.kind == "null":
        return _nullable(t1)
    if t1.kind == "type":
        return t2.kind == "type"
    if t1.kind in ("list", "map", "optional_type"):
        return (
            t1.kind == t2.kind
            and len(t1.params) == len(t2.params)
            and all(_assignable(m, a, b) for a, b in zip(t1.params, t2.params, strict=True))
        )
    return t1 == t2


def is_assignable(m: Mapping, t1: Type, t2: Type) -> Mapping | None:
    trial = dict(m)
    return trial if _assignable(trial, t1, t2) else None


def is_assignable_list(m: Mapping, l1: list[Type], l2: list[Type]) -> Mapping | None:
    if len(l1) != len(l2):
        return None
    trial = dict(m)
    if all(_assignable(trial, a, b) for a, b in zip(l1, l2, strict=True)):
        return trial
    return None


def substitute(m: Mapping, t: Type, params_to_dyn: bool) -> Type:
    """``t`` with bound parameters replaced (free ones by dyn if ``params_to_dyn``)."""
    if t.kind == "param":
        bound = m.get(t.name)
        if bound is not None:
            return substitute(m, bound, params_to_dyn)
        return DYN if params_to_dyn else t
    if t.params:
        return Type(t.kind, tuple(substitute(m, p, params_to_dyn) for p in t.params), t.name)
    return t


def equivalent(t1: Type, t2: Type) -> bool:
    """cel-go's IsEquivalentType: equal, except that parameter names do not matter."""
    if t1.kind != t2.kind or len(t1.params) != len(t2.params):
        return False
    if t1.kind != "param" and t1.name != t2.name:
        return False
    return all(equivalent(a, b) for a, b in zip(t1.params, t2.params, strict=True))


def type_params(t: Type) -> set[str]:
    """The names of the parameters ``t`` mentions."""
    if t.kind == "param":
        return {t.name}
    out: set[str] = set()
    for p in t.params:
        out |= type_params(p)
    return out
