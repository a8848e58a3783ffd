"""Consumable capacity arithmetic (consumable_capacity.go semantics) on exact quantities."""

from __future__ import annotations

import pytest

from draspeed.api.model import CapacityRequestPolicy, CapacityRequestPolicyRange, DeviceCapacity
from draspeed.quantity import Quantity
from draspeed.rules.capacity import (
    UnknownCapacityError,
    consumed_amount,
    consumed_capacity,
    request_fits,
    violates_policy,
)

Q = Quantity.parse


def cap(
    value: str,
    *,
    default: str | None = None,
    min: str | None = None,
    max: str | None = None,
    step: str | None = None,
    values: tuple[str, ...] = (),
) -> DeviceCapacity:
    valid_range = None
    if min is not None or max is not None or step is not None:
        valid_range = CapacityRequestPolicyRange(
            Q(min) if min else None, Q(max) if max else None, Q(step) if step else None
        )
    policy = None
    if default is not None or valid_range is not None or values:
        policy = CapacityRequestPolicy(
            Q(default) if default else None, [Q(v) for v in values], valid_range
        )
    return DeviceCapacity(Q(value), policy)


# (capacity, requested or None, expected consumed as canonical string)
CONSUMED_CASES = [
    (cap("40Gi"), None, "40Gi"),  # unrequested: everything
    (cap("40Gi", default="1Gi", min="1Gi"), None, "1Gi"),  # unrequested: the default
    (cap("40Gi"), "3Gi", "3Gi"),  # no policy: as requested
    (cap("40Gi", min="4Gi"), "1Gi", "4Gi"),  # below min: min
    (cap("40Gi", min="4Gi"), "5Gi", "5Gi"),  # no step: as requested
    (cap("40Gi", min="4Gi", step="2Gi"), "5Gi", "6Gi"),  # round up to min + k*step
    (cap("40Gi", min="4Gi", step="2Gi"), "6Gi", "6Gi"),  # already on a step
    (cap("10", min="1", step="3"), "5", "7"),
    (cap("10", min="1", step="3"), "500m", "1"),  # fractional below min
    (cap("10", min="1", step="2"), "1500m", "3"),  # Value() rounds 1.5 up to 2
    (cap("100", values=("10", "20", "50")), "11", "20"),  # first valid value >= request
    (cap("100", values=("10", "20", "50")), "20", "20"),
    (cap("100", values=("10", "20", "50")), "60", "60"),  # none: unchanged (violates)
    # Beyond int64 (Value() cannot hold it): not rounded (kubernetes#140442).
    (cap("1e100001", min="7", step="1"), "1e999998", "100e999996"),
    (cap("1e100001", min="7", step="2"), "9223372036854775808", "9223372036854775808"),
    # Within int64, rounded exactly past it (upstream wraps; draspeed never wraps).
    (cap("1e100001", min="0", step="2"), "9223372036854775807", "8Ei"),
]


@pytest.mark.parametrize(("capacity", "requested", "expected"), CONSUMED_CASES)
def test_consumed_amount(capacity: DeviceCapacity, requested: str | None, expected: str) -> None:
    consumed = consumed_amount(Q(requested) if requested else None, capacity)
    assert str(consumed) == expected


def test_round_up_result_is_binary_si() -> None:
    consumed = consumed_amount(Q("1500M"), cap("10G", min="1G", step="1G"))
    assert consumed == Q("2G") and consumed.format == "BinarySI"


# (capacity, consumed, violates?)
POLICY_CASES = [
    (cap("10"), "11", False),  # no policy at all
    (cap("40Gi", min="1Gi", max="8Gi"), "9Gi", True),  # above max
    (cap("40Gi", min="1Gi", max="8Gi"), "8Gi", False),
    (cap("40Gi", min="1Gi", step="2Gi"), "2Gi", True),  # not min + k*step
    (cap("40Gi", min="1Gi", step="2Gi"), "3Gi", False),
    (cap("100", values=("10", "20")), "15", True),
    (cap("100", values=("10", "20")), "20", False),
    (cap("100", values=("10", "20")), "20000m", False),  # compared by value
]


@pytest.mark.parametrize(("capacity", "consumed", "violates"), POLICY_CASES)
def test_violates_policy(capacity: DeviceCapacity, consumed: str, violates: bool) -> None:
    assert violates_policy(Q(consumed), capacity.request_policy) is violates


def test_default_passes_only_in_the_same_representation() -> None:
    # The default is off the step grid; it still passes when it is the default itself.
    capacity = cap("40Gi", default="3Gi", min="2Gi", step="2Gi")
    policy = capacity.request_policy
    assert policy is not None and policy.default is not None
    assert not violates_policy(policy.default, policy)
    # The same value written differently is not Go-== to the default and fails the step.
    assert violates_policy(Q("3072Mi"), policy)


def test_request_fits_counts_everything_already_consumed() -> None:
    device = {"memory": cap("40Gi"), "cores": cap("8", default="1")}
    assert request_fits({}, {"memory": Q("40Gi")}, device, {})
    assert not request_fits({"memory": Q("1Gi")}, {"memory": Q("40Gi")}, device, {})
    assert not request_fits({}, {"memory": Q("30Gi")}, device, {"memory": Q("11Gi")})
    # Unrequested capacity consumes its default, which must fit too.
    assert not request_fits({"cores": Q("8")}, {"memory": Q("1Gi")}, device, {})
    # Unrequested capacity without a default consumes all of it.
    assert not request_fits({}, {}, {"memory": cap("40Gi")}, {"memory": Q("1")})


def test_request_fits_rejects_policy_violations_of_unrequested_capacity() -> None:
    # The whole value is not a valid value, so nothing without a request fits.
    assert not request_fits({}, {}, {"slots": cap("10", values=("1", "2"))}, {})


def test_unknown_capacity_is_an_error() -> None:
    with pytest.raises(UnknownCapacityError, match="some requested capacity has not been defined"):
        request_fits({}, {"bogus": Q("1")}, {"memory": cap("1Gi")}, {})


def test_consumed_capacity_has_every_capacity() -> None:
    device = {
        "memory": cap("40Gi", min="1Gi", step="1Gi"),
        "cores": cap("8", default="1"),
        "links": cap("4"),
    }
    consumed = consumed_capacity({"memory": Q("1500Mi")}, device)
    assert {k: str(v) for k, v in consumed.items()} == {"memory": "2Gi", "cores": "1", "links": "4"}


def test_capacity_names_compare_literally() -> None:
    """As upstream: ``memory`` and ``<driver>/memory`` are different names (measured
    with the upstream allocator: a request of either finds only a capacity written the
    same way, and results carry the device's name as written)."""
    device = {"gpu.example.com/memory": cap("40Gi"), "links": cap("4")}
    assert request_fits({}, {"gpu.example.com/memory": Q("1Gi"), "links": Q("4")}, device, {})
    with pytest.raises(UnknownCapacityError):
        request_fits({}, {"memory": Q("1Gi")}, device, {})
    with pytest.raises(UnknownCapacityError):
        request_fits({}, {"gpu.example.com/links": Q("1")}, device, {})
    consumed = consumed_capacity({"gpu.example.com/memory": Q("1Gi")}, device)
    assert consumed == {"gpu.example.com/memory": Q("1Gi"), "links": Q("4")}
