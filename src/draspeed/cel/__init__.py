"""The Kubernetes DRA CEL environment for device selectors.

``compile_selector(expr)`` compiles (and caches) a selector the way
kubernetes/dynamic-resource-allocation ``cel/compile.go`` does with the
StoredExpressions environment; ``device_input(driver, device)`` builds the ``device``
variable once per device; ``Selector.matches(dev)`` evaluates one device and
``Selector.evaluate(table)`` evaluates a whole :class:`DeviceTable` with numpy.

What cel-python (celpy) provides and draspeed uses: its lark grammar for CEL
(``celpy/cel.lark``), which :mod:`draspeed.cel.grammar` derives from, parsed with lark
(a celpy dependency), and google-re2 (also a celpy dependency) for RE2 regular
expressions. celpy's evaluator is not used:
it lacks cel.bind, optional syntax, the string extensions and heterogeneous equality.

What draspeed adds: the AST with cel-go's macro expansion (has, all, exists,
exists_one, map, filter, two-variable comprehensions, transformList/Map/MapEntry,
sortBy, cel.bind, optMap/optFlatMap), signed literals, cel-go-formatted errors; a type
checker as cel-go's (one type substitution per expression, overloads with fresh type
variables, undeclared references, result type bool/dyn) followed by Kubernetes' AST
validators (homogeneous literals, duration/timestamp/regex literals, the format
validator); the build-time failures of cel.OptOptimize (constant conversions that fail);
an evaluator with int64/uint64 overflow checks, heterogeneous equality, cel-go's
cross-type numeric ordering, typed map keys (1, 1u, 1.0 and true are different keys),
commutative ``&&``/``||`` error absorption, optionals (``?.``, ``[?]``, ``optional.*``,
``orValue``, first/last/unwrap...), cel-go's runtime cost model charged exactly as
upstream charges it, with its limit of 1,000,000 (:mod:`draspeed.cel.cost`), the
worst-case estimate the API server checks (:mod:`draspeed.cel.estimate`), and the
caller's deadline checked inside evaluation (:mod:`draspeed.cel.meter`); the libraries:
standard functions and conversions, timestamps and durations
(:mod:`draspeed.cel.timestamps`), strings extension v2 (charAt, indexOf, lastIndexOf,
lowerAscii, upperAscii, replace, split, substring, trim, join, strings.quote, format as
version 2 formats), lists extension v3 (slice, flatten, sort, sortBy, lists.range,
reverse, distinct), sets extension, Kubernetes lists (isSorted, sum, min, max, indexOf,
lastIndexOf), regex (matches, find, findAll), Quantity, Semver, IP and CIDR, URL
(approximate: parsed with urllib, not Go's net/url), the ``format`` named-format library
(:mod:`draspeed.cel.formats`), the authorizer library's declarations (no value of its
types exists in a selector) and DRA's ``includes``.
Message construction (``Name{field: value}``) is judged as cel-go judges it where the
name is no message type (an undeclared reference, or "not a message type"); protobuf's
well-known messages that cel-go builds (``google.protobuf.Int64Value{value: 1}``,
``list{}``, ``null_type{}``) are not provided: a compile error says so.
:mod:`draspeed.cel.program` compiles expressions with other declared variables (the
cel-spec conformance tests use it).
"""

from __future__ import annotations

from draspeed.cel.deadline import check_deadline
from draspeed.cel.device import DeviceInput, device_input
from draspeed.cel.lalr import parser as _parser
from draspeed.cel.selector import Selector, clear_cache, compile_selector
from draspeed.cel.table import DeviceTable

# ``draspeed.cel.compile(expression)``, like ``re.compile``: the name the docs use.
compile = compile_selector


def warm_up() -> None:
    """Build the CEL parser now (~15 ms: its tables and terminal patterns), so that
    the first compilation -- often inside a call with a deadline -- costs ~1 ms.
    Importing this package already did it; calling it again costs nothing."""
    _parser()


warm_up()

__all__ = [
    "DeviceInput",
    "DeviceTable",
    "Selector",
    "check_deadline",
    "clear_cache",
    "compile",
    "compile_selector",
    "device_input",
    "warm_up",
]
