"""The function registry: checker signatures, runtime implementations and call costs.

Each function is declared once with its overload signatures (for the checker) and one
Python implementation that dispatches on the runtime types of its arguments (a member
call passes its receiver first). Implementations raise :class:`EvalError` for CEL
errors. A cost function, where given, returns the call's cost as cel-go's runtime cost
tracker counts it (string traversal at 0.1 per character, and so on); calls without one
cost 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from draspeed.cel.types import Type, parse_type, split_top_level


@dataclass(frozen=True, slots=True)
class Overload:
    """One signature; for member overloads ``params[0]`` is the receiver type."""

    params: tuple[Type, ...]
    result: Type
    member: bool


@dataclass(slots=True)
class Function:
    name: str
    overloads: list[Overload] = field(default_factory=list)
    impl: Callable[..., Any] | None = None  # global call style
    member_impl: Callable[..., Any] | None = None  # receiver call style (receiver first)
    cost: Callable[[tuple[Any, ...], Any], int] | None = None


FUNCTIONS: dict[str, Function] = {}


def declare(
    signatures: str,
    impl: Callable[..., Any] | None = None,
    cost: Callable[[tuple[Any, ...], Any], int] | None = None,
) -> None:
    """Declare overloads from lines like ``g size(string) -> int`` (global) or
    ``m string size() -> int`` (member with receiver type ``string``)."""
    for raw in signatures.strip().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        kind, rest = line.split(" ", 1)
        if kind == "m":
            recv_text, rest = _split_receiver(rest)
            recv: list[Type] = [parse_type(recv_text)]
        else:
            recv = []
        head, _, result_text = rest.rpartition("->")
        name, _, args_text = head.strip().partition("(")
        args_text = args_text.strip()[:-1]
        params = tuple(recv) + tuple(parse_type(a) for a in split_top_level(args_text))
        fn = FUNCTIONS.setdefault(name.strip(), Function(name.strip()))
        fn.overloads.append(Overload(params, parse_type(result_text), kind == "m"))
        if impl is not None:
            if kind == "m":
                fn.member_impl = impl
            else:
                fn.impl = impl
        if cost is not None:
            fn.cost = cost


def _split_receiver(text: str) -> tuple[str, str]:
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == " " and depth == 0:
            return text[:i], text[i + 1 :].strip()
    raise ValueError(text)


def string_cost(*indices: int) -> Callable[[tuple[Any, ...], Any], int]:
    """Cost of traversing the string arguments at ``indices`` (0.1 per character)."""

    def cost(args: tuple[Any, ...], result: Any) -> int:
        n = 0
        for i in indices:
            v = args[i] if i < len(args) else ""
            n += len(v) if isinstance(v, (str, bytes)) else 1
        return 1 + -(-n // 10)

    return cost


def size_cost(*indices: int) -> Callable[[tuple[Any, ...], Any], int]:
    """Cost proportional to the size of list/map/string arguments (one per element)."""

    def cost(args: tuple[Any, ...], result: Any) -> int:
        n = 0
        for i in indices:
            v: Any = args[i] if i < len(args) else None
            n += len(v) if hasattr(v, "__len__") else 1
        return 1 + n

    return cost
