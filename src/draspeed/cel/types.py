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
DEVICE = Type("object", name="kubernetes.DRADevice")


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


Subst = dict[str, Type]


def substitute(t: Type, subst: Subst, free_to_dyn: bool = True) -> Type:
    if t.kind == "param":
        bound = subst.get(t.name)
        if bound is None or bound == t:
            return DYN if free_to_dyn else t
        return substitute(bound, subst, free_to_dyn)
    if t.params:
        return Type(t.kind, tuple(substitute(p, subst, free_to_dyn) for p in t.params), t.name)
    return t


def assignable(formal: Type, actual: Type, subst: Subst) -> bool:
    """Can ``actual`` be passed where ``formal`` is expected? Binds type parameters."""
    if formal == actual:
        return True
    if actual.kind == "error" or formal.kind == "error":
        return True
    if formal.kind == "param":
        bound = subst.get(formal.name)
        if bound is None:
            subst[formal.name] = actual
            return True
        if assignable(bound, actual, subst):
            return True
        if assignable(actual, bound, subst):
            # Widen the binding (e.g. dyn joined with int stays dyn-compatible).
            subst[formal.name] = actual if bound.kind != "dyn" else bound
            return True
        return False
    if actual.kind == "param":
        bound = subst.get(actual.name)
        if bound is None:
            subst[actual.name] = formal
            return True
        return assignable(formal, bound, subst)
    if formal.kind == "dyn" or actual.kind == "dyn":
        return True
    if formal.kind != actual.kind or formal.name != actual.name:
        return False
    if len(formal.params) != len(actual.params):
        return False
    return all(assignable(f, a, subst) for f, a in zip(formal.params, actual.params, strict=False))


def join(a: Type, b: Type) -> Type:
    """The common type of two branches (dyn when they differ)."""
    if a == b:
        return a
    if a.kind == "error":
        return b
    if b.kind == "error":
        return a
    if a.kind == b.kind and a.name == b.name and len(a.params) == len(b.params):
        return Type(
            a.kind, tuple(join(x, y) for x, y in zip(a.params, b.params, strict=False)), a.name
        )
    return DYN


def is_dyn_like(t: Type) -> bool:
    return t.kind in ("dyn", "error", "param")
