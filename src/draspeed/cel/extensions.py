"""cel-go extension libraries in the Kubernetes base environment, and the optional library.

- strings (version 2): charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace,
  split, substring, trim, join, strings.quote, format. Strings index by code point.
- lists (version 3): slice, flatten, sort, sortBy (macro), lists.range, reverse, distinct.
- sets: sets.contains, sets.intersects, sets.equivalent.
- optional: optional.of/none/ofNonZeroValue, hasValue, value, or, orValue.
- Kubernetes lists and regex libraries: isSorted, sum, min, max, indexOf, lastIndexOf,
  find, findAll.
"""

from __future__ import annotations

import heapq
import string
from itertools import pairwise
from typing import Any

from draspeed.cel.formatting import format_string
from draspeed.cel.functions import declare, register_guarded
from draspeed.cel.gosort import sort_slice
from draspeed.cel.meter import CHUNK, Ticker, current_meter, extend_ticking, ticking
from draspeed.cel.regex import compile_regex, find_all, search
from draspeed.cel.stdlib import ORDER_TYPES, add, compare
from draspeed.cel.values import (
    OPTIONAL_NONE,
    EvalError,
    Optional,
    UInt,
    cel_equal,
    format_value,
    go_int64,
    go_string,
    no_such_overload,
    not_a_list,
    not_an_int,
    refused_by_trait,
    type_name,
)
from draspeed.golang import GO_ESCAPES

# ---- strings ---------------------------------------------------------------------


def _str(v: Any) -> str:
    if type(v) is not str:
        raise no_such_overload()
    return v


def _int_arg(v: Any) -> int:
    if type(v) is not int:
        raise no_such_overload()
    return v


def char_at(s: Any, i: Any) -> str:
    s = _str(s)
    i = _int_arg(i)
    if i < 0 or i > len(s):
        raise EvalError(f"index out of range: {i}")
    return s[i] if i < len(s) else ""


def index_of(s: Any, sub: Any, *offset: Any) -> int:
    """cel-go's indexOf: an empty substring is found at the offset, whatever it is; an
    offset past the end finds nothing; a negative one (non-empty substring) is an error."""
    if type(s) is list or type(s) is tuple:
        return list_index_of(s, sub, *offset)
    s = _str(s)
    sub = _str(sub)
    off = _int_arg(offset[0]) if offset else 0
    if sub == "":
        return off
    if off < 0:
        raise EvalError(f"index out of range: {off}")
    if off >= len(s):
        return -1
    return s.find(sub, off)


def last_index_of(s: Any, sub: Any, *offset: Any) -> int:
    """cel-go's lastIndexOf (same offset rules as indexOf, searching backwards)."""
    if type(s) is list or type(s) is tuple:
        return list_last_index_of(s, sub, *offset)
    s = _str(s)
    sub = _str(sub)
    if not offset:
        if sub == "":
            return len(s)
        if len(s.encode()) < len(sub.encode()):
            return -1
        off = len(s) - 1
    else:
        off = _int_arg(offset[0])
    if sub == "":
        return off
    if off < 0:
        raise EvalError(f"index out of range: {off}")
    if off >= len(s):
        return -1
    off = min(off, len(s) - len(sub))
    if off < 0:
        return -1
    return s.rfind(sub, 0, off + len(sub))


_TO_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_TO_UPPER = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)


def lower_ascii(s: Any) -> str:
    return _str(s).translate(_TO_LOWER)


def upper_ascii(s: Any) -> str:
    return _str(s).translate(_TO_UPPER)


def replace(s: Any, old: Any, new: Any, n: Any = -1) -> str:
    s, old, new = _str(s), _str(old), _str(new)
    limit = _int_arg(n)
    count = (len(s) + 1) if old == "" else s.count(old)
    if limit >= 0:
        count = min(count, limit)
    # Charged by its input only, replace can grow a string manyfold: bounded by allocation.
    current_meter().reserve(len(s) + count * (len(new) - len(old)))
    return s.replace(old, new, limit if limit >= 0 else -1)


def split(s: Any, sep: Any, n: Any = -1) -> list[str]:
    s = _str(s)
    sep = _str(sep)
    limit = _int_arg(n)
    if limit == 0:
        return []
    if sep == "":
        chars = extend_ticking([], s)
        if limit > 0 and len(chars) > limit:
            return [*chars[: limit - 1], "".join(chars[limit - 1 :])]
        return chars
    if limit < 0:
        return s.split(sep)
    return s.split(sep, limit - 1)


def substring(s: Any, start: Any, *end: Any) -> str:
    s = _str(s)
    b = _int_arg(start)
    if end:
        e = _int_arg(end[0])
        if b > e:
            raise EvalError(f"invalid substring range. start: {b}, end: {e}")
        if b < 0 or b > len(s):
            raise EvalError(f"index out of range: {b}")
        if e < 0 or e > len(s):
            raise EvalError(f"index out of range: {e}")
        return s[b:e]
    if b < 0 or b > len(s):
        raise EvalError(f"index out of range: {b}")
    return s[b:]


# Go's unicode.IsSpace
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def trim(s: Any) -> str:
    return _str(s).strip(_GO_SPACE)


def join(items: Any, sep: Any = "") -> str:
    if type(items) is not list and type(items) is not tuple:
        raise no_such_overload()
    sep = _str(sep)
    for item in items:
        if type(item) is not str:
            raise EvalError(f"join: invalid input: {format_value(item)}")
    return sep.join(items)


_QUOTE = str.maketrans(GO_ESCAPES)


def quote(s: Any) -> str:
    return '"' + _str(s).translate(_QUOTE) + '"'


# ---- lists -----------------------------------------------------------------------


def _list(v: Any) -> list[Any] | tuple[Any, ...]:
    if type(v) is not list and type(v) is not tuple:
        raise no_such_overload()
    return v


def list_index_of(items: Any, value: Any, *extra: Any) -> int:
    if extra:
        raise no_such_overload()
    for i, item in enumerate(ticking(_list(items))):
        if _equal_true(item, value):
            return i
    return -1


def list_last_index_of(items: Any, value: Any, *extra: Any) -> int:
    if extra:
        raise no_such_overload()
    seq = _list(items)
    for i in ticking(range(len(seq) - 1, -1, -1)):
        if _equal_true(seq[i], value):
            return i
    return -1


def _equal_true(a: Any, b: Any) -> bool:
    """Kubernetes' ``Equal(...) == types.True``: an equality error is "not equal"."""
    try:
        return cel_equal(a, b)
    except EvalError:
        return False


_COMPARERS = (bool, bytes, float, int, str, UInt)


def _comparer(value: Any) -> Any:
    """cel-go's ``value.(traits.Comparer)`` check: no such overload for other types."""
    if type(value) in _COMPARERS or type(value) in ORDER_TYPES:
        return value
    raise no_such_overload()


def _compare_result(a: Any, b: Any) -> int | None:
    """Kubernetes' ``a.Compare(b)``: None where cel-go yields an error value (NaN, two
    unrelated types), which its callers treat as "neither less nor greater"."""
    try:
        return compare(a, b)
    except EvalError:
        return None


def is_sorted(items: Any) -> bool:
    seq = _list(items)
    for item in ticking(seq):
        _comparer(item)
    return all(_compare_result(prev, nxt) != 1 for prev, nxt in ticking(pairwise(seq)))


# The zero Kubernetes' sum of an empty list is, by the element type the checker resolved
# (the timestamps module adds durations).
SUM_ZEROS: dict[str, Any] = {"int": 0, "uint": UInt(0), "double": 0.0}


def list_sum(items: Any, zero: Any = 0) -> Any:
    """Kubernetes' sum; an empty list sums to ``zero``, the zero of the element type the
    checker resolved (int 0 when it is not known)."""
    seq = _list(items)
    if not seq:
        return zero
    acc = seq[0]
    for item in ticking(seq[1:]):
        acc = add(acc, item)
    return acc


def _extreme(name: str, prefer: int) -> Any:
    def pick(items: Any) -> Any:
        seq = _list(items)
        if not seq:
            raise EvalError(f"{name} called on empty list")
        best = _comparer(seq[0])
        for item in ticking(seq[1:]):
            _comparer(item)
            if _compare_result(best, item) == prefer:
                best = item
        return best

    return pick


def list_slice(items: Any, start: Any, end: Any) -> list[Any]:
    seq = _list(items)
    b = _int_arg(start)
    e = _int_arg(end)
    if b < 0 or e < 0:
        raise EvalError(f"cannot slice({b}, {e}), negative indexes not supported")
    if b > e:
        raise EvalError(
            f"cannot slice({b}, {e}), start index must be less than or equal to end index"
        )
    if len(seq) < e:
        raise EvalError(f"cannot slice({b}, {e}), list is length {len(seq)}")
    out: list[Any] = []
    for lo in range(b, e, CHUNK):  # a chunk at a time, looking at the deadline between
        out.extend(seq[lo : min(e, lo + CHUNK)])
        current_meter().tick()
    return out


def flatten(items: Any, *depth: Any) -> list[Any]:
    """lists' flatten (an optional depth), bound without type guards and called with
    CEL errors as values (non-strict, see NON_STRICT): it checks its arguments itself,
    in upstream's order (the depth is asserted to be an int before the list is looked
    at)."""
    if depth and type(depth[0]) is not int:
        raise not_an_int(depth[0])
    if isinstance(items, EvalError):
        raise items
    if type(items) is not list and type(items) is not tuple:
        shown = "map(dyn, dyn)" if isinstance(items, dict) else type_name(items)
        raise EvalError(f"no such overload: {shown}.flatten({'int' if depth else ''})")
    seq = items
    d: int = depth[0] if depth else 1
    if d < 0:
        raise EvalError("level must be non-negative")
    # Charged by its argument's size only, flatten can multiply a list: bounded here.
    current_meter().reserve(_flat_size(seq, d))
    return _flatten(seq, d)


def _flat_size(seq: Any, depth: int) -> int:
    if depth == 0:
        return len(seq)
    return sum(
        _flat_size(x, depth - 1) if type(x) is list or type(x) is tuple else 1 for x in ticking(seq)
    )


def _flatten(seq: Any, depth: int) -> list[Any]:
    out: list[Any] = []
    for item in ticking(seq):
        if (type(item) is list or type(item) is tuple) and depth > 0:
            extend_ticking(out, _flatten(item, depth - 1))
        else:
            out.append(item)
    return out


def sort_by_keys(items: list[Any], keys: list[Any]) -> list[Any]:
    if type(items) is not list and type(items) is not tuple:  # bound once, for lists
        raise refused_by_trait("@sortByAssociatedKeys", items)
    if len(items) != len(keys):
        raise EvalError(
            "@sortByAssociatedKeys() expected a list of the same size as the associated keys list, "
            f"but got {len(items)} and {len(keys)} elements respectively"
        )
    if not items:
        return items
    first = type(keys[0])
    if first not in (int, UInt, float, bool, str, bytes) and first not in ORDER_TYPES:
        raise EvalError("list elements must be comparable")
    meter = current_meter()
    for start in range(0, len(keys), CHUNK):
        if any(type(k) is not first for k in keys[start : start + CHUNK]):
            raise EvalError("list elements must have the same type")
        meter.tick()
    if first in _NATURAL and (items is keys or _distinct(keys)):
        order = _natural_order(keys)
    else:
        order = _go_order(keys)
    out: list[Any] = []
    for start in range(0, len(order), CHUNK):
        out.extend(map(items.__getitem__, order[start : start + CHUNK]))
        meter.tick()
    return out


# Key types Python orders as CEL does (a string's code-point order is its UTF-8 byte
# order) and whose equal keys are equal values: doubles are not (-0.0 == 0.0, NaN).
_NATURAL = (int, UInt, bool, str, bytes)


def _distinct(keys: list[Any]) -> bool:
    seen: set[Any] = set()
    meter = current_meter()
    for start in range(0, len(keys), CHUNK):
        seen.update(keys[start : start + CHUNK])
        meter.tick()
    return len(seen) == len(keys)


def _natural_order(keys: list[Any]) -> list[int]:
    """The order of ``keys`` by Python's own ordering: Go's sort.Slice leaves the same
    order where ties are indistinguishable (a plain sort) or absent. Sorted a chunk at
    a time and merged, looking at the deadline between (one C-level sort of millions
    of keys would not stop for it), and fast where Go's algorithm step by step is not."""
    n = len(keys)
    key = keys.__getitem__
    if n <= CHUNK:
        return sorted(range(n), key=key)
    meter = current_meter()
    runs = []
    for start in range(0, n, CHUNK):
        runs.append(sorted(range(start, min(n, start + CHUNK)), key=key))
        meter.tick()
    return list(ticking(heapq.merge(*runs, key=key)))


def _go_order(keys: list[Any]) -> list[int]:
    """Go's sort.Slice order of ``keys``: ties in its (unstable) order."""
    order = list(range(len(keys)))
    ticker = Ticker()

    def less(i: int, j: int) -> bool:
        ticker.step()
        # cel-go sorts with "Compare(...) == -1" as less: a NaN is never less.
        try:
            return compare(keys[order[i]], keys[order[j]]) == -1
        except EvalError:
            return False

    def swap(i: int, j: int) -> None:
        order[i], order[j] = order[j], order[i]

    sort_slice(len(order), less, swap)
    return order


def list_sort(items: Any) -> list[Any]:
    if type(items) is not list and type(items) is not tuple:
        raise refused_by_trait("sort", items)  # bound once upstream, for lists
    seq = list(items)
    return sort_by_keys(seq, seq)


def lists_range(n: Any) -> list[int]:
    # Charged by its size before it is built.
    return extend_ticking([], range(max(0, _int_arg(n))))


def list_reverse(items: Any) -> list[Any]:
    return _reversed(_list(items))


def _reversed(seq: Any) -> list[Any]:
    out: list[Any] = []
    for end in range(len(seq), 0, -CHUNK):  # a chunk at a time, looking at the deadline
        out.extend(seq[max(0, end - CHUNK) : end][::-1])
        current_meter().tick()
    return out


def distinct(items: Any) -> list[Any]:
    """lists' distinct: its argument is asserted to be a list, unchecked (and it is
    called with CEL errors as values, see NON_STRICT)."""
    if type(items) is not list and type(items) is not tuple:
        raise not_a_list(items)
    out: list[Any] = []
    ticker = Ticker()
    for item in items:
        ticker.step(len(out) + 1)
        if not any(cel_equal(item, seen) for seen in out):
            out.append(item)
    return out


# ---- sets ------------------------------------------------------------------------


def _member(x: Any, seq: Any, ticker: Ticker) -> bool:
    """cel-go's list Contains: a comparison that errors (an opaque value against
    another type) is no match."""
    ticker.step(len(seq) + 1)
    for y in seq:
        try:
            if cel_equal(x, y):
                return True
        except EvalError:
            continue
    return False


def _contains_all(a: Any, b: Any) -> bool:
    seq_a = _list(a)
    ticker = Ticker()
    return all(_member(y, seq_a, ticker) for y in _list(b))


def sets_contains(a: Any, b: Any) -> bool:
    return _contains_all(a, b)


def sets_equivalent(a: Any, b: Any) -> bool:
    return _contains_all(a, b) and _contains_all(b, a)


def sets_intersects(a: Any, b: Any) -> bool:
    seq_a = _list(a)
    ticker = Ticker()
    return any(_member(y, seq_a, ticker) for y in _list(b))


# ---- optional --------------------------------------------------------------------


def optional_of(v: Any) -> Optional:
    return Optional(True, v)


def optional_none() -> Optional:
    return OPTIONAL_NONE


def _is_zero(v: Any) -> bool:
    t = type(v)
    if t is bool:
        return v is False
    if t in (int, UInt, float):
        return v == 0
    if t in (str, bytes, list, tuple) or isinstance(v, dict):
        return len(v) == 0
    if v is None:
        return True
    zero = getattr(v, "cel_is_zero", None)
    if callable(zero):
        return bool(zero())
    return False


def optional_of_non_zero(v: Any) -> Optional:
    return OPTIONAL_NONE if _is_zero(v) else Optional(True, v)


def has_value(v: Any) -> bool:
    if type(v) is not Optional:
        raise no_such_overload()
    return v.has


def list_first(items: Any) -> Optional:
    seq = _list(items)
    return Optional(True, seq[0]) if seq else OPTIONAL_NONE


def list_last(items: Any) -> Optional:
    seq = _list(items)
    return Optional(True, seq[-1]) if seq else OPTIONAL_NONE


def optional_unwrap(items: Any) -> list[Any]:
    out: list[Any] = []
    for item in ticking(_list(items)):
        if type(item) is not Optional:
            raise EvalError(f"value {format_value(item)} is not optional")
        if item.has:
            out.append(item.value)
    return out


def optional_value(v: Any) -> Any:
    if type(v) is not Optional:
        raise no_such_overload()
    if not v.has:
        raise EvalError("optional.none() dereference")
    return v.value


# ---- Kubernetes regex ------------------------------------------------------------


def _compile_k8s(pattern: str) -> Any:
    try:
        return compile_regex(pattern)
    except EvalError as exc:
        raise EvalError(f"Illegal regex: {exc}") from None


# The regex library reads its arguments through their Go Value() (see go_value): the
# type guards, when a pattern is not a constant string, have checked their types.


def find(s: Any, pattern: Any) -> str:
    text, source = go_string(s), go_string(pattern)
    found = search(_compile_k8s(source), source, text)
    return text[found[0] : found[1]] if found is not None else ""


def find_all_fn(s: Any, pattern: Any, *n: Any) -> list[str]:
    source = go_string(pattern)
    limit = go_int64(n[0]) if n else -1
    return find_all(_compile_k8s(source), go_string(s), limit, source)


def _register() -> None:
    declare("m string charAt(int) -> string = string_char_at_int", char_at)
    # Kubernetes' list library is declared before cel-go's strings extension: a receiver
    # whose type is still free binds to list(A) first (measured with the oracle).
    declare(
        "m list(A) indexOf(A) -> int = list_a_index_of_int\n"
        "m string indexOf(string) -> int = string_index_of_string\n"
        "m string indexOf(string, int) -> int = string_index_of_string_int",
        index_of,
    )
    declare(
        "m list(A) lastIndexOf(A) -> int = list_a_last_index_of_int\n"
        "m string lastIndexOf(string) -> int = string_last_index_of_string\n"
        "m string lastIndexOf(string, int) -> int = string_last_index_of_string_int",
        last_index_of,
    )
    declare("m string lowerAscii() -> string = string_lower_ascii", lower_ascii)
    declare("m string upperAscii() -> string = string_upper_ascii", upper_ascii)
    declare(
        "m string replace(string, string) -> string = string_replace_string_string\n"
        "m string replace(string, string, int) -> string = string_replace_string_string_int",
        replace,
    )
    declare(
        "m string split(string) -> list(string) = string_split_string\n"
        "m string split(string, int) -> list(string) = string_split_string_int",
        split,
    )
    declare(
        "m string substring(int) -> string = string_substring_int\n"
        "m string substring(int, int) -> string = string_substring_int_int",
        substring,
    )
    declare("m string trim() -> string = string_trim", trim)
    declare(
        "m list(string) join() -> string = list_join\n"
        "m list(string) join(string) -> string = list_join_string",
        join,
    )
    declare("g strings.quote(string) -> string = strings_quote", quote)
    declare("m string format(list(dyn)) -> string = string_format", format_string)
    # lists ext (version 3)
    declare("m list(A) slice(int, int) -> list(A) = list_slice", list_slice)
    declare(
        "m list(list(A)) flatten() -> list(A) = list_flatten\n"
        "m list(dyn) flatten(int) -> list(dyn) = list_flatten_int",
        flatten,
    )
    sortable = ("int", "uint", "double", "bool", "string", "bytes", "duration", "timestamp")
    declare(
        "\n".join(f"m list({t}) sort() -> list({t}) = list_{_type_name(t)}_sort" for t in sortable),
        list_sort,
    )
    declare(
        "\n".join(
            f"m list(A) @sortByAssociatedKeys(list({t})) -> list(A)"
            f" = list_{_type_name(t)}_sortByAssociatedKeys"
            for t in sortable
        ),
        sort_by_keys,
    )
    declare("g lists.range(int) -> list(int) = lists_range", lists_range)
    declare("m list(A) reverse() -> list(A) = list_reverse", list_reverse)
    declare("m list(A) distinct() -> list(A) = list_distinct", distinct)
    # Kubernetes lists library
    declare(
        "\n".join(f"m list({t}) isSorted() -> bool = list_{t}_is_sorted_bool" for t in sortable),
        is_sorted,
    )
    declare(
        "\n".join(
            f"m list({t}) sum() -> {t} = list_{t}_sum_{t}"
            for t in ("int", "uint", "double", "duration")
        ),
        list_sum,
    )
    declare(
        "\n".join(f"m list({t}) min() -> {t} = list_{t}_min_{t}" for t in sortable),
        _extreme("min", 1),
    )
    declare(
        "\n".join(f"m list({t}) max() -> {t} = list_{t}_max_{t}" for t in sortable),
        _extreme("max", -1),
    )
    # sets
    declare("g sets.contains(list(A), list(A)) -> bool = list_sets_contains_list", sets_contains)
    declare(
        "g sets.equivalent(list(A), list(A)) -> bool = list_sets_equivalent_list", sets_equivalent
    )
    declare(
        "g sets.intersects(list(A), list(A)) -> bool = list_sets_intersects_list", sets_intersects
    )
    # optional
    declare("g optional.of(A) -> opt(A) = optional_of", optional_of)
    declare(
        "g optional.ofNonZeroValue(A) -> opt(A) = optional_ofNonZeroValue", optional_of_non_zero
    )
    declare("g optional.none() -> opt(A) = optional_none", optional_none)
    declare("m opt(A) hasValue() -> bool = optional_hasValue", has_value)
    declare("m opt(A) value() -> A = optional_value", optional_value)
    declare("m list(A) first() -> opt(A) = list_first", list_first)
    declare("m list(A) last() -> opt(A) = list_last", list_last)
    declare("g optional.unwrap(list(opt(A))) -> list(A) = optional_unwrap", optional_unwrap)
    declare("m list(opt(A)) unwrapOpt() -> list(A) = optional_unwrapOpt", optional_unwrap)
    declare("m opt(A) or(opt(A)) -> opt(A) = optional_or_optional")
    declare("m opt(A) orValue(A) -> A = optional_orValue_value")
    # Kubernetes regex library
    declare("m string find(string) -> string = string_find_string", find)
    declare(
        "m string findAll(string) -> list(string) = string_find_all_string\n"
        "m string findAll(string, int) -> list(string) = string_find_all_string_int",
        find_all_fn,
    )


def _type_name(t: str) -> str:
    """cel-go's TypeName of a sortable type, as it appears in overload ids."""
    return {"duration": "google.protobuf.Duration", "timestamp": "google.protobuf.Timestamp"}.get(
        t, t
    )


# The regex library's find and findAll (with a constant pattern, see the evaluator),
# and lists' distinct and flatten, check nothing first.
register_guarded(_register, unguarded=frozenset({"find", "findAll", "distinct", "flatten"}))
