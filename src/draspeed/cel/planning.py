"""What cel-go evaluates while building a program, and so fails before any device.

Kubernetes builds its CEL programs with ``cel.OptOptimize``. cel-go then folds, bottom
up, literals and list and map literals made only of constants, evaluates every type
conversion (``int``, ``uint``, ``double``, ``string``, ``bytes``, ``bool``, ``duration``,
``timestamp``, ``type``, ``dyn``) whose one argument is such a constant, and compiles the
pattern of ``matches`` (and of Kubernetes' ``find``/``findAll``) when it is one. A
conversion or pattern that fails makes the program fail to build: ``int('abc') == 1`` is
upstream's compile error "program instantiation failed: type conversion error from
'string' to 'int'", whatever the device. :func:`check_constant_folding` finds that
failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from draspeed.cel.ast import (
    Bind,
    Call,
    Comprehension,
    Const,
    Ident,
    Index,
    ListLit,
    MapLit,
    Node,
    Select,
    children,
)
from draspeed.cel.checker import qualified_name
from draspeed.cel.functions import FUNCTIONS
from draspeed.cel.regex import compile_regex
from draspeed.cel.values import (
    QUALIFIER_TYPES,
    EvalError,
    GoPanic,
    TypeValue,
    UInt,
    invalid_qualifier,
    make_map,
)

if TYPE_CHECKING:
    from draspeed.cel.checker import CheckResult

_CONVERSIONS = frozenset(
    {"bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp", "type", "uint"}
)


# Functions whose constant pattern (second argument, receiver first) is compiled while the
# program is built: cel-go's matches optimisation (with OptOptimize) and Kubernetes' regex
# library's own optimisations of find and findAll (always on).
_REGEX_FUNCTIONS = frozenset({"matches", "find", "findAll"})


class ConstantFoldingError(Exception):
    """A constant conversion or pattern that fails (cel-go's text)."""


class UndefinedTypeError(ConstantFoldingError):
    """A type the checker took by a name the planner does not know (cel-go's text)."""


def undefined_type(result: CheckResult) -> None:
    """cel-go's planner cannot resolve a type the checker took by a name only the
    checker knows (:data:`~draspeed.cel.checker.UNPLANNED_TYPE_IDENTS`)."""
    if result.undefined_types:
        raise UndefinedTypeError(f"reference to undefined type: {result.undefined_types[0]}")


def check_constant_folding(root: Node, type_names: frozenset[str]) -> None:
    """Raise :class:`ConstantFoldingError` where cel-go's planner would fail.
    ``type_names`` are the identifiers that name types (constants too)."""
    _Folder(type_names).fold(root)


class _Unknown:
    """The value of an expression that is not a constant."""

    __slots__ = ()


UNKNOWN = _Unknown()


class _Folder:
    def __init__(self, type_names: frozenset[str]) -> None:
        self.type_names = type_names
        self.locals: list[set[str]] = []

    def fold(self, node: Node) -> Any:
        """The node's constant value or UNKNOWN; every sub-expression is visited."""
        if isinstance(node, Const):
            return UInt(node.value) if node.kind == "uint" else node.value
        if isinstance(node, Ident):
            name = node.name.lstrip(".")
            local = not node.name.startswith(".") and any(name in s for s in self.locals)
            return TypeValue(name) if name in self.type_names and not local else UNKNOWN
        if isinstance(node, Select):
            # A qualified type name (net.IP, google.protobuf.Timestamp) is a constant too.
            qualified = qualified_name(node)
            if qualified is not None:
                name = qualified.lstrip(".")
                root = name.split(".", 1)[0]
                local = not qualified.startswith(".") and any(root in s for s in self.locals)
                if name in self.type_names and not local:
                    return TypeValue(name)
            self.fold(node.operand)
            return UNKNOWN
        if isinstance(node, ListLit):
            values = [self.fold(e) for e in node.elements]
            if node.optional_indices or any(v is UNKNOWN for v in values):
                return UNKNOWN
            return values
        if isinstance(node, MapLit):
            pairs = [(self.fold(k), self.fold(v)) for k, v, _ in node.entries]
            if any(o for _, _, o in node.entries) or any(
                k is UNKNOWN or v is UNKNOWN for k, v in pairs
            ):
                return UNKNOWN
            try:
                return make_map(pairs)
            except GoPanic:
                return UNKNOWN  # left to the evaluation (see the evaluator)
        if isinstance(node, Call):
            return self._call(node)
        if isinstance(node, Index):
            self.fold(node.operand)
            key = self.fold(node.key)
            if key is not UNKNOWN and type(key) not in QUALIFIER_TYPES:
                # A constant index becomes a qualifier, which takes only these types.
                raise ConstantFoldingError(str(invalid_qualifier(key)))
            return UNKNOWN
        if isinstance(node, Comprehension):
            self.fold(node.range)
            self.locals.append({node.var} | ({node.var2} if node.var2 else set()))
            for part in (node.predicate, node.transform):
                if part is not None:
                    self.fold(part)
            self.locals.pop()
            return UNKNOWN
        if isinstance(node, Bind):
            self.fold(node.init)
            self.locals.append({node.var})
            self.fold(node.body)
            self.locals.pop()
            return UNKNOWN
        for child in children(node):
            self.fold(child)
        return UNKNOWN

    def _call(self, node: Call) -> Any:
        parts = ([node.target] if node.target is not None else []) + list(node.args)
        values = [self.fold(p) for p in parts]
        name = node.function.lstrip(".")
        if name in _REGEX_FUNCTIONS and len(values) >= 2 and type(values[1]) is str:
            try:
                compile_regex(values[1])
            except EvalError as exc:
                raise ConstantFoldingError(str(exc)) from None
        if name not in _CONVERSIONS or node.target is not None or len(values) != 1:
            return UNKNOWN
        if values[0] is UNKNOWN:
            return UNKNOWN
        impl = FUNCTIONS[name].impl
        if impl is None:
            return UNKNOWN
        try:
            return impl(values[0])
        except EvalError as exc:
            raise ConstantFoldingError(str(exc)) from None
