"""CEL expressions beyond device selectors: declared variables, any result type.

``compile_expression(text, {"x": "int"})`` parses, checks and compiles an expression in
the Kubernetes CEL environment (the libraries of the DRA selector environment) with the
given variables instead of ``device``; ``Program.evaluate({"x": 1})`` returns the CEL
value. With ``check=False`` the expression runs unchecked, as cel-go runs a parsed-only
AST: overloads are then chosen at run time by the values' types. This is what the cel-spec
conformance tests use; selectors go through :func:`draspeed.cel.compile_selector`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from draspeed.cel import types as T
from draspeed.cel.ast import CreateMessage, Node, walk
from draspeed.cel.checker import TYPE_IDENTS, check
from draspeed.cel.evaluator import COST_LIMIT, Compiler, PlanError, unbound_variable
from draspeed.cel.parser import ErrorList, ParseError, parse
from draspeed.cel.planning import ConstantFoldingError, check_constant_folding, undefined_type
from draspeed.cel.selector import _RECURSION_LIMIT, TYPE_NAMES, run_bound_program
from draspeed.cel.validators import validate
from draspeed.errors import CELCompileError


def type_from_name(text: str) -> T.Type:
    """A CEL type from its name as cel-go prints it: ``int``, ``list(string)``,
    ``map(string, dyn)``, ``optional_type(int)``, ``type(int)``, ``null_type``,
    ``google.protobuf.Timestamp``... (ValueError for an unknown name)."""
    text = text.strip()
    head, paren, rest = text.partition("(")
    if paren:
        args = tuple(type_from_name(p) for p in T.split_top_level(rest[:-1]))
        shapes = {"list": 1, "map": 2, "optional_type": 1, "type": 1}
        if shapes.get(head) != len(args):
            raise ValueError(f"unknown CEL type {text!r}")
        return T.Type(head, args)
    named = _DECLARABLE.get(text)
    if named is None:
        raise ValueError(f"unknown CEL type {text!r}")
    return named


# Types a variable may be declared with: the type identifiers, dyn, and the object types
# of the Kubernetes libraries.
_DECLARABLE: dict[str, T.Type] = {
    **TYPE_IDENTS,
    "type": T.Type("type"),
    "dyn": T.DYN,
    "kubernetes.Quantity": T.QUANTITY,
    "kubernetes.Semver": T.SEMVER,
    "kubernetes.URL": T.URL,
    "kubernetes.DRADevice": T.DEVICE,
    "kubernetes.NamedFormat": T.NAMED_FORMAT,
}


class Program:
    """A compiled expression; ``evaluate`` is thread-safe and reusable."""

    __slots__ = ("_nslots", "_program", "ast", "expression", "output_type", "variables")

    def __init__(
        self, expression: str, ast: Node, output_type: T.Type | None, variables: tuple[str, ...]
    ) -> None:
        self.expression = expression
        self.ast = ast
        self.output_type = output_type
        self.variables = variables
        compiler = Compiler(variables, device=False)
        self._program = compiler.compile(ast)
        self._nslots = compiler.nslots

    def __repr__(self) -> str:
        return f"Program({self.expression!r})"

    def evaluate(self, bindings: Mapping[str, Any] | None = None, limit: int = COST_LIMIT) -> Any:
        """The expression's value; CELRuntimeError with cel-go's text on failure.
        A declared variable missing from ``bindings`` is an error when read."""
        given = bindings or {}
        values = [given[n] if n in given else unbound_variable(n) for n in self.variables]
        return run_bound_program(self._program, self._nslots, values, limit)


def compile_expression(
    expression: str,
    variables: Mapping[str, T.Type | str] | None = None,
    *,
    check_types: bool = True,
    macros: bool = True,
    optimize: bool = True,
) -> Program:
    """Compile ``expression`` with the declared ``variables`` (types or type names).

    Raises CELCompileError with cel-go's text for syntax and type errors, and -- with
    ``optimize``, as Kubernetes builds programs -- for constant conversions that fail
    ("program instantiation failed: ...", see :mod:`draspeed.cel.planning`).
    """
    import sys

    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    declared = {
        name: type_from_name(t) if isinstance(t, str) else t
        for name, t in (variables or {}).items()
    }
    try:
        ast = parse(expression, macros=macros)
    except ParseError as exc:
        raise CELCompileError(f"compilation failed: {exc}") from None
    output: T.Type | None = None
    if not check_types and any(isinstance(n, CreateMessage) for n in walk(ast)):
        # Checking would refuse it; unchecked, nothing here can build a message.
        raise CELCompileError("compilation failed: message construction is not supported")
    if check_types:
        errors = ErrorList(expression)
        try:
            result = check(ast, errors, declared)
        except RecursionError:
            errors.items = [(0, "expression recursion limit exceeded: 250")]
        if not errors.items:
            validate(ast, result.types, errors)
        if errors.items:
            raise CELCompileError(f"compilation failed: {errors.render()}")
        output = result.output
    try:
        if check_types:
            undefined_type(result)
        if optimize:
            check_constant_folding(ast, TYPE_NAMES)
        return Program(expression, ast, output, tuple(declared))
    except (ConstantFoldingError, PlanError) as exc:
        raise CELCompileError(f"program instantiation failed: {exc}") from None
