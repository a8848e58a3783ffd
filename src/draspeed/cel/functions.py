"""The function registry: checker signatures and runtime implementations.

Each function is declared once with its overload signatures (for the checker) and one
Python implementation that dispatches on the runtime types of its arguments (a member
call passes its receiver first). Implementations raise :class:`EvalError` for CEL
errors. Each overload carries cel-go's overload id (``= id`` after the signature; a
derived id where upstream's does not matter): what a call costs
(:mod:`draspeed.cel.cost`) depends on the overload the checker resolved.
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
    id: str = ""


@dataclass(slots=True)
class Function:
    name: str
    overloads: list[Overload] = field(default_factory=list)
    impl: Callable[..., Any] | None = None  # global call style
    member_impl: Callable[..., Any] | None = None  # receiver call style (receiver first)
    # Declared as cel-go's extension and Kubernetes libraries declare theirs: each
    # overload checks its arguments' runtime types first, and a call none takes fails
    # with "no such overload: name(type, ...)" (see draspeed.cel.evaluator).
    guarded: bool = False

    @property
    def singleton(self) -> bool:
        """Bound once for all overloads upstream (see :data:`SINGLETONS`)."""
        return self.name in SINGLETONS


FUNCTIONS: dict[str, Function] = {}

# Functions cel-go binds with one implementation for all overloads (``Singleton*Binding``:
# the standard operators, size, type, dyn, matches, sort, @sortByAssociatedKeys). A
# two-argument call of any other function whose overload the checker could not pin down
# dispatches through a variadic binding, which stops evaluating arguments at the first
# error; a singleton's binary binding evaluates both.
SINGLETONS = frozenset(
    {
        "_+_",
        "_-_",
        "_*_",
        "_/_",
        "_%_",
        "-_",
        "!_",
        "_<_",
        "_<=_",
        "_>_",
        "_>=_",
        "_==_",
        "_!=_",
        "_&&_",
        "_||_",
        "_?_:_",
        "_[_]",
        "@in",
        "size",
        "type",
        "dyn",
        "matches",
        "sort",
        "@sortByAssociatedKeys",
    }
)

# Functions upstream calls with CEL errors among their arguments (as values), which
# their implementations then assert to be lists or ints: lists' distinct and flatten,
# as the pinned allocator answers (the others return the first error unevaluated).
NON_STRICT = frozenset({"distinct", "flatten"})

# Two-argument overloads bound as variadic functions upstream (no binary binding).
VARIADIC_OVERLOADS = frozenset({"string_format"})


def declare(signatures: str, impl: Callable[..., Any] | None = None) -> None:
    """Declare overloads from lines like ``g size(string) -> int = size_string`` (global)
    or ``m string size() -> int`` (member with receiver type ``string``); ``= id`` names
    cel-go's overload id."""
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
        result_text, _, overload_id = result_text.partition("=")
        name, _, args_text = head.strip().partition("(")
        name = name.strip()
        args_text = args_text.strip()[:-1]
        params = tuple(recv) + tuple(parse_type(a) for a in split_top_level(args_text))
        if not overload_id.strip():
            overload_id = "_".join([name, *(str(p) for p in params)])
        fn = FUNCTIONS.setdefault(name, Function(name))
        fn.overloads.append(
            Overload(params, parse_type(result_text), kind == "m", overload_id.strip())
        )
        if impl is not None:
            if kind == "m":
                fn.member_impl = impl
            else:
                fn.impl = impl


def register_guarded(register: Callable[[], None], unguarded: frozenset[str] = frozenset()) -> None:
    """Run a library's ``register`` and mark the functions it declares as guarded,
    but singletons (bound once, refused by name) and ``unguarded`` (functions upstream
    binds without type guards: their implementations answer wrong arguments)."""
    before = set(FUNCTIONS)
    register()
    for name in FUNCTIONS.keys() - before:
        if name not in SINGLETONS and name not in unguarded:
            FUNCTIONS[name].guarded = True


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
