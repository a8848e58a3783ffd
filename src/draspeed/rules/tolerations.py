"""Device taints and the tolerations of a request (resourceclaim/devicetoleration.go).

Only the ``NoSchedule`` and ``NoExecute`` effects keep a device from being
allocated; ``None`` and effects this version does not know are ignored, as
upstream must ignore them for forward compatibility.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from draspeed.api.model import DeviceTaint, DeviceToleration

BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def tolerates(toleration: DeviceToleration, taint: DeviceTaint) -> bool:
    """Whether one toleration tolerates one taint.

    An empty effect or key in the toleration matches any; operator ``Equal``
    (or empty, the pre-defaulting form) compares values, ``Exists`` matches any
    value, and an unknown operator tolerates nothing.
    """
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def taint_blocks(taints: Iterable[DeviceTaint], tolerations: Sequence[DeviceToleration]) -> bool:
    """Whether some blocking taint of a device is not tolerated by any toleration."""
    for taint in taints:
        if taint.effect not in BLOCKING_EFFECTS:
            continue
        if not any(tolerates(toleration, taint) for toleration in tolerations):
            return True
    return False
