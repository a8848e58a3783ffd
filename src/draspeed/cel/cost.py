"""cel-go's runtime cost model, as Kubernetes configures it for DRA selectors.

Facts from google/cel-go v0.27.0 (``interpreter/runtimecost.go``, ``common/cost.go``,
``ext/lists.go``, ``ext/sets.go``) and kubernetes/apiserver at the pinned commit
(``pkg/cel/library/cost.go``, ``pkg/cel/environment/base.go``). Upstream charges every
evaluation step through an observer: an identifier or attribute 1, each qualifier
(``.field``, ``[key]``) 1, a list literal 10, a map literal 30, a constant 0, ``&&``,
``||`` and ``?:`` nothing, and each function call what the first of three tables says:

1. :data:`OVERLOAD_TRACKERS` -- cel-go's per-overload trackers (lists extension v3, sets);
2. :data:`KUBERNETES_COSTS` -- the apiserver's ``CostEstimator.CallCost``, by function name;
3. :data:`DEFAULT_COSTS` -- cel-go's own per-overload costs; every other call costs 1.

The evaluator (:mod:`draspeed.cel.evaluator`) charges the same steps, into a
:class:`~draspeed.cel.meter.Meter`; this module holds the constants and the per-call
table. Calls are
charged *before* they run (upstream charges after): the cost of every rule follows
from the arguments (and, for ``join`` and the list builders, from a result size that is
computed without building the result), so a call that would exceed the limit stops
before doing its work or allocating its result. Arithmetic follows Go's: float64
products, ``math.Ceil`` where upstream rounds up, truncation where it converts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from draspeed.cel.meter import ticking
from draspeed.cel.values import DomainMap, EvalError, Optional

# common/cost.go
SELECT_AND_IDENT_COST = 1
LIST_CREATE_COST = 10
MAP_CREATE_COST = 30
STRING_TRAVERSAL_FACTOR = 0.1
REGEX_LENGTH_FACTOR = 0.25
CALL_COST = 1  # cel-go's callCost in the lists and sets extensions

# ---- sizes ---------------------------------------------------------------------------


def actual_size(value: Any) -> int:
    """cel-go's ``actualSize``: the size of strings (code points), bytes, lists and maps;
    an optional's value; 1 for everything else (errors included)."""
    t = type(value)
    if t is str or t is bytes or t is list or t is tuple or t is dict or t is DomainMap:
        return len(value)
    if t is Optional and value.has:
        return actual_size(value.value)
    return 1


def traversal_cost(value: Any) -> int:
    """The apiserver's ``traversalCost``: strings and bytes at 0.1 per byte (truncated),
    lists and maps the sum over their elements (keys included), anything else 1."""
    t = type(value)
    if t is str:
        return int(len(value.encode("utf-8", "surrogatepass")) * STRING_TRAVERSAL_FACTOR)
    if t is bytes:
        return int(len(value) * STRING_TRAVERSAL_FACTOR)
    if t is list or t is tuple:
        return sum(traversal_cost(v) for v in ticking(value))
    if t is dict or t is DomainMap:
        return sum(traversal_cost(k) + traversal_cost(v) for k, v in ticking(value.items()))
    return 1


def _is_error(value: Any) -> bool:
    return isinstance(value, EvalError)


# ---- result sizes of the calls charged by their result -------------------------------


def join_size(args: Sequence[Any]) -> int:
    """Size of ``list.join([sep])``'s result, or 1 (an error's size) if it fails."""
    items = args[0]
    sep = args[1] if len(args) > 1 else ""
    if type(items) is not list and type(items) is not tuple:
        return 1
    if type(sep) is not str or any(type(s) is not str for s in items):
        return 1
    if not items:
        return 0
    return sum(len(s) for s in items) + len(sep) * (len(items) - 1)


def _range_size(args: Sequence[Any]) -> int:
    n = args[0]
    return max(0, n) if type(n) is int else 1


def _slice_size(args: Sequence[Any]) -> int:
    items, start, end = args
    if (type(items) is not list and type(items) is not tuple) or any(
        type(x) is not int for x in (start, end)
    ):
        return 1
    if start < 0 or end < 0 or start > end or end > len(items):
        return 1
    return end - start


def _reverse_size(args: Sequence[Any]) -> int:
    items = args[0]
    return len(items) if type(items) is list or type(items) is tuple else 1


# ---- 1. cel-go's overload trackers (lists extension v3, sets) -------------------------

CostRule = Callable[[str, Sequence[Any]], int | None]


def _allocating_list(factor: float, size: int) -> int:
    """``trackAllocatingListCall``: truncated ``size * factor`` plus call and list cost."""
    return int(size * factor) + CALL_COST + LIST_CREATE_COST


def _self_compare(items: Any) -> int:
    """``trackListSelfCompare``: O(n^2) over a list, a little more for strings/bytes."""
    if type(items) is not list and type(items) is not tuple:
        return _allocating_list(2.0, 1)  # upstream would fail its type assertion
    size = len(items)
    if size == 0:
        return _allocating_list(2.0, 0)
    factor = 2.0
    if type(items[0]) is str or type(items[0]) is bytes:
        factor += STRING_TRAVERSAL_FACTOR
    return _allocating_list(factor, size * size)


def _flatten_cost(_: str, args: Sequence[Any]) -> int:
    depth = args[1] if len(args) == 2 else 1
    product = actual_size(args[0]) * float(depth if type(depth) is int else 1)
    if product < 0:  # Go converts a negative float64 to uint64 by wrapping
        return (int(product) + CALL_COST + LIST_CREATE_COST) % (1 << 64)
    return int(product) + CALL_COST + LIST_CREATE_COST


def _sets_cost(factor: float) -> CostRule:
    def rule(_: str, args: Sequence[Any]) -> int:
        return CALL_COST + int(actual_size(args[0]) * actual_size(args[1]) * factor)

    return rule


# cel-go names the sort overloads after the type names of its comparable types.
_COMPARABLE = (
    "int",
    "uint",
    "double",
    "bool",
    "google.protobuf.Duration",
    "google.protobuf.Timestamp",
    "string",
    "bytes",
)

OVERLOAD_TRACKERS: dict[str, CostRule] = {
    "list_slice": lambda _, a: _allocating_list(1, _slice_size(a)),
    "lists_range": lambda _, a: _allocating_list(1, _range_size(a)),
    "list_reverse": lambda _, a: _allocating_list(1, _reverse_size(a)),
    "list_flatten": _flatten_cost,
    "list_flatten_int": _flatten_cost,
    "list_distinct": lambda _, a: _self_compare(a[0]),
    **{f"list_{t}_sort": (lambda _, a: _self_compare(a[0])) for t in _COMPARABLE},
    **{f"list_{t}_sortByAssociatedKeys": (lambda _, a: _self_compare(a[1])) for t in _COMPARABLE},
    "list_sets_contains_list": _sets_cost(1),
    "list_sets_intersects_list": _sets_cost(1),
    "list_sets_equivalent_list": _sets_cost(2),
}

# ---- 2. the apiserver's CostEstimator.CallCost (by function name) ----------------------


def _string_traversal(times: int) -> CostRule:
    """``math.Ceil(float64(size(args[0])) [* 2] * 0.1)``, in Go's evaluation order."""

    def rule(_: str, args: Sequence[Any]) -> int | None:
        if not args:
            return None
        size = actual_size(args[0])
        if times == 1:
            return math.ceil(size * STRING_TRAVERSAL_FACTOR)
        return math.ceil(size * times * STRING_TRAVERSAL_FACTOR)

    return rule


def _traversal(_: str, args: Sequence[Any]) -> int:
    return traversal_cost(args[0]) if args else 0


def _join_cost(_: str, args: Sequence[Any]) -> int | None:
    if not args:
        return None
    size = 1 if any(_is_error(a) for a in args) else join_size(args)
    return math.ceil(size * 2 * STRING_TRAVERSAL_FACTOR)


def _regex_product(_: str, args: Sequence[Any]) -> int | None:
    if len(args) < 2:
        return None
    text_cost = math.ceil((1.0 + actual_size(args[0])) * STRING_TRAVERSAL_FACTOR)
    regex_cost = math.ceil(actual_size(args[1]) * REGEX_LENGTH_FACTOR)
    return text_cost * regex_cost


def _ip_cost(overload: str, args: Sequence[Any]) -> int | None:
    if not args:
        return None
    if overload == "cidr_ip":
        return 1
    return math.ceil(actual_size(args[0]) * STRING_TRAVERSAL_FACTOR)


def _contains_ip_cost(overload: str, args: Sequence[Any]) -> int | None:
    if len(args) < 2:
        return None
    cidr_size = actual_size(args[0])
    cost = math.ceil((cidr_size + cidr_size) * STRING_TRAVERSAL_FACTOR)
    if overload == "cidr_contains_ip_string":
        cost += math.ceil(actual_size(args[1]) * STRING_TRAVERSAL_FACTOR)
    return cost


def _contains_cidr_cost(overload: str, args: Sequence[Any]) -> int | None:
    if len(args) < 2:
        return None
    cidr_size = actual_size(args[0])
    cost = math.ceil((cidr_size + cidr_size) * STRING_TRAVERSAL_FACTOR)
    cost += math.ceil(cidr_size * STRING_TRAVERSAL_FACTOR) + 1
    if overload == "cidr_contains_cidr_string":
        cost += math.ceil(actual_size(args[1]) * STRING_TRAVERSAL_FACTOR)
    return cost


def _validate_cost(_: str, args: Sequence[Any]) -> int | None:
    """A named format's ``validate``: priced as a regex match of the format's own
    ``MaxRegexSize`` (upstream does not look into the checks it runs)."""
    if len(args) < 2:
        return None
    regex_size = getattr(args[0], "max_regex_size", None)  # a NamedFormat receiver
    if type(regex_size) is not int:
        return None
    text_cost = math.ceil((1.0 + actual_size(args[1])) * STRING_TRAVERSAL_FACTOR)
    return text_cost * math.ceil(regex_size * REGEX_LENGTH_FACTOR)


def _nominal(_: str, args: Sequence[Any]) -> int:
    return 1


def selector_cost(length: int) -> int:
    """The apiserver's cost of parsing a field or label selector of ``length`` characters:
    a list (10), the traversal, and a struct and list (50) per two characters."""
    parse = math.ceil(length * STRING_TRAVERSAL_FACTOR)
    requirements = math.ceil(math.ceil(length * 0.5) * float(LIST_CREATE_COST + 40))
    return LIST_CREATE_COST + parse + requirements


def _selector(_: str, args: Sequence[Any]) -> int | None:
    return selector_cost(actual_size(args[1])) if len(args) >= 2 else None


# Value classes whose == the apiserver charges 1 (filled by the library modules).
UNIT_EQUALITY_TYPES: set[type] = set()


def _k8s_equality(_: str, args: Sequence[Any]) -> int | None:
    if len(args) == 2 and type(args[0]) in UNIT_EQUALITY_TYPES:
        return 1
    return None


# Kubernetes library functions that cost 1 per call, at run time and in the estimate:
# IP accessors, the format lookup, Quantity and Semver methods, URL accessors.
LIBRARY_NOMINAL = frozenset(
    {
        "masked",
        "prefixLength",
        "family",
        "isUnspecified",
        "isLoopback",
        "isLinkLocalMulticast",
        "isLinkLocalUnicast",
        "isGlobalUnicast",
        "format.named",
        "sign",
        "asInteger",
        "isInteger",
        "asApproximateFloat",
        "isGreaterThan",
        "isLessThan",
        "compareTo",
        "add",
        "sub",
        "major",
        "minor",
        "patch",
        "getScheme",
        "getHostname",
        "getHost",
        "getPort",
        "getEscapedPath",
        "getQuery",
    }
)

# The authorizer library's builders and accessors, 1 per call.
AUTHORIZER_NOMINAL = (
    "serviceAccount",
    "path",
    "group",
    "resource",
    "subresource",
    "namespace",
    "name",
    "allowed",
    "reason",
    "error",
    "errored",
)

KUBERNETES_COSTS: dict[str, CostRule] = {
    # Authorizer library: a check is priced to allow two per expression.
    "check": lambda _, args: 350_000,
    **dict.fromkeys(AUTHORIZER_NOMINAL, _nominal),
    "fieldSelector": _selector,
    "labelSelector": _selector,
    **dict.fromkeys(("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"), _traversal),
    **dict.fromkeys(
        ("url", "lowerAscii", "upperAscii", "substring", "trim", "jsonpatch.escapeKey"),
        _string_traversal(1),
    ),
    **dict.fromkeys(("replace", "split"), _string_traversal(2)),
    "join": _join_cost,
    "find": _regex_product,
    "findAll": _regex_product,
    **dict.fromkeys(("cidr", "isIP", "isCIDR"), _string_traversal(1)),
    "ip": _ip_cost,
    "ip.isCanonical": _string_traversal(2),
    "containsIP": _contains_ip_cost,
    "containsCIDR": _contains_cidr_cost,
    **dict.fromkeys(
        ("quantity", "isQuantity", "semver", "isSemver"),
        _string_traversal(1),
    ),
    "validate": _validate_cost,
    **dict.fromkeys(LIBRARY_NOMINAL, _nominal),
    "_==_": _k8s_equality,
}

# ---- 3. cel-go's defaults (by overload id) ---------------------------------------------


def _first_string(_: str, args: Sequence[Any]) -> int:
    return math.ceil(actual_size(args[0]) * STRING_TRAVERSAL_FACTOR)


def _in_list(_: str, args: Sequence[Any]) -> int:
    return actual_size(args[1])


# Comparisons cel-go prices by the smaller operand's size (at run time and estimated).
SIZE_COMPARISONS = frozenset(
    {
        "less_string",
        "greater_string",
        "less_equals_string",
        "greater_equals_string",
        "less_bytes",
        "greater_bytes",
        "less_equals_bytes",
        "greater_equals_bytes",
        "equals",
        "not_equals",
    }
)


def _min_size(_: str, args: Sequence[Any]) -> int:
    return math.ceil(min(actual_size(args[0]), actual_size(args[1])) * STRING_TRAVERSAL_FACTOR)


def _sum_size(_: str, args: Sequence[Any]) -> int:
    return math.ceil((actual_size(args[0]) + actual_size(args[1])) * STRING_TRAVERSAL_FACTOR)


def _matches(_: str, args: Sequence[Any]) -> int:
    text_cost = math.ceil((1.0 + actual_size(args[0])) * STRING_TRAVERSAL_FACTOR)
    return text_cost * math.ceil(actual_size(args[1]) * REGEX_LENGTH_FACTOR)


def _contains(_: str, args: Sequence[Any]) -> int:
    text_cost = math.ceil(actual_size(args[0]) * STRING_TRAVERSAL_FACTOR)
    return text_cost * math.ceil(actual_size(args[1]) * STRING_TRAVERSAL_FACTOR)


DEFAULT_COSTS: dict[str, CostRule] = {
    **dict.fromkeys(
        (
            "starts_with_string",
            "ends_with_string",
            "string_to_bytes",
            "bytes_to_string",
            "strings_quote",
            "string_format",
        ),
        _first_string,
    ),
    "in_list": _in_list,
    **dict.fromkeys(SIZE_COMPARISONS, _min_size),
    "add_string": _sum_size,
    "add_bytes": _sum_size,
    "matches_string": _matches,
    "contains_string": _contains,
}


def call_cost(function: str, overload: str, args: Sequence[Any]) -> int:
    """What upstream charges for one call of ``function`` (``overload``: the overload id
    the checker resolved, or "" when several matched) on ``args`` (error arguments are
    passed as their EvalError). Calls whose cost depends on their result compute its
    size from the arguments."""
    if overload:
        tracker = OVERLOAD_TRACKERS.get(overload)
        if tracker is not None:
            cost = tracker(overload, args)
            if cost is not None:
                return cost
    k8s = KUBERNETES_COSTS.get(function)
    if k8s is not None:
        cost = k8s(overload, args)
        if cost is not None:
            return cost
    default = DEFAULT_COSTS.get(overload)
    if default is not None:
        cost = default(overload, args)
        if cost is not None:
            return cost
    return 1


def has_constant_cost(function: str, overload: str) -> bool:
    """True if every call of this function/overload costs 1 whatever its arguments."""
    if overload and overload in OVERLOAD_TRACKERS:
        return False
    k8s = KUBERNETES_COSTS.get(function)
    if k8s is not None and k8s is not _nominal:
        return False
    return overload not in DEFAULT_COSTS
