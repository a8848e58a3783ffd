"""Upstream's error texts of an allocation, each written once, byte for byte.

Both engines, ``explain`` and the taint-rule patcher raise these. ``claim`` is the
claim's ``namespace/name``. A message about one claim that is kept to answer for
other claims of the same specs (the fast engine remembers a claim set's errors by
their specs, whatever the claims are called) is kept as a :class:`ClaimText`: the
text function and its other arguments, with the claim's name filled in when the
message is shown. No text marks the place of the name, so nothing in the input (an
attribute value quoted by a CEL error, say) can be mistaken for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from draspeed.errors import AllocationError

if TYPE_CHECKING:
    from draspeed.api.model import ResourceClaim

INVALID_POOLS = "invalid resource pools were encountered"


@dataclass(frozen=True, slots=True)
class ClaimText:
    """The message ``write(key, *args, **kwargs)`` about claim ``claim`` of a claim set,
    its ``namespace/name`` (``key``) filled in when it is shown."""

    claim: int
    write: Callable[..., str]
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()

    def text(self, key: str) -> str:
        return self.write(key, *self.args, **dict(self.kwargs))

    def render(self, claims: Sequence[ResourceClaim]) -> str:
        """The message about the claims asked about (claim ``claim`` of them)."""
        return self.text(claims[self.claim].key)


class ClaimAllocationError(AllocationError):
    """A fatal allocation error about one claim; ``text`` writes it for other names."""

    def __init__(self, text: ClaimText, key: str) -> None:
        super().__init__(text.text(key))
        self.text = text


def claim_error(
    claim: int, key: str, write: Callable[..., str], *args: Any, **kwargs: Any
) -> ClaimAllocationError:
    """The error ``write(key, *args, **kwargs)`` about claim ``claim`` (named ``key``)."""
    return ClaimAllocationError(ClaimText(claim, write, args, tuple(kwargs.items())), key)


def message_of(exc: AllocationError) -> str | ClaimText:
    """What to keep of an error to show it for other claims: its template, if it is
    about one claim, else its text."""
    return exc.text if isinstance(exc, ClaimAllocationError) else str(exc)


def prioritized_list_disabled(claim: str, request: str) -> str:
    return (
        f"claim {claim}, request {request}: has subrequests, "
        "but the DRAPrioritizedList feature is disabled"
    )


def consumable_capacity_disabled(claim: str, request: str, *, subrequest: bool) -> str:
    what = "subrequest" if subrequest else "request"
    return (
        f"claim {claim}, {what} {request}: has capacity requests, "
        "but the DRAConsumableCapacity feature is disabled"
    )


def selector_without_cel(claim: str, request: str, index: int) -> str:
    return (
        f"claim {claim}, request {request}, selector #{index}: "
        "CEL expression empty (unsupported selector type?)"
    )


def selector_empty(owner: str, index: int) -> str:
    """A class selector without CEL (API validation rejects it; upstream would crash)."""
    return f"{owner}: selector #{index}: CEL expression empty (unsupported selector type?)"


def admin_access_disabled(claim: str, request: str) -> str:
    return (
        f"claim {claim}, request {request}: admin access is requested, but the feature is disabled"
    )


def missing_class_name(claim: str, request: str) -> str:
    return (
        f"claim {claim}, request {request}: missing device class name (unsupported request type?)"
    )


def class_not_found(claim: str, request: str, device_class: str) -> str:
    return (
        f"claim {claim}, request {request}: could not retrieve device class {device_class}: "
        f'deviceclass.resource.k8s.io "{device_class}" not found'
    )


def unsupported_count_mode(claim: str, request: str, mode: str) -> str:
    return f"claim {claim}, request {request}: unsupported count mode {mode}"


def too_many_devices(claim: str, count: int, limit: int) -> str:
    return f"claim {claim}: number of requested devices {count} exceeds the claim limit of {limit}"


def negative_count(claim: str, request: str, count: int) -> str:
    # draspeed's own words: the API server refuses such a count, and upstream's
    # allocator, given one anyway, panics (a slice made with a negative capacity).
    return (
        f"claim {claim}, request {request}: negative device count {count} "
        "(the API server refuses it; upstream's allocator panics on it)"
    )


def empty_constraint(claim: str, index: int) -> str:
    return f"claim {claim}, constraint #{index}: empty constraint (unsupported constraint type?)"


def all_devices_pool_incomplete(claim: str, request: str, pool: object) -> str:
    return (
        f"claim {claim}, request {request}: asks for all devices, "
        f"but resource pool {pool} is currently being updated"
    )


def all_devices_pool_invalid(claim: str, request: str, pool: object) -> str:
    return (
        f"claim {claim}, request {request}: asks for all devices, "
        f"but resource pool {pool} is currently invalid"
    )


def selector_owner(claim: str, device_class: str, *, from_class: bool) -> str:
    """Who a selector belongs to, as selector errors name it."""
    return f"class {device_class}" if from_class else f"claim {claim}"


def selector_compile_error(owner: str, index: int, error: str) -> str:
    return f"{owner}: selector #{index}: CEL compile error: {error}"


def selector_runtime_error(owner: str, index: int, device: object, error: str) -> str:
    return f"{owner}: selector #{index} on device {device}: CEL runtime error: {error}"


def claim_selector_compile_error(
    claim: str, device_class: str, from_class: bool, index: int, error: str
) -> str:
    """A selector's compile error, the claim first (for :class:`ClaimText`)."""
    owner = selector_owner(claim, device_class, from_class=from_class)
    return selector_compile_error(owner, index, error)


def claim_selector_runtime_error(
    claim: str, device_class: str, from_class: bool, index: int, device: object, error: str
) -> str:
    """A selector's runtime error, the claim first (for :class:`ClaimText`)."""
    owner = selector_owner(claim, device_class, from_class=from_class)
    return selector_runtime_error(owner, index, device, error)


def constraint_not_satisfied(claim: str, request: str, device: object) -> str:
    return (
        f"claim {claim}, request {request}: cannot add device {device} "
        "because a claim constraint would not be satisfied"
    )


def gather_pools(error: str) -> str:
    return f"gather pool information: {error}"


def slice_node_selection(slice_name: str, error: object) -> str:
    return f"failed to perform node selection for slice {slice_name}: {error}"


def device_node_selection(device_name: str, slice_name: str, error: object) -> str:
    # Upstream prints the whole v1 Device with its generated String(); only the name is
    # reproduced here (the case needs a node selector that API validation rejects).
    return (
        f"failed to perform node selection for device &Device{{Name:{device_name},...}} "
        f"in slice {slice_name}: {error}"
    )


# Why a pool is invalid (explain shows these; the search only says INVALID_POOLS).


def duplicate_device_name(device: str) -> str:
    return f"duplicate device name {device}"


def duplicate_counter_set(name: str) -> str:
    return f"duplicate counter set name {name}"


def counter_set_not_found(name: str) -> str:
    return f"counter set {name} not found"


def counter_not_found(counter: str, counter_set: str) -> str:
    return f"counter {counter} not found in counter set {counter_set}"
