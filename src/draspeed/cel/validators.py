"""cel-go's AST validators in the Kubernetes environment, run after a clean type check.

- homogeneous aggregate literals: a list literal's elements (a map literal's keys and
  values) must have equivalent types, except inside a ``format`` call;
- duration, timestamp and regex literals: ``duration('1x')``, ``timestamp('bad')`` and
  ``'s'.matches('(')`` with a literal argument must evaluate / compile;
- the strings extension's format validator: a literal format string applied to a list
  literal must fit the argument types (:func:`draspeed.cel.formatting.check_format_call`).

Like cel-go, every validator reports to the same issue list, sorted by position when
printed; the messages are upstream's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from draspeed.cel import types as T
from draspeed.cel.ast import Call, Const, ListLit, MapLit, Node, children
from draspeed.cel.formatting import check_format_call
from draspeed.cel.parser import ErrorList
from draspeed.cel.regex import regex_error
from draspeed.cel.values import EvalError

_EXEMPT_FUNCTIONS = frozenset({"format"})


def _literal_evaluates(impl: Callable[[Any], Any]) -> Callable[[Const], bool]:
    def evaluates(arg: Const) -> bool:
        value = arg.value
        if arg.kind == "uint":
            from draspeed.cel.values import UInt

            value = UInt(value)
        try:
            impl(value)
        except EvalError:
            return False
        return True

    return evaluates


def _literal_checks() -> dict[str, Callable[[Const], bool]]:
    from draspeed.cel.timestamps import to_duration, to_timestamp

    return {
        "duration": _literal_evaluates(to_duration),
        "timestamp": _literal_evaluates(to_timestamp),
        "matches": lambda arg: arg.kind != "string" or regex_error(arg.value) is None,
    }


def validate(root: Node, types: dict[int, T.Type], errors: ErrorList) -> None:
    """Run the validators over a checked AST (``types``: final node types by id)."""
    literal_checks = _literal_checks()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, in_format = stack.pop()
        if isinstance(node, Call):
            check = literal_checks.get(node.function)
            literal = node.args[0] if node.args else None
            if check is not None and isinstance(literal, Const) and not check(literal):
                errors.add(literal.pos, f"invalid {node.function} argument")
            if node.function == "format":
                _check_format(node, types, errors)
            in_format = in_format or node.function in _EXEMPT_FUNCTIONS
        elif isinstance(node, ListLit) and not in_format:
            _check_list(node, types, errors)
        elif isinstance(node, MapLit) and not in_format:
            _check_map(node, types, errors)
        stack.extend((child, in_format) for child in children(node))


def _type(types: dict[int, T.Type], node: Node, optional: bool = False) -> T.Type:
    t = types.get(id(node), T.DYN)
    if optional and t.kind == "optional_type":
        return t.params[0]
    return t


def _mismatch(errors: ErrorList, node: Node, expected: T.Type, actual: T.Type) -> None:
    errors.add(
        node.pos,
        f"expected type '{T.format_cel_type(expected)}' but found '{T.format_cel_type(actual)}'",
    )


def _check_list(node: ListLit, types: dict[int, T.Type], errors: ErrorList) -> None:
    first: T.Type | None = None
    for i, e in enumerate(node.elements):
        t = _type(types, e, i in node.optional_indices)
        if first is None:
            first = t
        elif not T.equivalent(first, t):
            _mismatch(errors, e, first, t)
            break


def _check_map(node: MapLit, types: dict[int, T.Type], errors: ErrorList) -> None:
    first: tuple[T.Type, T.Type] | None = None
    for k, v, optional in node.entries:
        kt, vt = _type(types, k), _type(types, v, optional)
        if first is None:
            first = (kt, vt)
            continue
        if not T.equivalent(first[0], kt):
            _mismatch(errors, k, first[0], kt)
        if not T.equivalent(first[1], vt):
            _mismatch(errors, v, first[1], vt)


def _check_format(node: Call, types: dict[int, T.Type], errors: ErrorList) -> None:
    target = node.target
    if (
        not isinstance(target, Const)
        or target.kind != "string"
        or len(node.args) != 1
        or not isinstance(node.args[0], ListLit)
    ):
        return
    problem = check_format_call(target.value, list(node.args[0].elements), types)
    if problem is not None:
        message, at = problem
        errors.add((at or node).pos, message)
