"""The allocator's feature switches, named after the Kubernetes feature gates."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields

from draspeed import arguments
from draspeed.errors import InputError
from draspeed.feature_gates import KNOWN_GATES

# Gate name -> Features attribute. Binding conditions need two gates, as upstream.
_GATES = {
    "DRAAdminAccess": "admin_access",
    "DRAPrioritizedList": "prioritized_list",
    "DRAPartitionableDevices": "partitionable_devices",
    "DRADeviceTaints": "device_taints",
    "DRAConsumableCapacity": "consumable_capacity",
    "DRADeviceBindingConditions": "device_binding_conditions",
    "DRAResourceClaimDeviceStatus": "resource_claim_device_status",
    "DRAListTypeAttributes": "list_type_attributes",
    "DRAExtendedResource": "extended_resource",
}


# strconv.ParseBool's spellings.
_GO_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


@dataclass(frozen=True, slots=True)
class Features:
    """Which optional DRA features the allocator honours; everything on by default."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    consumable_capacity: bool = True
    device_binding_conditions: bool = True
    resource_claim_device_status: bool = True
    list_type_attributes: bool = True
    # Not an allocator gate: kube-scheduler's DynamicResources plugin makes a claim for
    # a pod's extended resources backed by a DeviceClass (draspeed.pods).
    extended_resource: bool = True

    def __post_init__(self) -> None:
        # A gate is True or False: "no" or 0 read as a truth value is a mistake.
        for f in fields(self):
            arguments.flag(getattr(self, f.name), f.name)

    @property
    def device_binding_and_status(self) -> bool:
        """Upstream's DeviceBindingAndStatus needs both gates."""
        return self.device_binding_conditions and self.resource_claim_device_status

    @classmethod
    def all(cls) -> Features:
        return cls()

    @classmethod
    def none(cls) -> Features:
        return cls(**{f.name: False for f in fields(cls)})

    @classmethod
    def parse(cls, gates: str, base: Features | None = None) -> Features:
        """Parse ``--feature-gates`` as kube-scheduler does (component-base's feature
        gate): ``NAME=BOOL`` items separated by commas, BOOL as Go's ``ParseBool``
        reads it (true, True, TRUE, t, 1 ...). Gates not named keep their value from
        ``base`` (default: all on). A name kube-scheduler does not know
        (:data:`~draspeed.feature_gates.KNOWN_GATES`) is refused with its text, an
        unknown gate named first; Kubernetes gates that are not allocator features
        are accepted and ignored. Errors are :class:`~draspeed.errors.InputError`
        with kube-scheduler's message (``--feature-gates: unrecognized feature gate:
        X``).
        """
        arguments.instance_of(gates, str, "gates", "a --feature-gates string")
        if base is not None:
            arguments.instance_of(base, Features, "base", "Features")
        values = {f.name: getattr(base or cls(), f.name) for f in fields(cls)}
        given: dict[str, bool] = {}
        for item in gates.split(","):
            if not item:
                continue
            name, sep, raw = item.partition("=")
            name = name.strip()
            if not sep:
                raise InputError("--feature-gates", "", f"missing bool value for {name}")
            raw = raw.strip()
            value = _GO_BOOLS.get(raw)
            if value is None:
                raise InputError(
                    "--feature-gates",
                    "",
                    f"invalid value of {name}={raw}, err: strconv.ParseBool: parsing "
                    f"{json.dumps(raw)}: invalid syntax",
                )
            given[name] = value
        for name, value in given.items():
            if name not in KNOWN_GATES:
                raise InputError("--feature-gates", "", f"unrecognized feature gate: {name}")
            attr = _GATES.get(name)
            if attr is not None:
                values[attr] = value
        return cls(**values)

    def gates(self) -> str:
        """The ``--feature-gates`` string that reproduces this record."""
        return ",".join(f"{g}={str(getattr(self, a)).lower()}" for g, a in sorted(_GATES.items()))
