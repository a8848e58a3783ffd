"""Upstream's pre-flight of one pod's claims: what ``Allocate`` checks before it searches.

For each claim, request by request (a prioritized list's subrequests in order): the
feature checks, then each request or subrequest is validated (selectors have CEL,
admin access allowed, a class named and found) and its device count decided
(``ExactCount``: the count; ``All``: the matching devices on the node, which the
engine lists itself); then the claim's size limit and its constraint types. The
first failure is upstream's error, raised as :class:`AllocationError`.

Both engines walk the claims with :func:`preflight`; how they list the devices of an
``All`` request (and what else they attach to a request) is theirs, passed in as
``on_request``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from draspeed.api.limits import ALLOCATION_RESULTS_MAX_SIZE
from draspeed.api.model import (
    CapacityRequirements,
    DeviceClass,
    DeviceRequest,
    DeviceSelector,
    DeviceToleration,
    ResourceClaim,
)
from draspeed.features import Features
from draspeed.rules import texts

if TYPE_CHECKING:
    from draspeed.quantity import Quantity


@dataclass(slots=True)
class RequestSpec:
    """A request without subrequests, or one subrequest: what the search reads of it
    (upstream's ``requestData``)."""

    claim: int
    request: int  # index in the claim
    sub: int | None  # subrequest index, or None
    name: str  # as errors name it (a subrequest's own name)
    parent: str | None  # the request's name, for a subrequest
    device_class: DeviceClass
    selectors: list[DeviceSelector]
    all_mode: bool
    count: int  # ExactCount: the count; All: how many devices the engine listed
    admin: bool
    tolerations: list[DeviceToleration]
    capacity: dict[str, Quantity] = field(default_factory=dict)


@dataclass(slots=True)
class ClaimPlan:
    """One claim after the pre-flight: per request, its alternatives (the request
    itself, or its subrequests in order)."""

    requests: list[list[RequestSpec]]
    has_subrequests: list[bool]


# Called for each validated request or subrequest, in upstream's order, before its
# count is used: an engine lists an All request's devices here (setting ``count``)
# and may raise upstream's errors for them.
OnRequest = Callable[[RequestSpec], None]


def preflight(
    claims: Sequence[ResourceClaim],
    claim_key: Callable[[int], str],
    features: Features,
    classes: Mapping[str, DeviceClass],
    on_request: OnRequest,
) -> list[ClaimPlan]:
    """The claims' plans, or upstream's first pre-flight error, a
    :class:`~draspeed.rules.texts.ClaimAllocationError` (``claim_key(c)`` names claim c
    in its text)."""
    return [
        _claim_plan(c, claim, claim_key(c), features, classes, on_request)
        for c, claim in enumerate(claims)
    ]


def _claim_plan(
    c: int,
    claim: ResourceClaim,
    key: str,
    features: Features,
    classes: Mapping[str, DeviceClass],
    on_request: OnRequest,
) -> ClaimPlan:
    plan = ClaimPlan([], [])
    min_devices = 0
    for r, request in enumerate(claim.spec.devices.requests):
        _check_features(c, key, request, features)
        subs = request.first_available
        if subs:
            alternatives = [
                _validated(
                    c,
                    r,
                    i,
                    key,
                    sub.name,
                    request.name,
                    sub.device_class_name,
                    sub.selectors,
                    sub.allocation_mode,
                    sub.count,
                    None,
                    sub.tolerations,
                    sub.capacity,
                    features,
                    classes,
                    on_request,
                )
                for i, sub in enumerate(subs)
            ]
            min_devices += min((a.count for a in alternatives), default=0)
        else:
            ex = request.exactly
            alternatives = [
                _validated(
                    c,
                    r,
                    None,
                    key,
                    request.name,
                    None,
                    ex.device_class_name if ex else "",
                    ex.selectors if ex else [],
                    ex.allocation_mode if ex else "ExactCount",
                    ex.count if ex else 1,
                    ex.admin_access if ex else None,
                    ex.tolerations if ex else [],
                    ex.capacity if ex else None,
                    features,
                    classes,
                    on_request,
                )
            ]
            min_devices += alternatives[0].count
        plan.requests.append(alternatives)
        plan.has_subrequests.append(bool(subs))
    if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
        raise texts.claim_error(
            c, key, texts.too_many_devices, min_devices, ALLOCATION_RESULTS_MAX_SIZE
        )
    for i, constraint in enumerate(claim.spec.devices.constraints):
        if constraint.match_attribute is None and constraint.distinct_attribute is None:
            raise texts.claim_error(c, key, texts.empty_constraint, i)
    return plan


def _check_features(c: int, key: str, request: DeviceRequest, features: Features) -> None:
    subs = request.first_available
    if subs and not features.prioritized_list:
        raise texts.claim_error(c, key, texts.prioritized_list_disabled, request.name)
    if not features.consumable_capacity:
        if request.exactly is not None and request.exactly.capacity is not None:
            raise texts.claim_error(
                c, key, texts.consumable_capacity_disabled, request.name, subrequest=False
            )
        for sub in subs:
            if sub.capacity is not None:
                raise texts.claim_error(
                    c, key, texts.consumable_capacity_disabled, sub.name, subrequest=True
                )


def _validated(
    c: int,
    r: int,
    sub: int | None,
    key: str,
    name: str,
    parent: str | None,
    class_name: str,
    selectors: list[DeviceSelector],
    mode: str,
    count: int,
    admin_access: bool | None,
    tolerations: list[DeviceToleration],
    capacity: CapacityRequirements | None,
    features: Features,
    classes: Mapping[str, DeviceClass],
    on_request: OnRequest,
) -> RequestSpec:
    """upstream's validateDeviceRequest: checks in its order, then the device count."""
    for i, selector in enumerate(selectors):
        if selector.cel is None:
            raise texts.claim_error(c, key, texts.selector_without_cel, name, i)
    if not features.admin_access and admin_access is not None:
        raise texts.claim_error(c, key, texts.admin_access_disabled, name)
    if class_name == "":
        raise texts.claim_error(c, key, texts.missing_class_name, name)
    device_class = classes.get(class_name)
    if device_class is None:
        raise texts.claim_error(c, key, texts.class_not_found, name, class_name)
    if mode not in ("ExactCount", "All"):
        raise texts.claim_error(c, key, texts.unsupported_count_mode, name, mode)
    if mode == "ExactCount" and count < 0:
        raise texts.claim_error(c, key, texts.negative_count, name, count)
    spec = RequestSpec(
        claim=c,
        request=r,
        sub=sub,
        name=name,
        parent=parent,
        device_class=device_class,
        selectors=selectors,
        all_mode=mode == "All",
        count=count if mode == "ExactCount" else 0,
        admin=bool(admin_access),
        tolerations=tolerations,
        capacity=dict(capacity.requests) if capacity else {},
    )
    on_request(spec)
    return spec
