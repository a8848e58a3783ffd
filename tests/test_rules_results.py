"""AllocationResult construction: config merge, node selector union, device results."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from draspeed.api.model import (
    Device,
    DeviceAllocationConfiguration,
    DeviceClaim,
    DeviceClaimConfiguration,
    DeviceClass,
    DeviceClassConfiguration,
    DeviceClassSpec,
    DeviceRequest,
    DeviceSubRequest,
    DeviceToleration,
    ExactDeviceRequest,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    OpaqueDeviceConfiguration,
    ResourceClaim,
    ResourceClaimSpec,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from draspeed.features import Features
from draspeed.quantity import Quantity
from draspeed.rules.ids import DeviceID
from draspeed.rules.results import (
    ChosenDevice,
    ResultError,
    allocation_node_selector,
    build_allocation_result,
    merge_config,
)


def opaque(tag: str) -> OpaqueDeviceConfiguration:
    return OpaqueDeviceConfiguration(driver="gpu.example.com", parameters={"tag": tag})


def device_class(name: str, *tags: str) -> DeviceClass:
    return DeviceClass(
        ObjectMeta(name=name),
        DeviceClassSpec(config=[DeviceClassConfiguration(opaque(t)) for t in tags]),
    )


def claim(
    requests: list[DeviceRequest], config: Sequence[DeviceClaimConfiguration] = ()
) -> ResourceClaim:
    return ResourceClaim(
        ObjectMeta(name="c", namespace="ns"),
        ResourceClaimSpec(DeviceClaim(requests=requests, config=list(config))),
    )


def exact(
    name: str, cls: str = "gpu", tolerations: list[DeviceToleration] | None = None
) -> DeviceRequest:
    return DeviceRequest(name, exactly=ExactDeviceRequest(cls, tolerations=tolerations or []))


def prioritized(name: str, *subs: str) -> DeviceRequest:
    return DeviceRequest(name, first_available=[DeviceSubRequest(s, "gpu") for s in subs])


def summary(configs: list[DeviceAllocationConfiguration]) -> list[tuple[str, list[str], str]]:
    out = []
    for c in configs:
        assert c.opaque is not None
        out.append((c.source, c.requests, c.opaque.parameters["tag"]))
    return out


def test_class_configs_once_per_class_then_claim_configs() -> None:
    gpu, net = device_class("gpu", "g1", "g2"), device_class("net", "n1")
    the_claim = claim(
        [exact("a"), exact("b", "net"), exact("c"), exact("d", "other")],
        [
            DeviceClaimConfiguration([], opaque("all")),
            DeviceClaimConfiguration(["b"], opaque("only-b")),
            DeviceClaimConfiguration(["zzz"], opaque("nobody")),
        ],
    )
    configs = merge_config(the_claim, [gpu, net, gpu, device_class("other")], [None] * 4)
    assert summary(configs) == [
        ("FromClass", ["a", "c"], "g1"),
        ("FromClass", ["a", "c"], "g2"),
        ("FromClass", ["b"], "n1"),
        ("FromClaim", [], "all"),
        ("FromClaim", ["b"], "only-b"),
    ]


def test_config_covering_every_request_loses_its_request_list() -> None:
    gpu = device_class("gpu", "g1")
    the_claim = claim(
        [exact("a"), exact("b")],
        [
            DeviceClaimConfiguration(["a", "b"], opaque("ab")),
            DeviceClaimConfiguration(["a"], opaque("a")),
        ],
    )
    assert summary(merge_config(the_claim, [gpu, gpu], [None, None])) == [
        ("FromClass", [], "g1"),
        ("FromClaim", [], "ab"),
        ("FromClaim", ["a"], "a"),
    ]


def test_subrequest_configs_follow_the_selected_subrequest() -> None:
    gpu, big = device_class("gpu", "g"), device_class("big", "b")
    the_claim = claim(
        [prioritized("p", "small", "large"), exact("x")],
        [
            DeviceClaimConfiguration(["p/large"], opaque("for-large")),
            DeviceClaimConfiguration(["p/small"], opaque("for-small")),
            DeviceClaimConfiguration(["p"], opaque("for-p")),
            DeviceClaimConfiguration(["p/large", "x"], opaque("large-and-x")),
        ],
    )
    configs = merge_config(the_claim, [big, gpu], [1, None])
    assert summary(configs) == [
        ("FromClass", ["p/large"], "b"),
        ("FromClass", ["x"], "g"),
        ("FromClaim", ["p/large"], "for-large"),
        ("FromClaim", ["p"], "for-p"),
        ("FromClaim", [], "large-and-x"),
    ]


def node_selector(*reqs: NodeSelectorRequirement, fields: tuple = ()) -> NodeSelector:
    return NodeSelector([NodeSelectorTerm(list(reqs), list(fields))])


def make_slice(name: str, **spec: Any) -> ResourceSlice:
    return ResourceSlice(
        ObjectMeta(name=name), ResourceSliceSpec(driver="d", pool=ResourcePool("p", 1, 1), **spec)
    )


def chosen(slice_: ResourceSlice, device: Device | None = None, **kw: Any) -> ChosenDevice:
    device = device or Device("dev")
    return ChosenDevice("r", None, DeviceID("d", "p", device.name), device, slice_, **kw)


ZONE_A = NodeSelectorRequirement("zone", "In", ["a", "b"])
ZONE_A_REORDERED = NodeSelectorRequirement("zone", "In", ["b", "a"])
RACK = NodeSelectorRequirement("rack", "NotIn", ["r9"])


def test_node_selector_union_deduplicates_by_value_set() -> None:
    s1 = make_slice("s1", node_selector=node_selector(ZONE_A))
    s2 = make_slice("s2", node_selector=node_selector(ZONE_A_REORDERED, RACK))
    s3 = make_slice("s3", all_nodes=True)
    result = allocation_node_selector([chosen(s1), chosen(s2), chosen(s3)], "node-1")
    assert result == node_selector(ZONE_A, RACK)


def test_node_local_or_binding_devices_pin_the_node() -> None:
    pinned = NodeSelector(
        [
            NodeSelectorTerm(
                match_fields=[NodeSelectorRequirement("metadata.name", "In", ["node-1"])]
            )
        ]
    )
    s1 = make_slice("s1", node_selector=node_selector(ZONE_A))
    local = make_slice("s2", node_name="node-1")
    assert allocation_node_selector([chosen(s1), chosen(local)], "node-1") == pinned
    binds = Device("dev", binds_to_node=True)
    assert allocation_node_selector([chosen(s1, binds)], "node-1") == pinned
    per_device = make_slice("s3", per_device_node_selection=True)
    assert allocation_node_selector([chosen(per_device, Device("x", all_nodes=True))], "n") is None
    assert (
        allocation_node_selector([chosen(per_device, Device("x", node_name="node-1"))], "node-1")
        == pinned
    )
    assert allocation_node_selector([], "node-1") is None


def test_node_selector_with_several_terms_is_an_error() -> None:
    two = NodeSelector([NodeSelectorTerm([ZONE_A]), NodeSelectorTerm([RACK])])
    with pytest.raises(ResultError, match=r"unsupported ResourceSlice\.NodeSelector with 2 terms"):
        allocation_node_selector([chosen(make_slice("s", node_selector=two))], "n")
    the_claim = claim([exact("r")])
    with pytest.raises(ResultError, match=r"^create NodeSelector for claim c: unsupported"):
        build_allocation_result(
            the_claim,
            [chosen(make_slice("s", node_selector=two))],
            [device_class("gpu")],
            [None],
            "n",
            Features(),
        )


def test_device_results() -> None:
    toleration = DeviceToleration(key="maint", operator="Exists")
    the_claim = claim([exact("r", tolerations=[toleration])])
    device = Device("dev", binding_conditions=["ready"], binding_failure_conditions=["failed"])
    share = chosen(
        make_slice("s", all_nodes=True),
        device,
        share_id="u-1",
        admin_access=True,
        consumed_capacity={"memory": Quantity.parse("1Gi")},
    )
    result = build_allocation_result(
        the_claim, [share], [device_class("gpu")], [None], "n", Features()
    )
    (item,) = result.devices.results
    assert (item.request, item.driver, item.pool, item.device) == ("r", "d", "p", "dev")
    assert item.admin_access is True and item.share_id == "u-1"
    assert item.tolerations == [toleration]
    assert item.consumed_capacity == {"memory": Quantity.parse("1Gi")}
    assert item.binding_conditions == ["ready"] and item.binding_failure_conditions == ["failed"]
    assert result.node_selector is None

    off = Features(device_binding_conditions=False)
    plain = build_allocation_result(
        the_claim,
        [chosen(make_slice("s", all_nodes=True), device)],
        [device_class("gpu")],
        [None],
        "n",
        off,
    )
    (item,) = plain.devices.results
    assert item.admin_access is None and item.binding_conditions == []
    assert item.consumed_capacity == {}
