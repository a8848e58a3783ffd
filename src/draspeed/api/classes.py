"""DeviceClass, DeviceTaintRule and Node decoding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from draspeed.api import limits, names
from draspeed.api.common import decode_metadata, decode_opaque, decode_selectors, decode_taint
from draspeed.api.context import DecodeContext, child, dict_of
from draspeed.api.messages import invalid, too_many
from draspeed.api.model import (
    DeviceClass,
    DeviceClassConfiguration,
    DeviceClassSpec,
    DeviceTaintRule,
    DeviceTaintSelector,
    Node,
)


def decode_device_class(ctx: DecodeContext, obj: Mapping[str, Any], version: str) -> DeviceClass:
    metadata = decode_metadata(ctx, obj, namespaced=False)
    raw = ctx.mapping(obj, "spec", "") or {}
    spec = DeviceClassSpec(
        selectors=decode_selectors(ctx, raw, "spec"),
        extended_resource_name=ctx.opt_string(raw, "extendedResourceName", "spec"),
    )
    config = ctx.array(raw, "config", "spec") or []
    if ctx.validate and len(config) > limits.DEVICE_CONFIG_MAX_SIZE:
        ctx.fail("spec.config", too_many(len(config), limits.DEVICE_CONFIG_MAX_SIZE))
    for i, c in enumerate(config):
        path = f"spec.config[{i}]"
        c = ctx.item(c, path)
        spec.config.append(DeviceClassConfiguration(opaque=decode_opaque(ctx, c, path)))
    name = spec.extended_resource_name
    if ctx.validate and name is not None and not names.is_extended_resource_name(name):
        ctx.fail(
            "spec.extendedResourceName", invalid(name, "must be a valid extended resource name")
        )
    if (
        raw.get("suitableNodes") is not None
        and "suitableNodes" in ctx.known_fields["DeviceClassSpec"]
    ):
        ctx.warn(
            "spec.suitableNodes",
            "only used by the classic DRA control-plane controller; "
            "structured allocation ignores it",
        )
    return DeviceClass(
        metadata=metadata, spec=spec, api_version=f"resource.k8s.io/{version}", raw=dict_of(obj)
    )


def decode_device_taint_rule(
    ctx: DecodeContext, obj: Mapping[str, Any], version: str
) -> DeviceTaintRule:
    metadata = decode_metadata(ctx, obj, namespaced=False)
    spec = ctx.mapping(obj, "spec", "") or {}  # (a struct: absent, the zero spec)
    selector = None
    raw = ctx.mapping(spec, "deviceSelector", "spec")
    if raw is not None:
        path = "spec.deviceSelector"
        selector = DeviceTaintSelector(
            device_class_name=ctx.opt_string(raw, "deviceClassName", path),
            driver=ctx.opt_string(raw, "driver", path),
            pool=ctx.opt_string(raw, "pool", path),
            device=ctx.opt_string(raw, "device", path),
            selectors=decode_selectors(ctx, raw, path),
        )
        if ctx.validate:
            for key, value, checker in (
                ("deviceClassName", selector.device_class_name, names.check_dns_subdomain),
                ("driver", selector.driver, names.check_driver_name),
                ("pool", selector.pool, names.check_pool_name),
                ("device", selector.device, names.check_dns_label),
            ):
                if value is not None:
                    problem = checker(value)
                    if problem is not None:
                        ctx.fail(child(path, key), problem)
    taint_raw = spec.get("taint")
    if taint_raw is None:
        taint_raw = {}
    taint = decode_taint(ctx, taint_raw, "spec.taint")
    return DeviceTaintRule(
        metadata=metadata,
        device_selector=selector,
        taint=taint,
        api_version=f"resource.k8s.io/{version}",
        raw=dict_of(obj),
    )


def decode_node(ctx: DecodeContext, obj: Mapping[str, Any], version: str) -> Node:
    return Node(metadata=decode_metadata(ctx, obj, namespaced=False), raw=dict_of(obj))
