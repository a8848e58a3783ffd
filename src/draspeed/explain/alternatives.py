"""Requests as the funnel sees them: each request, or each ``firstAvailable``
alternative of one, flattened to what selecting its devices needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from draspeed.api.model import DeviceSelector, DeviceToleration, ResourceClaim
from draspeed.quantity import Quantity


@dataclass(slots=True)
class Alternative:
    """A request without alternatives, or one alternative of a prioritized list."""

    claim: int
    request: int
    name: str  # as results name it: "gpu" or "gpu/small"
    class_name: str
    selectors: list[DeviceSelector]
    mode: str
    count: int
    admin: bool
    tolerations: list[DeviceToleration]
    capacity: dict[str, Quantity]


def claim_alternatives(claims: Sequence[ResourceClaim]) -> list[list[list[Alternative]]]:
    """Per claim, per request, its alternatives (one for a plain request)."""
    out: list[list[list[Alternative]]] = []
    for c, claim in enumerate(claims):
        requests: list[list[Alternative]] = []
        for r, request in enumerate(claim.spec.devices.requests):
            if request.first_available:
                requests.append(
                    [
                        Alternative(
                            c,
                            r,
                            f"{request.name}/{sub.name}",
                            sub.device_class_name,
                            sub.selectors,
                            sub.allocation_mode,
                            sub.count,
                            False,
                            sub.tolerations,
                            dict(sub.capacity.requests) if sub.capacity else {},
                        )
                        for sub in request.first_available
                    ]
                )
                continue
            exact = request.exactly
            if exact is None:  # a request shape this version does not know
                requests.append(
                    [Alternative(c, r, request.name, "", [], "ExactCount", 0, False, [], {})]
                )
                continue
            requests.append(
                [
                    Alternative(
                        c,
                        r,
                        request.name,
                        exact.device_class_name,
                        exact.selectors,
                        exact.allocation_mode,
                        exact.count,
                        bool(exact.admin_access),
                        exact.tolerations,
                        dict(exact.capacity.requests) if exact.capacity else {},
                    )
                ]
            )
        out.append(requests)
    return out
