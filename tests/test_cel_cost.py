"""cel-go's cost model: what each evaluation is charged, and the worst-case estimate.

- Runtime: every case of tests/data/cel/costs.yaml (measured with the upstream allocator)
  costs what upstream charged, gives upstream's outcome, and the vector path agrees;
  every rule of the cost table is exercised by some case.
- Estimate: every expected cost of upstream's DRA compile tests (tests/data/cel/
  estimates.yaml) is what draspeed estimates.
- Costs are charged before the work: results the limit forbids are never built.
"""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml

from draspeed.api.model import Device, DeviceAttribute, DeviceCapacity
from draspeed.cel import DeviceTable, compile_selector, device_input
from draspeed.cel import cost as C
from draspeed.cel.ast import Call, Comprehension, Node, children
from draspeed.errors import CELRuntimeError
from draspeed.quantity import Quantity

DATA = Path(__file__).parent / "data" / "cel"
COSTS = yaml.safe_load((DATA / "costs.yaml").read_text())
ESTIMATES = yaml.safe_load((DATA / "estimates.yaml").read_text())["cases"]
LIMIT_ERROR = "operation cancelled: actual cost limit exceeded"


def _device() -> tuple[str, Device]:
    spec = COSTS["device"]
    driver = spec["driver"]
    attributes = {}
    for name, value in spec["attributes"].items():
        ((kind, raw),) = value.items()
        if kind in ("strings", "ints"):
            raw = tuple(raw)
        attributes[f"{driver}/{name}"] = DeviceAttribute(kind, raw)
    capacity = {
        f"{driver}/{name}": DeviceCapacity(Quantity.parse(str(q)))
        for name, q in spec["capacity"].items()
    }
    return driver, Device(name=spec["name"], attributes=attributes, capacity=capacity)


DRIVER, DEVICE = _device()
INPUT = device_input(DRIVER, DEVICE)


def _outcome(case: dict[str, Any]) -> Any:
    out = case["outcome"]
    return ("error", out["error"]) if isinstance(out, dict) else out


@pytest.mark.parametrize("case", COSTS["cases"], ids=lambda c: c["expr"][:70])
def test_runtime_cost_is_cel_gos(case: dict[str, Any]) -> None:
    selector = compile_selector(case["expr"])
    assert selector.cost(INPUT.value) == case["cost"]
    try:
        got: Any = selector.matches(INPUT)
    except CELRuntimeError as exc:
        got = ("error", str(exc))
    assert got == _outcome(case)
    match, error, messages = selector.evaluate(DeviceTable.build([(DRIVER, DEVICE)]))
    assert (("error", messages[0]) if error[0] else bool(match[0])) == got


# Cost rules no selector of draspeed's environment can reach: a JSON-patch function
# (not in the base environment).
UNREACHABLE = {
    "jsonpatch.escapeKey",
    # Authorizer values never exist in a DRA selector: only a dyn receiver reaches these
    # rules, and they are the nominal cost of 1 (tested through `check`).
    *C.AUTHORIZER_NOMINAL,
    "fieldSelector",
    "labelSelector",
}


def _calls(node: Node) -> list[tuple[str, tuple[str, ...]]]:
    found: list[tuple[str, tuple[str, ...]]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Call):
            found.append((n.function, n.overloads))
        if isinstance(n, Comprehension) and n.kind == "sortBy":
            found.append(("@sortByAssociatedKeys", n.overloads))
        stack.extend(children(n))
    return found


def test_every_cost_rule_is_measured() -> None:
    """Each rule of the cost table (cel-go's trackers and defaults, the apiserver's
    estimator) is exercised by a measured case."""
    seen_functions: set[str] = set()
    seen_overloads: set[str] = set()
    for case in COSTS["cases"]:
        for function, overloads in _calls(compile_selector(case["expr"]).ast):
            seen_functions.add(function)
            if len(overloads) == 1:
                seen_overloads.add(overloads[0])
    seen_overloads |= {"equals", "not_equals"} if "_==_" in seen_functions else set()
    rules = set(C.OVERLOAD_TRACKERS) | set(C.DEFAULT_COSTS)
    missing = {r for r in rules if r not in seen_overloads} - UNREACHABLE
    missing |= {f for f in C.KUBERNETES_COSTS if f not in seen_functions} - UNREACHABLE - {"check"}
    assert not missing, f"cost rules without a measured case: {sorted(missing)}"


def test_authorizer_check_is_priced_even_on_a_dyn_receiver() -> None:
    selector = compile_selector('dyn(1).check("x").allowed()')
    assert selector.cost({}) == 350_000 + 1  # check, allowed; dyn(1) is folded (measured)
    with pytest.raises(CELRuntimeError, match=r"^no such overload: check\(int, string\)$"):
        selector.evaluate_value({})


@pytest.mark.parametrize("case", ESTIMATES, ids=lambda c: c["name"])
def test_estimate_is_upstreams(case: dict[str, Any]) -> None:
    assert compile_selector(case["expr"]).max_cost == case["max_cost"]


@pytest.mark.parametrize(
    ("expr", "max_cost"),
    [
        # has() guards bound the size by DRA's limits (attribute values: 64)...
        ('has(device.attributes["d"].ids) && device.attributes["d"].ids.exists(x, x > 1)', 392),
        # ... an optional's orValue([]) does not: the estimate is unbounded.
        ('device.attributes["d"].?ids.orValue([]).exists(x, x > 1)', (1 << 64) - 1),
        # range 21, map: [] 10 + result 1 + 10 steps of 14; size 1; == 1.
        ("lists.range(10).map(x, x * 2).size() == 10", 174),
        # arguments 10 + 4; sets: 2 x 64 + 1.
        ('sets.contains(["a", "b"], device.attributes["d"].tags)', 143),
    ],
)
def test_estimate_bounds(expr: str, max_cost: int) -> None:
    assert compile_selector(expr).max_cost == max_cost


# ---- charged before building ------------------------------------------------------


def _doublings(n: int, step: str) -> str:
    """``n`` nested cel.bind doublings of a one-character string or list ``s0``."""
    expr = f"s{n}.size() > 0"
    for i in range(n, 0, -1):
        expr = f"cel.bind(s{i}, {step.format(p=f's{i - 1}')}, {expr})"
    return expr


@pytest.mark.parametrize(
    "expr",
    [
        # join is charged by the size of its result: 40 doublings stop at the limit.
        'cel.bind(s0, "x", ' + _doublings(40, "[{p}, {p}].join()") + ")",
        # sets.contains is charged size x size: refused before comparing anything.
        "sets.contains(lists.range(20000), lists.range(20000))",
        # list concatenation and string concatenation of dyn values cost 1 upstream; the
        # allocation bound ends them instead of letting them grow exponentially.
        "cel.bind(s0, [1], " + _doublings(40, "dyn({p}) + dyn({p})") + ")",
        'cel.bind(s0, "x", ' + _doublings(40, "dyn({p}) + dyn({p})") + ")",
        # replace, format and flatten are charged by their inputs.
        'cel.bind(s0, "xy", ' + _doublings(40, '{p}.replace("", {p})') + ")",
        'cel.bind(s0, "x", ' + _doublings(40, '"%s%s".format([{p}, {p}])') + ")",
        "cel.bind(s0, [1], " + _doublings(40, "[{p}, {p}].flatten()") + ")",
        "lists.range(2000000).size() > 0",
    ],
    ids=["join", "sets", "list-concat", "string-concat", "replace", "format", "flatten", "range"],
)
def test_results_beyond_the_limit_are_not_built(expr: str) -> None:
    selector = compile_selector(expr)
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(CELRuntimeError, match=f"^{LIMIT_ERROR}$"):
            selector.matches(INPUT)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 5.0
    assert peak < 400_000_000, f"peak allocation {peak / 1e6:.0f} MB"


def test_a_limit_error_in_one_leaf_needs_the_whole_row() -> None:
    """The vector path splits at && but charges a row what the whole selector costs:
    two leaves of 600,000 each reach the limit together, as upstream's one evaluation."""
    half = "lists.range(150000).all(i, i >= 0)"  # 4 * 150000 + 12 per evaluation
    selector = compile_selector(f"{half} && {half}")
    with pytest.raises(CELRuntimeError, match=LIMIT_ERROR):
        selector.matches(INPUT)
    _, error, messages = selector.evaluate(DeviceTable.build([(DRIVER, DEVICE)]))
    assert error[0] and messages[0] == LIMIT_ERROR
    alone = compile_selector(half)
    assert alone.matches(INPUT) and alone.evaluate(DeviceTable.build([(DRIVER, DEVICE)]))[0][0]


@pytest.mark.parametrize(
    ("expr", "max_cost"),
    [
        # validate: size x 0.1, then x MaxNameFormatRegexSize (128) x 0.25, each rounded
        # up (pkg/cel/library/cost.go, limits.go); plus the format call and hasValue.
        ('format.dns1123Label().validate("abc").hasValue()', 1 + 32 + 1),
        ('format.uri().validate("abcdefghijklmnopqrstu").hasValue()', 1 + 3 * 32 + 1),
        # == of two formats: MaxFormatSize (64) x 0.1.
        ("format.dns1123Label() == format.uri()", 1 + 1 + 7),
    ],
)
def test_format_library_estimate(expr: str, max_cost: int) -> None:
    assert compile_selector(expr).max_cost == max_cost
