"""Turning the devices chosen for one claim into its ``AllocationResult``.

Mirrors the tail of upstream ``Allocate``: one device result per chosen device
(in allocation order), the configuration merged from the device classes and the
claim, and the node selector that pins the allocation to where the devices are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from draspeed.api.model import (
    AllocationResult,
    Device,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceClass,
    DeviceRequestAllocationResult,
    DeviceToleration,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OpaqueDeviceConfiguration,
    ResourceClaim,
    ResourceSlice,
)
from draspeed.errors import DraspeedError
from draspeed.features import Features
from draspeed.quantity import Quantity
from draspeed.rules.ids import DeviceID


class ResultError(DraspeedError):
    """The result cannot be expressed; ``str()`` is upstream's text."""


@dataclass(slots=True)
class ChosenDevice:
    """One device an engine picked for a request (or subrequest) of a claim."""

    request: str  # the request name, or the subrequest name when parent_request is set
    parent_request: str | None
    device_id: DeviceID
    device: Device
    slice: ResourceSlice
    share_id: str | None = None
    # Keyed like the device's capacities: as its slice wrote them, and so printed.
    consumed_capacity: dict[str, Quantity] | None = None
    admin_access: bool = False

    @property
    def request_name(self) -> str:
        """``request`` or ``request/subrequest``, as the result names it."""
        if self.parent_request is None:
            return self.request
        return f"{self.parent_request}/{self.request}"


def request_tolerations(claim: ResourceClaim, chosen: ChosenDevice) -> list[DeviceToleration]:
    """The tolerations of the (sub)request a device was chosen for."""
    name = chosen.parent_request if chosen.parent_request is not None else chosen.request
    for request in claim.spec.devices.requests:
        if request.name != name:
            continue
        if chosen.parent_request is None:
            return list(request.exactly.tolerations) if request.exactly is not None else []
        for sub in request.first_available:
            if sub.name == chosen.request:
                return list(sub.tolerations)
    return []


def _copy_opaque(opaque: OpaqueDeviceConfiguration | None) -> OpaqueDeviceConfiguration | None:
    if opaque is None:
        return None
    return OpaqueDeviceConfiguration(driver=opaque.driver, parameters=opaque.parameters)


def _effective_request_names(
    claim: ResourceClaim, selected: Sequence[int | None]
) -> list[set[str]]:
    """Per request, the names that address it: ``req`` and, for a prioritized list, ``req/sub``."""
    names = []
    for index, request in enumerate(claim.spec.devices.requests):
        aliases = {request.name}
        sub_index = selected[index] if index < len(selected) else None
        if request.first_available and sub_index is not None:
            aliases.add(f"{request.name}/{request.first_available[sub_index].name}")
        names.append(aliases)
    return names


def merge_config(
    claim: ResourceClaim,
    request_classes: Sequence[DeviceClass | None],
    selected: Sequence[int | None],
) -> list[DeviceAllocationConfiguration]:
    """Class configs first (once per class, naming every request that used it), then the
    claim's configs that apply to a request or to the selected subrequest. A config that
    covers every request of the claim gets ``requests`` cleared (empty means all)."""
    configs: list[DeviceAllocationConfiguration] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    for index, request in enumerate(claim.spec.devices.requests):
        device_class = request_classes[index] if index < len(request_classes) else None
        if device_class is None:
            continue
        name = request.name
        sub_index = selected[index] if index < len(selected) else None
        if request.first_available and sub_index is not None:
            name = f"{request.name}/{request.first_available[sub_index].name}"
        class_name = device_class.metadata.name
        if class_name in class_ranges:
            start, end = class_ranges[class_name]
            for config in configs[start:end]:
                config.requests.append(name)
            continue
        start = len(configs)
        for class_config in device_class.spec.config:
            configs.append(
                DeviceAllocationConfiguration(
                    source="FromClass", requests=[name], opaque=_copy_opaque(class_config.opaque)
                )
            )
        class_ranges[class_name] = (start, len(configs))

    addressed = _effective_request_names(claim, selected)
    for claim_config in claim.spec.devices.config:
        wanted = set(claim_config.requests)
        if not wanted or any(aliases & wanted for aliases in addressed):
            configs.append(
                DeviceAllocationConfiguration(
                    source="FromClaim",
                    requests=list(claim_config.requests),
                    opaque=_copy_opaque(claim_config.opaque),
                )
            )

    for config in configs:
        if config.requests and all(aliases & set(config.requests) for aliases in addressed):
            config.requests = []
    return configs


def _add_requirements(
    source: Sequence[NodeSelectorRequirement], target: list[NodeSelectorRequirement]
) -> None:
    for requirement in source:
        values = set(requirement.values)
        if any(
            r.key == requirement.key
            and r.operator == requirement.operator
            and set(r.values) == values
            for r in target
        ):
            continue
        target.append(
            NodeSelectorRequirement(requirement.key, requirement.operator, list(requirement.values))
        )


def allocation_node_selector(
    devices: Sequence[ChosenDevice], node_name: str
) -> NodeSelector | None:
    """Upstream's createNodeSelector: where the allocation is usable (None: everywhere).

    Any node-local device (or one that binds to the node) pins it to the node; otherwise
    the single-term selectors of the slices (or devices, with per-device node selection)
    are unioned into one term. Raises ResultError for a selector with several terms.
    """
    term = NodeSelectorTerm()
    for chosen in devices:
        spec = chosen.slice.spec
        if spec.per_device_node_selection:
            local_name, selector = chosen.device.node_name, chosen.device.node_selector
        else:
            local_name, selector = spec.node_name, spec.node_selector
        if local_name is not None or chosen.device.binds_to_node:
            return NodeSelector(
                [
                    NodeSelectorTerm(
                        match_fields=[NodeSelectorRequirement("metadata.name", "In", [node_name])]
                    )
                ]
            )
        if selector is None or not selector.node_selector_terms:
            continue
        if len(selector.node_selector_terms) > 1:
            raise ResultError(
                "unsupported ResourceSlice.NodeSelector with "
                f"{len(selector.node_selector_terms)} terms"
            )
        _add_requirements(selector.node_selector_terms[0].match_fields, term.match_fields)
        _add_requirements(selector.node_selector_terms[0].match_expressions, term.match_expressions)
    if term.match_fields or term.match_expressions:
        return NodeSelector([term])
    return None


def device_result(
    claim: ResourceClaim, chosen: ChosenDevice, features: Features
) -> DeviceRequestAllocationResult:
    """The DeviceRequestAllocationResult of one chosen device."""
    result = DeviceRequestAllocationResult(
        request=chosen.request_name,
        driver=chosen.device_id.driver,
        pool=chosen.device_id.pool,
        device=chosen.device_id.device,
        admin_access=True if chosen.admin_access else None,
        tolerations=request_tolerations(claim, chosen),
        share_id=chosen.share_id,
        consumed_capacity=dict(chosen.consumed_capacity or {}),
    )
    if features.device_binding_and_status:
        result.binding_conditions = list(chosen.device.binding_conditions)
        result.binding_failure_conditions = list(chosen.device.binding_failure_conditions)
    return result


def build_allocation_result(
    claim: ResourceClaim,
    devices: Sequence[ChosenDevice],
    request_classes: Sequence[DeviceClass | None],
    selected_subrequests: Sequence[int | None],
    node_name: str,
    features: Features,
    config: list[DeviceAllocationConfiguration] | None = None,
) -> AllocationResult:
    """The AllocationResult of one claim.

    ``request_classes[i]`` is the class request ``i`` was allocated with (for a
    prioritized list, the selected subrequest's class) and
    ``selected_subrequests[i]`` the index of that subrequest (None otherwise).
    ``config``: the :func:`merge_config` of the same claim, classes and subrequests,
    if the caller already has it (it does not depend on the node or the devices).
    Raises ResultError with upstream's text ("create NodeSelector for claim ...").
    """
    try:
        node_selector = allocation_node_selector(devices, node_name)
    except ResultError as err:
        raise ResultError(f"create NodeSelector for claim {claim.metadata.name}: {err}") from err
    return AllocationResult(
        devices=DeviceAllocationResult(
            results=[device_result(claim, chosen, features) for chosen in devices],
            config=(
                merge_config(claim, request_classes, selected_subrequests)
                if config is None
                else config
            ),
        ),
        node_selector=node_selector,
    )
