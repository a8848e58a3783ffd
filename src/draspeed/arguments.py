"""Checks of what callers pass to draspeed's public entry points.

A wrong type is a :class:`TypeError`, a wrong value a :class:`ValueError`, each naming
the argument (and the item, ``slices[3]``), before anything deeper could fail with an
``AttributeError`` or ``KeyError`` about draspeed's insides. A ``str`` where a
sequence is expected is never taken as a sequence of its characters.

Deadlines are ``time.monotonic()`` values: ``None`` is no bound, and so is one further
away than the compiled core can count (``inf``, or beyond its int64 nanoseconds);
NaN has no meaning and is refused. Timeouts are seconds from now, ``None`` or ``0``
no bound.
"""

from __future__ import annotations

import math
import operator
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

T = TypeVar("T")

# Beyond this many seconds from now a deadline is no bound: the compiled core counts in
# int64 nanoseconds (about 292 years); a century is comfortably inside.
_FOREVER = 100 * 365 * 24 * 3600.0


def instance_of(value: Any, cls: type[T], name: str, what: str) -> T:
    """``value`` if it is a ``cls``, else a TypeError naming ``name``."""
    if not isinstance(value, cls):
        raise TypeError(f"{name}: expected {what}, got {_type(value)}")
    return value


def items_of(value: Any, cls: type[T] | tuple[type, ...], name: str, what: str) -> list[T]:
    """A list of the ``cls`` items of a sequence (or any iterable but a string, bytes or
    a mapping); one ``cls`` alone counts as a sequence of one (``cls`` may be a tuple of
    types, as ``isinstance`` takes: a str or a mapping among them is one item). Else a
    TypeError naming ``name`` (or the item: ``name[i]``)."""
    if isinstance(value, cls):
        return [cast("T", value)]
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{name}: expected {what} (a sequence of them), got {_type(value)}")
    out = list(value)
    exact = set(cls) if isinstance(cls, tuple) else {cls}
    if set(map(type, out)) <= exact:  # the usual case, told without a Python loop
        return out
    for i, item in enumerate(out):
        if not isinstance(item, cls):
            raise TypeError(f"{name}[{i}]: expected {what}, got {_type(item)}")
    return out


def names_or_items(value: Any, cls: type[T], name: str, what: str) -> list[T | str]:
    """Like :func:`items_of`, but names (strings) stand for items too; a single name is
    one item, not a sequence of its characters."""
    if isinstance(value, (str, cls)):
        return [value]
    if isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(
            f"{name}: expected {what} or names (a sequence of them), got {_type(value)}"
        )
    out = list(value)
    if set(map(type, out)) <= {str, cls}:  # the usual case, told without a Python loop
        return out
    for i, item in enumerate(out):
        if not isinstance(item, (str, cls)):
            raise TypeError(f"{name}[{i}]: expected {what} or a name, got {_type(item)}")
    return out


def names(value: str | Iterable[str], name: str = "names") -> tuple[str, ...]:
    """Names given as a sequence of them, or one name alone (a str is one name, not a
    sequence of its characters). Else a TypeError naming ``name`` (or the item)."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(
            f"{name}: expected a name or names (a sequence of them), got {_type(value)}"
        )
    out = tuple(value)
    for i, item in enumerate(out):
        if not isinstance(item, str):
            raise TypeError(f"{name}[{i}]: expected a name, got {_type(item)}")
    return out


def text(value: Any, name: str, what: str = "a str") -> str:
    """``value`` if it is a str, else a TypeError naming ``name``."""
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected {what}, got {_type(value)}")
    return value


def one_of(value: Any, allowed: Iterable[str], name: str, what: str) -> str:
    """``value`` if it is one of ``allowed``, else a ValueError naming ``name`` and
    listing the allowed values."""
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name}: unknown {what} {value!r}; expected one of {', '.join(allowed)}")
    return value


def whole(value: Any, name: str, least: int | None = 0) -> int:
    """``value`` if it is a whole number (not a bool, not a float) of at least ``least``
    (None: any), else a TypeError or ValueError naming ``name``."""
    try:
        number = operator.index(value)  # (int, numpy's ints; not a float: 1.5 is no count)
    except TypeError:
        number = None
    if number is None or isinstance(value, bool):
        raise TypeError(f"{name}: expected a whole number, got {_type(value)}")
    if least is not None and number < least:
        raise ValueError(f"{name}: expected a whole number >= {least}, got {value!r}")
    return number


def function(value: Any, name: str) -> Any:
    """``value`` if it is None or callable, else a TypeError naming ``name``."""
    if value is not None and not callable(value):
        raise TypeError(f"{name}: expected a function, got {_type(value)}")
    return value


def time_limit(value: Any, name: str = "time_limit") -> float | None:
    """A solver's time limit: None (no limit) or seconds > 0 (``inf``: no limit)."""
    if value is None:
        return None
    seconds = _seconds(value, name)
    if not seconds > 0:  # (NaN too)
        raise ValueError(f"{name}: expected seconds > 0 (None: no limit), got {value!r}")
    return value


def unique(
    items: list[T],
    key: Callable[[T], str],
    name: str,
    what: str,
    names_of: Callable[[list[T]], list[str]] | None = None,
) -> list[T]:
    """``items`` with repeats of an equal object dropped; two different objects of one
    name (``key``) are a ValueError naming both positions, as the API server keeps one
    object per kind, namespace and name. ``names_of``: every item's name in one call
    (the items' ``key`` otherwise)."""
    keys = _names(items, key, names_of)
    if len(set(keys)) == len(keys):  # no repeats (the usual case): nothing to compare
        return items
    return list(_without_repeats(items, keys, name, what).values())


def by_name(
    items: list[T],
    key: Callable[[T], str],
    name: str,
    what: str,
    names_of: Callable[[list[T]], list[str]] | None = None,
) -> dict[str, T]:
    """``items`` by name, in their order, checked as :func:`unique` checks them. One
    walk reads the names and files them (each name read again later is a cache miss
    per object: 5,000 Nodes, about 1 ms a walk)."""
    keys = _names(items, key, names_of)
    found = dict(zip(keys, items, strict=True))
    if len(found) == len(keys):
        return found
    return _without_repeats(items, keys, name, what)


def _names(
    items: list[T], key: Callable[[T], str], names_of: Callable[[list[T]], list[str]] | None
) -> list[str]:
    return list(map(key, items)) if names_of is None else names_of(items)


def _without_repeats(items: list[T], keys: list[str], name: str, what: str) -> dict[str, T]:
    """``items`` by their ``keys``, the first of equal repeats kept; different ones of
    one name refused."""
    first: dict[str, int] = {}
    for i, (item, k) in enumerate(zip(items, keys, strict=True)):
        j = first.setdefault(k, i)
        if j != i and items[j] != item:
            raise ValueError(
                f"{name}[{j}] and {name}[{i}]: two different {what} named {k!r} "
                "(one object per name, as the API server keeps them)"
            )
    return {k: items[i] for k, i in first.items()}


def flag(value: Any, name: str) -> bool:
    """``value`` if it is a bool (not merely truthy: ``"no"`` is a mistake), else a
    TypeError naming ``name``."""
    if not isinstance(value, bool):
        raise TypeError(f"{name}: expected True or False, got {_type(value)}")
    return value


def deadline(value: Any, name: str = "deadline") -> float | None:
    """A deadline as the engines take it: None (no bound) or a finite monotonic time."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"{name}: expected a time.monotonic() value in seconds or None, got {_type(value)}"
        )
    try:
        seconds = float(value)
    except OverflowError:  # an int beyond any float: beyond any wait too
        return None if value > 0 else -_FOREVER
    if math.isnan(seconds):
        raise ValueError(f"{name}: must not be NaN")
    if seconds - time.monotonic() > _FOREVER:
        return None
    return max(seconds, -_FOREVER)


def timeout(value: Any, name: str = "timeout") -> float | None:
    """A timeout in seconds as the engines take it: None or 0 (no bound), or positive."""
    if value is None:
        return None
    seconds = _seconds(value, name)
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(f"{name}: expected seconds (0 or None: no bound), got {value!r}")
    if seconds == 0 or seconds > _FOREVER:
        return None
    return seconds


def _seconds(value: Any, name: str) -> float:
    """A number of seconds as a float (an int beyond any float is infinite), else a
    TypeError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: expected seconds or None, got {_type(value)}")
    try:
        return float(value)
    except OverflowError:  # an int beyond any float
        return math.inf if value > 0 else -math.inf


def type_name(value: Any) -> str:
    """How a message names the type of ``value`` (``None`` for None)."""
    return "None" if value is None else type(value).__name__


_type = type_name
