"""ResourceClaim and ResourceClaimTemplate decoding (v1, v1beta2, v1beta1, v1alpha3),
and the AllocationResult shared with claim status.

v1 and v1beta2 put a plain request under ``exactly``; v1beta1 and v1alpha3 put its
fields (``deviceClassName``, ``selectors``, ``allocationMode``, ...) directly on the
request, next to ``firstAvailable``. Both decode to the same model, with the API
server's defaulting applied (``allocationMode`` ExactCount, ``count`` 1).

Inputs that the API server refuses but upstream's *allocator* answers with its own
error are refused with validation and decoded without it (``validate="ignore"``), so
that draspeed then answers with the allocator's text: an empty ``deviceClassName``, a
selector without ``cel``, an unknown ``allocationMode``, a constraint with neither
``matchAttribute`` nor ``distinctAttribute``. ``adminAccess`` passes either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from draspeed.api import limits, names
from draspeed.api.common import (
    check_binding_conditions,
    check_template_metadata,
    decode_metadata,
    decode_node_selector,
    decode_opaque,
    decode_selectors,
    decode_toleration,
    decode_tolerations,
)
from draspeed.api.context import DecodeContext, child, dict_of
from draspeed.api.messages import (
    duplicate,
    invalid,
    not_supported,
    required,
    too_many,
)
from draspeed.api.model import (
    AllocationResult,
    CapacityRequirements,
    DeviceAllocationConfiguration,
    DeviceClaim,
    DeviceClaimConfiguration,
    DeviceConstraint,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSubRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimSpec,
    ResourceClaimStatus,
    ResourceClaimTemplate,
)

_FLAT_VERSIONS = ("v1beta1", "v1alpha3")
_CONFIG_SOURCES = ("FromClaim", "FromClass")
_API_VERSIONS = {v: f"resource.k8s.io/{v}" for v in ("v1", "v1beta2", "v1beta1", "v1alpha3")}


def decode_resource_claim(
    ctx: DecodeContext, obj: Mapping[str, Any], version: str
) -> ResourceClaim:
    metadata = decode_metadata(ctx, obj, namespaced=True)
    spec_raw = ctx.mapping(obj, "spec", "") or {}
    spec = decode_claim_spec(ctx, spec_raw, "spec", flat=version in _FLAT_VERSIONS)
    status_raw = ctx.mapping(obj, "status", "")
    status = ResourceClaimStatus()
    if status_raw:
        known = _request_names(spec.devices.requests)
        status = _decode_status(ctx, status_raw, version, known)
    return ResourceClaim(
        metadata=metadata,
        spec=spec,
        status=status,
        api_version=_API_VERSIONS.get(version) or f"resource.k8s.io/{version}",
        raw=dict_of(obj),
    )


def decode_resource_claim_template(
    ctx: DecodeContext, obj: Mapping[str, Any], version: str
) -> ResourceClaimTemplate:
    metadata = decode_metadata(ctx, obj, namespaced=True)
    outer = ctx.mapping(obj, "spec", "") or {}  # (a struct: absent, the zero spec)
    check_template_metadata(ctx, outer, "spec")
    inner = ctx.mapping(outer, "spec", "spec") or {}
    spec = decode_claim_spec(ctx, inner, "spec.spec", flat=version in _FLAT_VERSIONS)
    return ResourceClaimTemplate(
        metadata=metadata, spec=spec, api_version=f"resource.k8s.io/{version}", raw=dict_of(obj)
    )


def decode_claim_spec(
    ctx: DecodeContext, raw: Mapping[str, Any], path: str, *, flat: bool
) -> ResourceClaimSpec:
    if flat and raw.get("controller"):
        ctx.warn(
            child(path, "controller"),
            "the classic DRA control-plane controller is not supported "
            "by structured allocation; the field is ignored",
        )
    devices = ctx.mapping(raw, "devices", path)
    if devices is None:
        return ResourceClaimSpec()
    path = child(path, "devices")
    return ResourceClaimSpec(devices=_decode_device_claim(ctx, devices, path, flat=flat))


def _decode_device_claim(
    ctx: DecodeContext, raw: Mapping[str, Any], path: str, *, flat: bool
) -> DeviceClaim:
    validate = ctx.validate
    requests_raw = ctx.array(raw, "requests", path) or []
    rpath = child(path, "requests")
    if validate and len(requests_raw) > limits.DEVICE_REQUESTS_MAX_SIZE:
        ctx.fail(rpath, too_many(len(requests_raw), limits.DEVICE_REQUESTS_MAX_SIZE))
    requests = [_decode_request(ctx, r, f"{rpath}[{i}]", flat) for i, r in enumerate(requests_raw)]
    if validate:
        _check_unique(ctx, [r.name for r in requests], rpath)
    known = _request_names(requests)

    constraints_raw = ctx.array(raw, "constraints", path) or []
    cpath = child(path, "constraints")
    if validate and len(constraints_raw) > limits.DEVICE_CONSTRAINTS_MAX_SIZE:
        ctx.fail(cpath, too_many(len(constraints_raw), limits.DEVICE_CONSTRAINTS_MAX_SIZE))
    constraints = [
        _decode_constraint(ctx, c, f"{cpath}[{i}]", known) for i, c in enumerate(constraints_raw)
    ]

    config_raw = ctx.array(raw, "config", path) or []
    gpath = child(path, "config")
    if validate and len(config_raw) > limits.DEVICE_CONFIG_MAX_SIZE:
        ctx.fail(gpath, too_many(len(config_raw), limits.DEVICE_CONFIG_MAX_SIZE))
    config = []
    for i, c in enumerate(config_raw):
        cfg_path = f"{gpath}[{i}]"
        c = ctx.item(c, cfg_path)
        config.append(
            DeviceClaimConfiguration(
                requests=_request_refs(ctx, c, cfg_path, known),
                opaque=decode_opaque(ctx, c, cfg_path),
            )
        )
    return DeviceClaim(requests=requests, constraints=constraints, config=config)


def _check_unique(ctx: DecodeContext, values: list[str], path: str) -> None:
    seen: set[str] = set()
    for i, v in enumerate(values):
        if v in seen:
            ctx.fail(f"{path}[{i}]", duplicate(v))
        seen.add(v)


def _request_names(requests: list[DeviceRequest]) -> dict[str, set[str]]:
    return {r.name: {s.name for s in r.first_available} for r in requests}


def _request_refs(
    ctx: DecodeContext, d: Mapping[str, Any], path: str, known: dict[str, set[str]]
) -> list[str]:
    """``requests`` of a constraint or config: names of requests (``req`` or ``req/sub``)."""
    refs = ctx.string_list(d, "requests", path)
    if not ctx.validate or not refs:
        return refs
    _check_request_refs(ctx, refs, child(path, "requests"), known)
    return refs


_NOT_A_REQUEST = (
    "must be the name of a request in the claim or the "
    "name of a request and a subrequest separated by '/'"
)


def _check_request_refs(
    ctx: DecodeContext,
    refs: list[str],
    path: str,
    known: dict[str, set[str]],
    *,
    indexed: bool = True,
) -> None:
    """Request references (``req`` or ``req/sub``) as upstream's validateRequestNameRef
    checks them; ``indexed``: a list at ``path`` (else one reference at ``path``)."""
    if indexed and len(refs) > limits.DEVICE_REQUESTS_MAX_SIZE:
        ctx.fail(path, too_many(len(refs), limits.DEVICE_REQUESTS_MAX_SIZE))
    for i, ref in enumerate(refs):
        where = f"{path}[{i}]" if indexed else path
        parts = ref.split("/")
        if len(parts) > 2:
            ctx.fail(where, invalid(ref, _NOT_A_REQUEST))
        for part in parts:
            problem = names.check_dns_label(part)
            if problem is not None:
                ctx.fail(where, problem)
        subs = known.get(parts[0])
        if subs is None or (len(parts) == 2 and parts[1] not in subs):
            ctx.fail(where, invalid(ref, _NOT_A_REQUEST))
    if indexed:
        _check_unique(ctx, refs, path)


# --------------------------------------------------------------------------- requests


def _decode_request(ctx: DecodeContext, raw: Any, path: str, flat: bool) -> DeviceRequest:
    raw = ctx.item(raw, path)
    name = ctx.shared_string(raw, "name", path, required=ctx.validate)
    if ctx.validate:
        problem = names.check_dns_label(name)
        if problem is not None:
            ctx.fail(child(path, "name"), problem)
    if flat:
        exact_raw: Mapping[str, Any] | None = raw if _flat_exact_present(raw) else None
        exact_path = path
    else:
        exact_raw = ctx.mapping(raw, "exactly", path)
        exact_path = child(path, "exactly")
    subs_raw = ctx.array(raw, "firstAvailable", path)
    if ctx.validate:
        if exact_raw is None and not subs_raw:
            ctx.fail(path, required("exactly one of `exactly` or `firstAvailable` is required"))
        if exact_raw is not None and subs_raw:
            ctx.fail(
                path,
                invalid(
                    None,
                    "exactly one of `exactly` or `firstAvailable` is required, "
                    "but multiple fields are set",
                ),
            )
    request = DeviceRequest(name=name)
    if exact_raw is not None:
        request.exactly = _decode_exact(ctx, exact_raw, exact_path)
    if subs_raw:
        spath = child(path, "firstAvailable")
        if ctx.validate and len(subs_raw) > limits.FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE:
            ctx.fail(spath, too_many(len(subs_raw), limits.FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE))
        request.first_available = [
            _decode_subrequest(ctx, s, f"{spath}[{i}]") for i, s in enumerate(subs_raw)
        ]
        if ctx.validate:
            _check_unique(ctx, [s.name for s in request.first_available], spath)
    return request


def _flat_exact_present(raw: Mapping[str, Any]) -> bool:
    """Whether a v1beta1/v1alpha3 request sets any field of a plain request, as the API
    server's conversion decides it (the zero values of plain fields count as unset:
    servers print ``deviceClassName: ""`` on requests with ``firstAvailable``)."""
    return bool(
        raw.get("deviceClassName")
        or raw.get("selectors") is not None
        or raw.get("allocationMode")
        or raw.get("count")
        or raw.get("adminAccess") is not None
        or raw.get("tolerations")
        or raw.get("capacity") is not None
    )


_ALLOCATION_MODES = ("All", "ExactCount")


def _mode_and_count(ctx: DecodeContext, raw: Mapping[str, Any], path: str) -> tuple[str, int]:
    """``allocationMode`` and ``count`` after the API server's defaulting."""
    mode = ctx.string(raw, "allocationMode", path) or "ExactCount"
    count = ctx.opt_int(raw, "count", path) or 0
    if mode == "ExactCount":
        if count == 0:
            count = 1
        elif ctx.validate and count < 0:
            ctx.fail(child(path, "count"), invalid(count, "must be greater than zero"))
    elif mode == "All":
        if ctx.validate and count != 0:
            ctx.fail(
                child(path, "count"),
                invalid(count, "must not be specified when allocationMode is 'All'"),
            )
    elif ctx.validate:
        # Unvalidated, the allocator answers it ("unsupported count mode").
        ctx.fail(child(path, "allocationMode"), not_supported(mode, _ALLOCATION_MODES))
    return mode, count


def _class_name(ctx: DecodeContext, raw: Mapping[str, Any], path: str) -> str:
    # Unvalidated, an empty name is the allocator's error ("missing device class name").
    name = ctx.string(raw, "deviceClassName", path)
    if ctx.validate:
        problem = names.check_dns_subdomain(name)
        if problem is not None:
            ctx.fail(child(path, "deviceClassName"), problem)
    return name


def _decode_exact(ctx: DecodeContext, raw: Mapping[str, Any], path: str) -> ExactDeviceRequest:
    # In the API server's order: class, selectors, mode and count, tolerations.
    class_name = _class_name(ctx, raw, path)
    selectors = decode_selectors(ctx, raw, path)
    mode, count = _mode_and_count(ctx, raw, path)
    return ExactDeviceRequest(
        device_class_name=ctx.caches.strings.setdefault(class_name, class_name),
        selectors=selectors,
        allocation_mode=mode,
        count=count,
        admin_access=ctx.opt_bool(raw, "adminAccess", path),
        tolerations=decode_tolerations(ctx, raw, path),
        capacity=_decode_capacity_requirements(ctx, raw, path),
    )


def _decode_subrequest(ctx: DecodeContext, raw: Any, path: str) -> DeviceSubRequest:
    raw = ctx.item(raw, path)
    name = ctx.shared_string(raw, "name", path, required=ctx.validate)
    if ctx.validate:
        problem = names.check_dns_label(name)
        if problem is not None:
            ctx.fail(child(path, "name"), problem)
    class_name = _class_name(ctx, raw, path)
    selectors = decode_selectors(ctx, raw, path)
    mode, count = _mode_and_count(ctx, raw, path)
    return DeviceSubRequest(
        name=name,
        device_class_name=class_name,
        selectors=selectors,
        allocation_mode=mode,
        count=count,
        tolerations=decode_tolerations(ctx, raw, path),
        capacity=_decode_capacity_requirements(ctx, raw, path),
    )


def _decode_capacity_requirements(
    ctx: DecodeContext, raw: Mapping[str, Any], path: str
) -> CapacityRequirements | None:
    cap = ctx.mapping(raw, "capacity", path)
    if cap is None:
        return None
    path = child(path, "capacity")
    requests = ctx.mapping(cap, "requests", path) or {}
    rpath = child(path, "requests")
    result = CapacityRequirements()
    for key, value in requests.items():
        if ctx.validate:
            problem = names.check_qualified_name(key)
            if problem is not None:
                ctx.fail(child(rpath, key), problem)
        result.requests[key] = ctx.quantity(value, child(rpath, key))
    return result


def _decode_constraint(
    ctx: DecodeContext, raw: Any, path: str, known: dict[str, set[str]]
) -> DeviceConstraint:
    raw = ctx.item(raw, path)
    constraint = DeviceConstraint(
        requests=_request_refs(ctx, raw, path, known),
        match_attribute=ctx.opt_string(raw, "matchAttribute", path),
        distinct_attribute=ctx.opt_string(raw, "distinctAttribute", path),
    )
    if ctx.validate:
        # As upstream checks it: the first of the two that is set (neither: unvalidated,
        # the allocator's "empty constraint" error).
        for key, value in (
            ("matchAttribute", constraint.match_attribute),
            ("distinctAttribute", constraint.distinct_attribute),
        ):
            if value is not None:
                problem = names.check_fully_qualified_name(value)
                if problem is not None:
                    ctx.fail(child(path, key), problem)
                break
        else:
            # Upstream's text, "but multiple fields are set" included, with the
            # DRAConsumableCapacity gate on (its default since 1.36).
            ctx.fail(
                path,
                required(
                    'exactly one of "matchAttribute" or "distinctAttribute" is required, '
                    "but multiple fields are set"
                ),
            )
    return constraint


# ----------------------------------------------------------------------------- status


def _decode_status(
    ctx: DecodeContext, raw: Mapping[str, Any], version: str, known: dict[str, set[str]]
) -> ResourceClaimStatus:
    """The status, checked as the API server checks a status update (how it got there)."""
    status = ResourceClaimStatus()
    alloc = ctx.mapping(raw, "allocation", "status")
    if alloc is not None:
        status.allocation = decode_allocation_result(ctx, alloc, "status.allocation", known)
        if version == "v1alpha3" and alloc.get("controller"):
            ctx.warn(
                "status.allocation.controller",
                "the classic DRA control-plane controller is not "
                "supported by structured allocation; the field is ignored",
            )
    reserved = ctx.array(raw, "reservedFor", "status") or []
    if ctx.validate and len(reserved) > limits.RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE:
        ctx.fail(
            "status.reservedFor",
            too_many(len(reserved), limits.RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE),
        )
    for i, ref in enumerate(reserved):
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
    devices = ctx.array(raw, "devices", "status") or []
    for i, d in enumerate(devices):
        d = ctx.item(d, f"status.devices[{i}]")
        status.devices.append(dict_of(d))
    status.deallocation_requested = bool(ctx.opt_bool(raw, "deallocationRequested", "status"))
    return status


def decode_allocation_result(
    ctx: DecodeContext,
    raw: Mapping[str, Any],
    path: str,
    known: dict[str, set[str]] | None = None,
) -> AllocationResult:
    """An AllocationResult (any version from v1alpha3 on: the shape never changed, only
    grew). ``known``: the claim's request names, which results and configs must name."""
    result = AllocationResult(allocation_timestamp=ctx.timestamp(raw, "allocationTimestamp", path))
    devices = ctx.mapping(raw, "devices", path)
    if devices is not None:
        dpath = child(path, "devices")
        results = ctx.array(devices, "results", dpath) or []
        configs = ctx.array(devices, "config", dpath) or []
        if ctx.validate:
            for key, items, limit in (
                ("results", results, limits.ALLOCATION_RESULTS_MAX_SIZE),
                ("config", configs, 2 * limits.DEVICE_CONFIG_MAX_SIZE),  # class + claim
            ):
                if len(items) > limit:
                    ctx.fail(f"{dpath}.{key}", too_many(len(items), limit))
        for i, r in enumerate(results):
            result.devices.results.append(
                _decode_device_result(ctx, r, f"{dpath}.results[{i}]", known)
            )
        for i, c in enumerate(configs):
            cpath = f"{dpath}.config[{i}]"
            c = ctx.item(c, cpath)
            source = ctx.string(c, "source", cpath, required=True)
            if ctx.validate and source not in _CONFIG_SOURCES:
                ctx.fail(child(cpath, "source"), not_supported(source, _CONFIG_SOURCES))
            requests = ctx.string_list(c, "requests", cpath)
            if ctx.validate and known is not None:
                _check_request_refs(ctx, requests, child(cpath, "requests"), known)
            result.devices.config.append(
                DeviceAllocationConfiguration(
                    source=source, requests=requests, opaque=decode_opaque(ctx, c, cpath)
                )
            )
    selector = raw.get("nodeSelector")
    if selector is not None:
        result.node_selector = decode_node_selector(ctx, selector, child(path, "nodeSelector"))
    return result


def _decode_device_result(
    ctx: DecodeContext, raw: Any, path: str, known: dict[str, set[str]] | None
) -> DeviceRequestAllocationResult:
    raw = ctx.item(raw, path)
    result = DeviceRequestAllocationResult(
        request=ctx.shared_string(raw, "request", path, required=True),
        driver=ctx.shared_string(raw, "driver", path, required=True),
        pool=ctx.shared_string(raw, "pool", path, required=True),
        device=ctx.shared_string(raw, "device", path, required=True),
        admin_access=ctx.opt_bool(raw, "adminAccess", path),
        binding_conditions=ctx.string_list(raw, "bindingConditions", path),
        binding_failure_conditions=ctx.string_list(raw, "bindingFailureConditions", path),
        share_id=ctx.opt_string(raw, "shareID", path),
    )
    tolerations = ctx.array(raw, "tolerations", path) or []
    tpath = child(path, "tolerations")
    result.tolerations = [
        decode_toleration(ctx, t, f"{tpath}[{i}]") for i, t in enumerate(tolerations)
    ]
    consumed = ctx.mapping(raw, "consumedCapacity", path) or {}
    cpath = child(path, "consumedCapacity")
    for key, value in consumed.items():
        result.consumed_capacity[key] = ctx.quantity(value, child(cpath, key))
    if ctx.validate:
        _check_device_result(ctx, result, raw, path, known)
    return result


def _check_device_result(
    ctx: DecodeContext,
    result: DeviceRequestAllocationResult,
    raw: Mapping[str, Any],
    path: str,
    known: dict[str, set[str]] | None,
) -> None:
    """A result as the API server checks it in a status update, in its order."""
    if known is not None:
        _check_request_refs(ctx, [result.request], child(path, "request"), known, indexed=False)
    for key, value, checker in (
        ("driver", result.driver, names.check_driver_name),
        ("pool", result.pool, names.check_pool_name),
        ("device", result.device, names.check_dns_label),
    ):
        problem = checker(value)
        if problem is not None:
            ctx.fail(child(path, key), problem)
    check_binding_conditions(
        ctx, result.binding_conditions, result.binding_failure_conditions, raw, path
    )
    if result.share_id is not None:
        problem = names.check_uid(result.share_id)
        if problem is not None:
            ctx.fail(child(path, "shareID"), problem)
