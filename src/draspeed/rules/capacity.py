"""Consumable capacity (KEP-5075): how much of a device a request consumes, and whether it fits.

Follows upstream ``structured/internal/experimental/consumable_capacity.go``:

* every capacity of the device is consumed, requested or not: an unrequested
  capacity consumes its ``requestPolicy.default``, or the whole value;
* a requested amount is rounded up by the policy: ``validRange`` to ``min``, then
  to ``min + k*step``; ``validValues`` to the first value >= the request;
* the consumed amount must not violate the policy (``default`` always passes);
* what is already consumed, plus what this call is allocating, plus this
  request must not exceed the capacity's value.

The range arithmetic uses Go's int64 ``Value()`` (rounded up to an integer), as
the snapshot does; the later ``DRAFractionalCapacityRange`` milli-unit arithmetic
is not part of this variant. Sums of those integers are exact Python integers
where Go's int64 arithmetic could wrap (only for values near 2**63).

Capacity names are compared literally, as upstream compares them: a device's
capacities are keyed as its slice wrote them, and a claim's requests and the
consumption of committed shares must name them the same way (``memory`` and
``<driver>/memory`` are different names there; only CEL reads a bare name under the
driver's domain). Results carry the device's names as written.
"""

from __future__ import annotations

from collections.abc import Mapping

from draspeed.api.model import CapacityRequestPolicy, CapacityRequestPolicyRange, DeviceCapacity
from draspeed.errors import DraspeedError
from draspeed.quantity import INT64_MAX, Quantity
from draspeed.quantity_sum import QuantitySum


class UnknownCapacityError(DraspeedError, ValueError):
    """The request names a capacity the device does not have (device is then unsuitable)."""

    def __init__(self) -> None:
        super().__init__("some requested capacity has not been defined")


def _go_div(a: int, b: int) -> int:
    """Go integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _go_mod(a: int, b: int) -> int:
    """Go ``%`` (result has the sign of the dividend)."""
    return a - b * _go_div(a, b)


def _range_bounds(valid_range: CapacityRequestPolicyRange) -> tuple[int, int]:
    # API validation requires min, and a positive step; a missing min counts as 0
    # and a zero step as "no step" instead of crashing as Go would.
    minimum = valid_range.min.go_value() if valid_range.min is not None else 0
    step = valid_range.step.go_value() if valid_range.step is not None else 0
    return minimum, step


def _round_up_range(requested: Quantity, valid_range: CapacityRequestPolicyRange) -> Quantity:
    assert valid_range.min is not None
    if requested.cmp(valid_range.min) < 0:
        return valid_range.min
    minimum, step = _range_bounds(valid_range)
    if valid_range.step is None or step == 0:
        return requested
    if requested.cmp(INT64_MAX) > 0:
        # kubernetes#140442: Value() cannot hold it, so it is not rounded; the capacity
        # check compares it as it is.
        return requested
    added = requested.go_value() - minimum
    steps = _go_div(added, step)
    if _go_mod(added, step) != 0:
        steps += 1
    return Quantity.from_int(minimum + step * steps, "BinarySI")


def _round_up_valid_values(requested: Quantity, valid_values: list[Quantity]) -> Quantity:
    for candidate in valid_values:
        if requested.cmp(candidate) <= 0:
            return candidate
    return requested


def consumed_amount(requested: Quantity | None, capacity: DeviceCapacity) -> Quantity:
    """What one allocation consumes of one device capacity, given the request (or None)."""
    policy = capacity.request_policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return capacity.value
    if policy is None:
        return requested
    if policy.valid_range is not None and policy.valid_range.min is not None:
        return _round_up_range(requested, policy.valid_range)
    if policy.valid_values:
        return _round_up_valid_values(requested, policy.valid_values)
    return requested


def violates_policy(consumed: Quantity, policy: CapacityRequestPolicy | None) -> bool:
    """Whether a consumed amount is not allowed by the capacity's request policy.

    The default passes only when it is the *same representation* (Go struct
    ``==`` on Quantity), which is what upstream compares; any other amount is
    checked against the range (max, step from min) or the list of valid values.
    """
    if policy is None:
        return False
    if policy.default is not None and consumed.same_representation(policy.default):
        return False
    if policy.valid_range is not None:
        valid_range = policy.valid_range
        if valid_range.max is not None and consumed.cmp(valid_range.max) > 0:
            return True
        if valid_range.step is not None:
            minimum, step = _range_bounds(valid_range)
            if step != 0 and _go_mod(consumed.go_value() - minimum, step) != 0:
                return True
        return False
    if policy.valid_values:
        return not any(consumed.cmp(v) == 0 for v in policy.valid_values)
    return False


def request_fits(
    already_consumed: Mapping[str, Quantity | QuantitySum],
    requests: Mapping[str, Quantity],
    device_capacity: Mapping[str, DeviceCapacity],
    allocating: Mapping[str, Quantity | QuantitySum],
) -> bool:
    """Upstream's CmpRequestOverCapacity.

    ``already_consumed`` is what committed allocations consume of the device,
    ``allocating`` what this call has tentatively allocated (all keyed like the
    device's capacities); raises UnknownCapacityError when ``requests`` names a
    capacity the device lacks.
    """
    if any(name not in device_capacity for name in requests):
        raise UnknownCapacityError()
    for name, capacity in device_capacity.items():
        consumed = consumed_amount(requests.get(name), capacity)
        if violates_policy(consumed, capacity.request_policy):
            return False
        if name not in already_consumed and name not in allocating:
            if consumed.cmp(capacity.value) > 0:
                return False
            continue
        # Upstream writes the sum out (inf.Dec); compared here without its digits.
        total = QuantitySum((consumed,))
        if name in already_consumed:
            total = total.add(already_consumed[name])
        if name in allocating:
            total = total.add(allocating[name])
        if total.cmp(capacity.value) > 0:
            return False
    return True


def consumed_capacity(
    requests: Mapping[str, Quantity],
    device_capacity: Mapping[str, DeviceCapacity],
) -> dict[str, Quantity]:
    """The consumedCapacity of one share: an entry for every capacity of the device,
    keyed like the device's capacities."""
    return {name: consumed_amount(requests.get(name), cap) for name, cap in device_capacity.items()}
