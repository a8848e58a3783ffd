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
    if draw(st.integers(0, 8)) == 0:  # unchecked input: a name with two '/'
        attributes[f"{DOMAIN}/p/q"] = DeviceAttribute("string", "a100")
    if draw(st.booleans()):  # a value of its own, as a UUID is
        attributes[f"{DOMAIN}/uuid"] = DeviceAttribute("string", f"u-{draw(st.integers(0, 999))}")
    # Names in any order: macros over a map's keys see them in that order.
    order = draw(st.permutations(list(attributes)))
    attributes = {name: attributes[name] for name in order}
    capacity = {}
    if draw(st.integers(0, 3)):
        capacity[f"{DOMAIN}/memory"] = DeviceCapacity(Quantity.parse(draw(st.sampled_from(MEMORY))))
    if draw(st.integers(0, 3)) == 0:  # a bare capacity name (kept as written)
        capacity[draw(st.sampled_from(["memory", "cores", "p/q"]))] = DeviceCapacity(
            Quantity.parse("4")
        )
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
    # Values of their own per device.
    f'{A}.uuid.startsWith("u-1")',
    f'{A}.uuid.matches("^u-[0-4]")',
    f'{A}.?uuid.orValue("") < "u-5"',
    f'{A}["uuid"].endsWith("9")',
    f'{A}.model.contains("10")',
    f'{A}.numa.startsWith("1")',
    f'{A}.tags.contains("a")',
    # Names alone (keys of a domain map, or the domains).
    f'"model" in {A}',
    f'"memory" in {C}',
    f"{A}.size() >= 3",
    f"size({C}) == 1",
    f'{A}.exists(k, k == "numa")',
    f'{A}.all(k, k != "broken")',
    f'{A}.exists_one(k, k.startsWith("m"))',
    f'{A}.map(k, k)[0] == "model"',
    f"{A}.filter(k, k.size() > 4).size() == 1",
    f'{C}.map(k, k)[0] == "memory"',
    "device.attributes.size() == 2",
    'device.attributes.map(d, d)[0] == "topology.example.com"',
    f'device.capacity.exists(d, d == "{DOMAIN}")',
    f'cel.bind(g, {A}, "numa" in g && g.size() > 1)',
    f'"uuid" in {A} && {A}.uuid.startsWith("u-1")',
    f'"cores" in {C}',
    f'!("broken" in {A})',
    '"rack" in device.attributes["topology.example.com"]',
    f'"numa" in {A} && {A}.exists(k, k == "tags")',
    # Presence alone (has()).
    f"has({A}.uuid)",
    f'has({A}.uuid) && {A}.uuid.endsWith("7")',
    f"has({C}.memory) || has({C}.cores)",
    f"!has({A}.broken)",
    # Names cut at their first '/' (as upstream cuts them).
    f'device.attributes["{DOMAIN}/p"].q == "a100"',
    f'has(device.attributes["{DOMAIN}/p"].q)',
    f'device.attributes["{DOMAIN}"]["p/q"] == "a100"',
    f'{C}["p/q"].isInteger()',
    'has(device.capacity["p"].q)',
    # Names with values: read whole.
    f'{A}.exists(k, {A}[k] == "a100")',
    f'{A}.all(k, v, k != "numa" || v == 1)',
    f'{C}.exists(k, {C}[k].isGreaterThan(quantity("1")))',
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


def test_names_alone_are_read_without_building_each_device() -> None:
    """Selectors that read a device map's names alone are evaluated once per distinct
    set of names: no device's full CEL input is built, however its values differ."""
    pairs = [
        (
            DOMAIN,
            Device(
                name=f"d{i}",
                attributes={
                    f"{DOMAIN}/uuid": DeviceAttribute("string", f"u-{i}"),
                    f"{DOMAIN}/model": DeviceAttribute("string", "a100"),
                },
            ),
        )
        for i in range(50)
    ]
    table = DeviceTable.build(pairs)
    for expr in (
        f'"model" in {A}',
        f"{A}.size() == 2",
        'device.attributes.exists(d, d != "")',
        f"has({A}.uuid)",
    ):
        match, error, _ = compile_selector(expr).evaluate(table)
        assert match.all() and not error.any()
    assert not any(table._inputs or [])  # (no device's input, nor their list, made)
    match, _, _ = compile_selector(f'{A}.exists(k, {A}[k] == "u-3")').evaluate(table)
    assert match.tolist() == [i == 3 for i in range(50)]  # values read: per device


def test_a_constant_name_in_a_domain_map_reads_presence_alone() -> None:
    """``"x" in device.attributes["d"]`` asks what ``has()`` asks: one presence flag per
    device, not every name of the map (membership in a map costs the same whatever
    it holds); a name that is not a constant, or the map read otherwise too, reads
    the names."""
    import draspeed.cel.vector as vector

    def reads(expr: str) -> set[tuple[str, ...]]:
        plan = vector.plan_for(compile_selector(expr))
        return {key for leaf in plan.leaves for key in leaf.reads}

    assert reads(f'"model" in {A}') == {("attr_present", DOMAIN, "model")}
    assert reads(f'"memory" in {C}') == {("cap_present", DOMAIN, "memory")}
    assert reads(f'cel.bind(g, {A}, "model" in g)') == {("attr_present", DOMAIN, "model")}
    assert ("attr_keys", DOMAIN) in reads(f"{A}.model in {A}")
    assert ("attr_keys", DOMAIN) in reads(f'"model" in {A} && {A}.size() > 1')
