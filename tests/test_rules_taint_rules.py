"""DeviceTaintRules patched into slices, as kube-scheduler's slice tracker does."""

from __future__ import annotations

import pytest

from draspeed.api.model import (
    CELDeviceSelector,
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceClassSpec,
    DeviceSelector,
    DeviceTaint,
    DeviceTaintRule,
    DeviceTaintSelector,
    ObjectMeta,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from draspeed.rules.taint_rules import TaintRuleError, apply_taint_rules

DRIVER = "gpu.example.com"


def gpu(name: str, model: str) -> Device:
    return Device(name, attributes={f"{DRIVER}/model": DeviceAttribute("string", model)})


SLICES = [
    ResourceSlice(
        ObjectMeta(name="s1"),
        ResourceSliceSpec(
            DRIVER,
            ResourcePool("pool-a", 1, 1),
            node_name="n",
            devices=[gpu("g0", "a100"), gpu("g1", "h100")],
        ),
    ),
    ResourceSlice(
        ObjectMeta(name="s2"),
        ResourceSliceSpec(
            "net.example.com", ResourcePool("pool-b", 1, 1), node_name="n", devices=[Device("nic")]
        ),
    ),
]


def cel(expression: str) -> DeviceSelector:
    return DeviceSelector(CELDeviceSelector(expression))


def rule(name: str, selector: DeviceTaintSelector | None, key: str = "broken") -> DeviceTaintRule:
    return DeviceTaintRule(ObjectMeta(name=name), selector, DeviceTaint(key, effect="NoSchedule"))


def taints(slices: list[ResourceSlice]) -> dict[str, list[str]]:
    return {d.name: [t.key for t in d.taints] for s in slices for d in s.spec.devices}


H100 = DeviceClass(
    ObjectMeta(name="h100"),
    DeviceClassSpec([cel(f'device.attributes["{DRIVER}"].model == "h100"')]),
)


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, {"g0": ["broken"], "g1": ["broken"], "nic": ["broken"]}),
        (DeviceTaintSelector(driver=DRIVER), {"g0": ["broken"], "g1": ["broken"], "nic": []}),
        (DeviceTaintSelector(pool="pool-b"), {"g0": [], "g1": [], "nic": ["broken"]}),
        (DeviceTaintSelector(driver=DRIVER, device="g1"), {"g0": [], "g1": ["broken"], "nic": []}),
        (DeviceTaintSelector(device_class_name="h100"), {"g0": [], "g1": ["broken"], "nic": []}),
        (DeviceTaintSelector(device_class_name="missing"), {"g0": [], "g1": [], "nic": []}),
        (
            DeviceTaintSelector(selectors=[cel(f'device.attributes["{DRIVER}"].model == "a100"')]),
            # nic has no such attribute: a runtime error, which means "no match"
            {"g0": ["broken"], "g1": [], "nic": []},
        ),
    ],
)
def test_rule_selection(
    selector: DeviceTaintSelector | None, expected: dict[str, list[str]]
) -> None:
    assert taints(apply_taint_rules(SLICES, [rule("r", selector)], [H100])) == expected


def test_rules_accumulate_and_inputs_stay_untouched() -> None:
    rules = [rule("r1", DeviceTaintSelector(device="g0"), "a"), rule("r2", None, "b")]
    patched = apply_taint_rules(SLICES, rules)
    assert taints(patched) == {"g0": ["a", "b"], "g1": ["b"], "nic": ["b"]}
    assert taints(SLICES) == {"g0": [], "g1": [], "nic": []}
    assert patched[0] is not SLICES[0]
    assert apply_taint_rules(SLICES, []) == SLICES


def test_selector_that_does_not_compile_is_an_error() -> None:
    bad = rule("bad", DeviceTaintSelector(selectors=[cel("device.nope(")]))
    with pytest.raises(
        TaintRuleError, match=r"^DeviceTaintRule bad: selector #0: CEL compile error: "
    ):
        apply_taint_rules(SLICES, [bad])
