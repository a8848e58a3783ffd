"""Tolerations against taints (resourceclaim/devicetoleration.go semantics)."""

from __future__ import annotations

import pytest

from draspeed.api.model import DeviceTaint, DeviceToleration
from draspeed.rules.tolerations import taint_blocks, tolerates

TAINT = DeviceTaint(key="maint", value="true", effect="NoSchedule")

# (toleration, tolerated?)
CASES = [
    (DeviceToleration(key="maint", operator="Equal", value="true", effect="NoSchedule"), True),
    (DeviceToleration(key="maint", operator="Equal", value="false"), False),
    (DeviceToleration(key="maint", operator="", value="true"), True),  # empty operator = Equal
    (DeviceToleration(key="maint", operator="Exists"), True),
    (DeviceToleration(key="maint", operator="Exists", effect="NoExecute"), False),
    (DeviceToleration(key="other", operator="Exists"), False),
    (DeviceToleration(key="", operator="Exists"), True),  # empty key + Exists: everything
    (DeviceToleration(key="", operator="Equal", value="true"), True),
    (DeviceToleration(key="maint", operator="Bogus", value="true"), False),
    (
        DeviceToleration(
            key="maint", operator="Equal", value="true", effect="NoSchedule", toleration_seconds=5
        ),
        True,
    ),
]


@pytest.mark.parametrize(("toleration", "expected"), CASES)
def test_tolerates(toleration: DeviceToleration, expected: bool) -> None:
    assert tolerates(toleration, TAINT) is expected


@pytest.mark.parametrize(
    ("effect", "blocks"),
    [
        ("NoSchedule", True),
        ("NoExecute", True),
        ("None", False),
        ("PreferNoSchedule", False),
        ("", False),
    ],
)
def test_only_known_effects_block(effect: str, blocks: bool) -> None:
    assert taint_blocks([DeviceTaint(key="k", effect=effect)], []) is blocks


def test_every_blocking_taint_needs_a_toleration() -> None:
    taints = [DeviceTaint(key="a", effect="NoSchedule"), DeviceTaint(key="b", effect="NoExecute")]
    only_a = [DeviceToleration(key="a", operator="Exists")]
    both = [*only_a, DeviceToleration(key="b", operator="Exists")]
    assert taint_blocks(taints, only_a)
    assert not taint_blocks(taints, both)
    assert not taint_blocks([], [])
