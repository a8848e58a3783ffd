"""Classic DRA claims (resource.k8s.io/v1alpha2, Kubernetes 1.26-1.30) into the v1 model.

A classic claim names a ResourceClass and optional parameters; its allocation is a list
of per-driver resource handles, which (with structured parameters, 1.30) carry the
names of the allocated named resources. The conversion keeps what maps:

- the claim becomes one request, :data:`CLASSIC_REQUEST_NAME`, asking for one device
  of ``deviceClassName = resourceClassName``;
- each structured result becomes a device result (driver from the handle or the
  status, device from ``namedResources.name``; the pool is the handle's ``nodeName``,
  the pool name node-local drivers use, and unknown without it);
- vendor class / claim / request parameters become FromClass / FromClaim configs;
- ``availableOnNodes`` becomes the allocation's node selector;
- a ResourceClass becomes a DeviceClass selecting its driver's devices
  (``device.driver == "<driverName>"``).

Everything else (parameter references, Immediate allocation, shareable allocations,
opaque handle data) has no v1 equivalent and is reported with a
:class:`~draspeed.api.context.DraspeedConversionWarning`, never dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from draspeed.api import names
from draspeed.api.common import decode_metadata, decode_node_selector
from draspeed.api.context import DecodeContext, child, dict_of
from draspeed.api.messages import invalid, not_supported
from draspeed.api.model import (
    AllocationResult,
    CELDeviceSelector,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceClaim,
    DeviceClass,
    DeviceClassSpec,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSelector,
    ExactDeviceRequest,
    OpaqueDeviceConfiguration,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimSpec,
    ResourceClaimStatus,
    ResourceClaimTemplate,
)

API_VERSION = "resource.k8s.io/v1alpha2"
CLASSIC_REQUEST_NAME = "request"
_ALLOCATION_MODES = ("Immediate", "WaitForFirstConsumer")


def decode_classic_claim(ctx: DecodeContext, obj: Mapping[str, Any], version: str) -> ResourceClaim:
    metadata = decode_metadata(ctx, obj, namespaced=True)
    spec_raw = ctx.mapping(obj, "spec", "", required=True)
    assert spec_raw is not None
    spec = _convert_spec(ctx, spec_raw, "spec")
    status = ResourceClaimStatus()
    status_raw = ctx.mapping(obj, "status", "")
    if status_raw:
        status = _convert_status(ctx, status_raw)
    return ResourceClaim(
        metadata=metadata, spec=spec, status=status, api_version=API_VERSION, raw=dict_of(obj)
    )


def decode_classic_claim_template(
    ctx: DecodeContext, obj: Mapping[str, Any], version: str
) -> ResourceClaimTemplate:
    metadata = decode_metadata(ctx, obj, namespaced=True)
    outer = ctx.mapping(obj, "spec", "", required=True)
    assert outer is not None
    inner = ctx.mapping(outer, "spec", "spec", required=True)
    assert inner is not None
    return ResourceClaimTemplate(
        metadata=metadata,
        spec=_convert_spec(ctx, inner, "spec.spec"),
        api_version=API_VERSION,
        raw=dict_of(obj),
    )


def _convert_spec(ctx: DecodeContext, raw: Mapping[str, Any], path: str) -> ResourceClaimSpec:
    class_name = ctx.string(raw, "resourceClassName", path, required=True)
    if ctx.validate:
        problem = names.check_dns_subdomain(class_name)
        if problem is not None:
            ctx.fail(child(path, "resourceClassName"), problem)
    mode = ctx.string(raw, "allocationMode", path) or "WaitForFirstConsumer"
    if ctx.validate and mode not in _ALLOCATION_MODES:
        ctx.fail(child(path, "allocationMode"), not_supported(mode, _ALLOCATION_MODES))
    if mode == "Immediate":
        ctx.warn(
            child(path, "allocationMode"),
            "Immediate allocation has no equivalent in "
            "resource.k8s.io/v1 (claims are allocated when a pod using them is scheduled); "
            "converted as WaitForFirstConsumer",
        )
    params = ctx.mapping(raw, "parametersRef", path)
    if params is not None:
        ref = "/".join(
            str(params.get(k, "")) for k in ("apiGroup", "kind", "name") if params.get(k)
        )
        ctx.warn(
            child(path, "parametersRef"),
            f"claim parameters ({ref}) are not part of the v1 model; "
            f"the request asks for one device of class {class_name!r} without selectors",
        )
    request = DeviceRequest(
        name=CLASSIC_REQUEST_NAME,
        exactly=ExactDeviceRequest(
            device_class_name=class_name, allocation_mode="ExactCount", count=1
        ),
    )
    return ResourceClaimSpec(devices=DeviceClaim(requests=[request]))


def _convert_status(ctx: DecodeContext, raw: Mapping[str, Any]) -> ResourceClaimStatus:
    status = ResourceClaimStatus()
    driver_name = ctx.string(raw, "driverName", "status")
    alloc = ctx.mapping(raw, "allocation", "status")
    if alloc is not None:
        status.allocation = _convert_allocation(ctx, alloc, driver_name)
    elif driver_name:
        ctx.warn("status.driverName", "a driver name without an allocation is not kept")
    for i, ref in enumerate(ctx.array(raw, "reservedFor", "status") or []):
        rpath = f"status.reservedFor[{i}]"
        ref = ctx.item(ref, rpath)
        status.reserved_for.append(
            ResourceClaimConsumerReference(
                resource=ctx.string(ref, "resource", rpath),
                name=ctx.string(ref, "name", rpath),
                uid=ctx.string(ref, "uid", rpath),
                api_group=ctx.string(ref, "apiGroup", rpath),
            )
        )
    status.deallocation_requested = bool(ctx.opt_bool(raw, "deallocationRequested", "status"))
    return status


def _convert_allocation(
    ctx: DecodeContext, raw: Mapping[str, Any], driver_name: str
) -> AllocationResult:
    path = "status.allocation"
    result = AllocationResult(devices=DeviceAllocationResult())
    selector = raw.get("availableOnNodes")
    if selector is not None:
        result.node_selector = decode_node_selector(ctx, selector, child(path, "availableOnNodes"))
    if ctx.opt_bool(raw, "shareable", path):
        ctx.warn(
            child(path, "shareable"),
            "shareable allocations (any number of consumers) have no "
            "equivalent in resource.k8s.io/v1; the devices are treated as allocated to this claim",
        )
    class_configs: list[DeviceAllocationConfiguration] = []
    claim_configs: list[DeviceAllocationConfiguration] = []
    for i, handle in enumerate(ctx.array(raw, "resourceHandles", path) or []):
        hpath = f"{path}.resourceHandles[{i}]"
        handle = ctx.item(handle, hpath)
        driver = ctx.string(handle, "driverName", hpath) or driver_name
        structured = ctx.mapping(handle, "structuredData", hpath)
        if structured is None:
            ctx.warn(
                hpath,
                "a resource handle with only opaque driver data names no devices; "
                "the devices of this allocation are unknown",
            )
            continue
        if not driver:
            ctx.fail(
                child(hpath, "driverName"),
                invalid("", "no driver name in the handle or in status.driverName"),
            )
        spath = child(hpath, "structuredData")
        node = ctx.string(structured, "nodeName", spath)
        if not node:
            ctx.warn(
                spath, "no nodeName: the pool of the allocated devices is unknown (pool left empty)"
            )
        _config(structured, "vendorClassParameters", "FromClass", driver, [], class_configs)
        _config(structured, "vendorClaimParameters", "FromClaim", driver, [], claim_configs)
        for j, r in enumerate(ctx.array(structured, "results", spath) or []):
            rpath = f"{spath}.results[{j}]"
            r = ctx.item(r, rpath)
            named = ctx.mapping(r, "namedResources", rpath)
            if named is None:
                ctx.warn(rpath, "a result without namedResources names no device; skipped")
                continue
            device = ctx.string(named, "name", child(rpath, "namedResources"), required=True)
            result.devices.results.append(
                DeviceRequestAllocationResult(
                    request=CLASSIC_REQUEST_NAME,
                    driver=driver,
                    pool=node,
                    device=device,
                )
            )
            _config(
                r,
                "vendorRequestParameters",
                "FromClaim",
                driver,
                [CLASSIC_REQUEST_NAME],
                claim_configs,
            )
    # The allocator lists class configuration before claim configuration.
    result.devices.config = class_configs + claim_configs
    return result


def _config(
    raw: Mapping[str, Any],
    key: str,
    source: str,
    driver: str,
    requests: list[str],
    out: list[DeviceAllocationConfiguration],
) -> None:
    params = raw.get(key)
    if params is None or params == {}:
        return
    config = DeviceAllocationConfiguration(
        source=source,
        requests=list(requests),
        opaque=OpaqueDeviceConfiguration(driver=driver, parameters=params),
    )
    # Per-request parameters repeat on every result of the request: keep one copy.
    if config not in out:
        out.append(config)


def decode_classic_class(ctx: DecodeContext, obj: Mapping[str, Any], version: str) -> DeviceClass:
    """A v1alpha2 ResourceClass as the DeviceClass that selects its driver's devices."""
    metadata = decode_metadata(ctx, obj, namespaced=False)
    driver = ctx.string(obj, "driverName", "", required=True)
    if ctx.validate:
        problem = names.check_driver_name(driver)
        if problem is not None:
            ctx.fail("driverName", problem)
    for key in ("parametersRef", "suitableNodes"):
        if obj.get(key) is not None:
            ctx.warn(key, "has no equivalent in a v1 DeviceClass; ignored")
    # json.dumps quoting is valid CEL string syntax for any driver name.
    expression = f"device.driver == {json.dumps(driver)}"
    spec = DeviceClassSpec(selectors=[DeviceSelector(cel=CELDeviceSelector(expression=expression))])
    return DeviceClass(metadata=metadata, spec=spec, api_version=API_VERSION, raw=dict_of(obj))
