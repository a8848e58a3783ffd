"""Property test: the vector path, the memoised general path and ``matches`` agree.

Random device tables (several drivers, attributes of every kind including missing,
value-less and list attributes, quantities) and random selectors built from the shapes
DRA classes use, combined with ``&&``, ``||``, ``!``, ``?:`` and ``cel.bind``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draspeed.api.model import Device, DeviceAttribute, DeviceCapacity
from draspeed.cel import DeviceTable, compile_selector, device_input
from draspeed.errors import CELRuntimeError
from draspeed.quantity import Quantity

DOMAIN = "gpu.example.com"
DRIVERS = [DOMAIN, "net.example.com"]
MODELS = ["a100", "h100", "l4"]
VERSIONS = ["1.0.0", "1.2.3", "2.0.0-rc.1", "2.0.0"]
MEMORY = ["16Gi", "40Gi", "40960Mi", "80Gi", "1500m"]

attr_value = st.one_of(
    st.builds(lambda v: DeviceAttribute("string", v), st.sampled_from(MODELS)),
    st.builds(lambda v: DeviceAttribute("int", v), st.integers(-2, 3)),
    st.builds(lambda v: DeviceAttribute("bool", v), st.booleans()),
    st.builds(lambda v: DeviceAttribute("version", v), st.sampled_from(VERSIONS)),
    st.builds(
        lambda v: DeviceAttribute("strings", tuple(v)),
        st.lists(st.sampled_from(MODELS), max_size=3),
    ),
)

# Attribute names and the value kinds each one mostly carries (mixing kinds on purpose).
NAMES = ["model", "numa", "healthy", "driverVersion", "tags"]


@st.composite
def devices(draw: Any) -> tuple[str, Device]:
    driver = draw(st.sampled_from(DRIVERS))
    attributes: dict[str, DeviceAttribute] = {}
    for name in NAMES:
        if draw(st.integers(0, 4)) == 0:
            continue  # missing
        attributes[f"{DOMAIN}/{name}"] = draw(attr_value)
    if draw(st.integers(0, 30)) == 0:
        attributes[f"{DOMAIN}/broken"] = DeviceAttribute(None)
    if draw(st.booleans()):
        attributes["topology.example.com/rack"] = DeviceAttribute(
            "string", draw(st.sampled_from(["r1", "r2"]))
        )
    capacity = {}
    if draw(st.integers(0, 3)):
        capacity[f"{DOMAIN}/memory"] = DeviceCapacity(Quantity.parse(draw(st.sampled_from(MEMORY))))
    multi = draw(st.sampled_from([None, True, False]))
    return driver, Device(
        name="d", attributes=attributes, capacity=capacity, allow_multiple_allocations=multi
    )


A = f'device.attributes["{DOMAIN}"]'
C = f'device.capacity["{DOMAIN}"]'

LEAVES = [
    f'device.driver == "{DOMAIN}"',
    "device.allowMultipleAllocations",
    f'{A}.model == "a100"',
    f'{A}.model in ["a100", "h100"]',
    f"{A}.numa >= 1",
    f"{A}.numa == 1.0",
    f'{A}.numa != "1"',
    f"{A}.healthy",
    f"has({A}.healthy) && {A}.healthy == true",
    f'{A}.?model.orValue("none") == "l4"',
    f'{A}.driverVersion.isGreaterThan(semver("1.1.0"))',
    f'{A}.driverVersion.compareTo(semver("2.0.0")) < 0',
    f'{A}.tags.includes("a100")',
    f'{A}.tags.exists(t, t.startsWith("h"))',
    f'{C}.memory.compareTo(quantity("40Gi")) >= 0',
    f'{C}.memory.isGreaterThan(quantity("20Gi"))',
    f"{C}.memory.isInteger()",
    '"topology.example.com" in device.attributes',
    'device.attributes["topology.example.com"].rack == "r1"',
    f'cel.bind(g, {A}, g.numa == 0 || g.model == "l4")',
    f"{A}.model.size() == 4",
    f"{A}.numa",
    'device.attributes.exists(d, d.startsWith("topology"))',
    "1 / 0 == 1",
]


@st.composite
def expressions(draw: Any, depth: int = 0) -> str:
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        return str(draw(st.sampled_from(LEAVES)))
    op = draw(st.sampled_from(["&&", "||", "!", "?:"]))
    left = draw(expressions(depth + 1))
    right = draw(expressions(depth + 1))
    if op == "!":
        return f"!({left})"
    if op == "?:":
        third = draw(expressions(depth + 1))
        return f"({left}) ? ({right}) : ({third})"
    return f"({left}) {op} ({right})"


def _outcomes(selector: Any, pairs: list[tuple[str, Device]]) -> list[Any]:
    out: list[Any] = []
    for driver, device in pairs:
        try:
            out.append(selector.matches(device_input(driver, device)))
        except CELRuntimeError as exc:
            out.append(str(exc))
    return out


def _table_outcomes(result: Any, n: int) -> list[Any]:
    match, error, messages = result
    return [messages[i] if error[i] else bool(match[i]) for i in range(n)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(devices(), min_size=1, max_size=25), expressions())
def test_vector_general_and_matches_agree(pairs: list[tuple[str, Device]], expr: str) -> None:
    try:
        selector = compile_selector(expr)
    except Exception:  # some random combinations do not type-check (e.g. `numa` in &&)
        return
    table = DeviceTable.build(pairs)
    want = _outcomes(selector, pairs)
    assert _table_outcomes(selector.evaluate(table), len(pairs)) == want
    assert _table_outcomes(selector.evaluate_rows(table), len(pairs)) == want
    assert _table_outcomes(selector.evaluate_rows(table, memoize=False), len(pairs)) == want
