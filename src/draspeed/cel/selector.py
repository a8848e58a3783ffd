"""Compiled selectors and the compile cache (upstream ``cel/compile.go`` + ``cel/cache.go``)."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from draspeed.cel import (  # noqa: F401  (the libraries register themselves)
    extensions,
    formats,
    kubernetes,
    stdlib,
    timestamps,
)
from draspeed.cel.ast import Node
from draspeed.cel.checker import TYPE_IDENTS, check
from draspeed.cel.deadline import check_deadline
from draspeed.cel.device import DeviceInput
from draspeed.cel.estimate import estimate_cost
from draspeed.cel.evaluator import COST_LIMIT, Activation, Compiler, PlanError
from draspeed.cel.meter import swap_meter
from draspeed.cel.parser import ErrorList, ParseError, parse
from draspeed.cel.planning import ConstantFoldingError, check_constant_folding, undefined_type
from draspeed.cel.runtime_errors import runtime_error
from draspeed.cel.types import Type
from draspeed.cel.validators import validate
from draspeed.cel.values import to_bool_result
from draspeed.errors import CELCompileError, CELRuntimeError
from draspeed.golang import go_string

if TYPE_CHECKING:
    from draspeed.cel.table import DeviceTable

TYPE_NAMES = frozenset(TYPE_IDENTS)

# cel-go's parser refuses an expression of more code points (its default limit, which
# the DRA environment keeps). The API server's own limit is far lower (10 KiB,
# draspeed.api.limits), but objects read without validation reach the allocator as
# they are, and its compiler takes them up to this size.
MAX_EXPRESSION_CODE_POINTS = 100_000


class Selector:
    """A compiled CEL device selector; thread-safe and reusable for every device."""

    __slots__ = (
        "_nslots",
        "_program",
        "_vector",
        "_vector_lock",
        "ast",
        "expression",
        "max_cost",
        "output_type",
    )

    def __init__(
        self, expression: str, ast: Node, output_type: Type, max_cost: int | None = None
    ) -> None:
        self.expression = expression
        self.ast = ast
        self.output_type = output_type
        # cel-go's worst-case estimate (what the API server checks against the limit).
        self.max_cost = max_cost
        compiler = Compiler()
        self._program = compiler.compile(ast)
        self._nslots = compiler.nslots
        self._vector: Any = None
        self._vector_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Selector({self.expression!r})"

    def matches(self, dev: DeviceInput, deadline: float | None = None) -> bool:
        """Evaluate for one device; raises CELRuntimeError with upstream's text, and
        AllocationTimeout once ``deadline`` (``time.monotonic()``) has passed."""
        if dev.error is not None:
            raise CELRuntimeError(dev.error)
        value = run_program(self._program, self._nslots, dev.value, deadline=deadline)
        if type(value) is bool:
            return value
        return to_bool_result(value)

    def evaluate_value(
        self, device_value: Any, limit: int = COST_LIMIT, deadline: float | None = None
    ) -> Any:
        """The raw CEL result for a ``device`` map (no bool conversion)."""
        return run_program(self._program, self._nslots, device_value, limit, deadline)

    def cost(self, device_value: Any, limit: int = COST_LIMIT) -> int:
        """What evaluating for a ``device`` map costs (as upstream charges it), whatever
        the result; past ``limit`` the count stops just above it."""
        act = Activation(device_value, self._nslots, limit)
        previous = swap_meter(act)
        try:
            self._program(act)
        except Exception:  # only the cost is asked for
            pass
        finally:
            swap_meter(previous)
        return act.cost

    def evaluate(
        self, table: DeviceTable, deadline: float | None = None
    ) -> tuple[np.ndarray, np.ndarray, Mapping[int, str]]:
        """Vector path over a :class:`DeviceTable`: (match, error, message per erroring
        row). With a ``deadline`` (``time.monotonic()``), AllocationTimeout once it has
        passed, checked every few hundred evaluated value combinations."""
        from draspeed.cel.vector import evaluate_table

        return evaluate_table(self, table, deadline)

    def evaluate_lazily(
        self, table: DeviceTable, rows: np.ndarray | None = None, deadline: float | None = None
    ) -> tuple[np.ndarray, np.ndarray, Mapping[int, str], np.ndarray]:
        """As a search needs verdicts: only ``rows`` (a bool mask; all if None), and once
        a device reaches the cost limit the rest may be left pending (fourth array)."""
        from draspeed.cel.vector import evaluate_lazily

        return evaluate_lazily(self, table, rows, deadline)

    def evaluate_rows(
        self, table: DeviceTable, *, memoize: bool = True, deadline: float | None = None
    ) -> tuple[np.ndarray, np.ndarray, Mapping[int, str]]:
        """General path over a table (``matches`` per device; memoised on the projection
        of the attributes the expression reads unless ``memoize`` is False)."""
        from draspeed.cel.vector import evaluate_rows

        match, error, messages, _ = evaluate_rows(self, table, memoize=memoize, deadline=deadline)
        return match, error, messages


def run_program(
    program: Any,
    nslots: int,
    device_value: Any,
    limit: int = COST_LIMIT,
    deadline: float | None = None,
) -> Any:
    """Run a compiled program; every failure becomes CELRuntimeError with upstream's
    text, except a passed ``deadline`` (AllocationTimeout)."""
    act = Activation(device_value, nslots, limit, deadline)
    previous = swap_meter(act)
    try:
        return program(act)
    except Exception as exc:  # every failure becomes a CEL error
        raise runtime_error(exc) from None
    finally:
        swap_meter(previous)


def run_bound_program(program: Any, nslots: int, values: list[Any], limit: int = COST_LIMIT) -> Any:
    """Run a program compiled with declared variables, their values in slot order."""
    act = Activation(None, nslots, limit)
    act.slots[: len(values)] = values
    previous = swap_meter(act)
    try:
        return program(act)
    except Exception as exc:  # every failure becomes a CEL error
        raise runtime_error(exc, hint=False) from None
    finally:
        swap_meter(previous)


# Checking and compiling recurse once per nesting level (cel-go allows 250 levels);
# CPython's default limit of 1000 frames is too tight for that plus the caller's stack.
_RECURSION_LIMIT = 6000


def _compile(expression: str) -> Selector:
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    if not expression.isascii():
        expression = go_string(expression)
    if len(expression) > MAX_EXPRESSION_CODE_POINTS:
        raise CELCompileError(
            "compilation failed: ERROR: <input>:-1:0: expression code point size exceeds "
            f"limit: size: {len(expression)}, limit {MAX_EXPRESSION_CODE_POINTS}"
        )
    try:
        ast = parse(expression)
    except ParseError as exc:
        raise CELCompileError(f"compilation failed: {exc}") from None
    errors = ErrorList(expression)
    try:
        result = check(ast, errors)
    except RecursionError:
        errors.items = [(0, "expression recursion limit exceeded: 250")]
        raise CELCompileError(f"compilation failed: {errors.render()}") from None
    if not errors.items:
        validate(ast, result.types, errors)
    if errors.items:
        raise CELCompileError(f"compilation failed: {errors.render()}")
    out = result.output
    if out.kind not in ("bool", "dyn"):
        raise CELCompileError(f"must evaluate to bool or the unknown type, not {out}")
    max_cost = estimate_cost(result, ast).max
    try:
        undefined_type(result)
        check_constant_folding(ast, TYPE_NAMES)
        return Selector(expression, ast, out, max_cost)
    except (ConstantFoldingError, PlanError) as exc:
        raise CELCompileError(f"program instantiation failed: {exc}") from None
    except RecursionError:
        errors.items = [(0, "expression recursion limit exceeded: 250")]
        raise CELCompileError(f"compilation failed: {errors.render()}") from None


class _Cache:
    """LRU keyed by expression text; only successful compilations are kept."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[str, Selector] = OrderedDict()
        self._lock = threading.Lock()
        self._compiling: dict[str, threading.Lock] = {}

    def get_or_compile(self, expression: str) -> Selector:
        with self._lock:
            hit = self._entries.get(expression)
            if hit is not None:
                self._entries.move_to_end(expression)
                return hit
            key_lock = self._compiling.setdefault(expression, threading.Lock())
        # One compilation per expression at a time, as upstream's per-key mutex.
        with key_lock:
            with self._lock:
                hit = self._entries.get(expression)
                if hit is not None:
                    return hit
            try:
                selector = _compile(expression)
            finally:
                with self._lock:
                    self._compiling.pop(expression, None)
            with self._lock:
                self._entries[expression] = selector
                self._entries.move_to_end(expression)
                while len(self._entries) > self.size:
                    self._entries.popitem(last=False)
            return selector

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_cache = _Cache(4096)


def compile_selector(expression: str, deadline: float | None = None) -> Selector:
    """Compile (or fetch from the cache) a DRA CEL selector; raises CELCompileError.

    With a ``deadline``, AllocationTimeout if it has passed before or after compiling
    (one compilation is not interrupted: ~1 ms for a typical selector, up to ~0.1 s for
    one of the maximal 10 KiB); a selector compiled after the deadline stays cached.
    """
    check_deadline(deadline)
    selector = _cache.get_or_compile(expression)
    check_deadline(deadline)
    return selector


def clear_cache() -> None:
    _cache.clear()
