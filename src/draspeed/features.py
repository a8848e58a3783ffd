"""The allocator's feature switches, named after the Kubernetes feature gates."""

from __future__ import annotations

from dataclasses import dataclass, fields

from draspeed.errors import InputError

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
        """Parse ``--feature-gates`` syntax: ``DRAAdminAccess=false,DRAPrioritizedList=true``.

        Gates not named keep their value from ``base`` (default: all on). Gates that are
        not DRA allocator gates are accepted and ignored, as kube-scheduler would accept
        them; a malformed entry is an error.
        """
        values = {f.name: getattr(base or cls(), f.name) for f in fields(cls)}
        for i, item in enumerate(p.strip() for p in gates.split(",")):
            if not item:
                continue
            name, sep, raw = item.partition("=")
            name, raw = name.strip(), raw.strip().lower()
            if not sep or raw not in ("true", "false"):
                raise InputError(
                    "--feature-gates", f"[{i}]", f"expected NAME=true|false, got {item!r}"
                )
            attr = _GATES.get(name)
            if attr is not None:
                values[attr] = raw == "true"
        return cls(**values)

    def gates(self) -> str:
        """The ``--feature-gates`` string that reproduces this record."""
        return ",".join(f"{g}={str(getattr(self, a)).lower()}" for g, a in sorted(_GATES.items()))
