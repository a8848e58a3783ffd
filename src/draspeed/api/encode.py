"""AllocationResult to JSON, in the shape of the requested API version.

The output is what Go's ``encoding/json`` prints for upstream's types: camelCase keys
in struct order, ``omitempty`` fields left out when empty, required fields always
present, map keys sorted, quantities as canonical strings.

- v1, v1beta2, v1beta1: one shape.
- v1alpha3 (Kubernetes 1.31-1.33): ``adminAccess`` has no ``omitempty`` there (printed
  as ``null`` when unset); fields added later are dropped with a warning.
- v1alpha2 (classic DRA): per-driver ``resourceHandles`` with structured results; what
  the classic shape cannot hold (pools, request names, tolerations, ...) is reported.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

from draspeed.api.classic import CLASSIC_REQUEST_NAME
from draspeed.api.context import DraspeedConversionWarning
from draspeed.api.model import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceRequestAllocationResult,
    DeviceToleration,
    NodeSelector,
    NodeSelectorRequirement,
    ResourceClaim,
)
from draspeed.errors import InputError

GROUP = "resource.k8s.io"
_CURRENT = ("v1", "v1beta2", "v1beta1")
ENCODABLE_VERSIONS = tuple(f"{GROUP}/{v}" for v in (*_CURRENT, "v1alpha3", "v1alpha2"))

Warn = Callable[[str], None]


def _default_warn(text: str) -> None:
    warnings.warn(text, DraspeedConversionWarning, stacklevel=4)


def encode_allocation(
    result: AllocationResult,
    api_version: str = "resource.k8s.io/v1",
    *,
    sink: list[str] | None = None,
) -> dict[str, Any]:
    """``status.allocation`` of a claim in ``api_version``, JSON-ready.

    Information the version cannot hold is reported with ``warnings.warn``
    (:class:`~draspeed.api.context.DraspeedConversionWarning`) and, when given, appended
    to ``sink``.
    """

    def warn(text: str) -> None:
        if sink is not None:
            sink.append(text)
        _default_warn(text)

    group, _, version = api_version.rpartition("/")
    if group != GROUP or version not in (*_CURRENT, "v1alpha3", "v1alpha2"):
        raise InputError(
            "AllocationResult",
            "apiVersion",
            f"cannot encode for {api_version!r}; supported: {', '.join(ENCODABLE_VERSIONS)}",
        )
    if version == "v1alpha2":
        return _encode_classic(result, warn)
    return _encode_structured(result, alpha3=version == "v1alpha3", warn=warn)


def claim_with_allocation(
    claim: ResourceClaim,
    result: AllocationResult,
    api_version: str | None = None,
    *,
    sink: list[str] | None = None,
) -> dict[str, Any]:
    """A deep copy of the claim as given (``claim.raw``) with ``status.allocation`` set.

    ``api_version`` chooses the shape of ``status.allocation`` and defaults to the
    claim's own version; the rest of the object is left as the user wrote it.
    """
    version = api_version or claim.api_version
    doc = copy.deepcopy(claim.raw)
    doc.setdefault("apiVersion", claim.api_version)
    doc.setdefault("kind", "ResourceClaim")
    status = doc.get("status")
    if not isinstance(status, dict):
        status = doc["status"] = {}
    status["allocation"] = encode_allocation(result, version, sink=sink)
    if version.endswith("/v1alpha2"):
        drivers = list(dict.fromkeys(r.driver for r in result.devices.results))
        if drivers:
            status["driverName"] = drivers[0]
    return doc


# ------------------------------------------------------------------- v1 .. v1alpha3


def encode_node_selector(selector: NodeSelector) -> dict[str, Any]:
    terms = []
    for term in selector.node_selector_terms:
        out: dict[str, Any] = {}
        if term.match_expressions:
            out["matchExpressions"] = [_requirement(r) for r in term.match_expressions]
        if term.match_fields:
            out["matchFields"] = [_requirement(r) for r in term.match_fields]
        terms.append(out)
    return {"nodeSelectorTerms": terms}


def _requirement(req: NodeSelectorRequirement) -> dict[str, Any]:
    out: dict[str, Any] = {"key": req.key, "operator": req.operator}
    if req.values:
        out["values"] = list(req.values)
    return out


def encode_toleration(tol: DeviceToleration) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if tol.key:
        out["key"] = tol.key
    if tol.operator:
        out["operator"] = tol.operator
    if tol.value:
        out["value"] = tol.value
    if tol.effect:
        out["effect"] = tol.effect
    if tol.toleration_seconds is not None:
        out["tolerationSeconds"] = tol.toleration_seconds
    return out


def _config(cfg: DeviceAllocationConfiguration) -> dict[str, Any]:
    out: dict[str, Any] = {"source": cfg.source}
    if cfg.requests:
        out["requests"] = list(cfg.requests)
    if cfg.opaque is not None:
        out["opaque"] = {
            "driver": cfg.opaque.driver,
            "parameters": copy.deepcopy(cfg.opaque.parameters),
        }
    return out


def _device_result(
    r: DeviceRequestAllocationResult, alpha3: bool, warn: Warn, where: str
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "request": r.request,
        "driver": r.driver,
        "pool": r.pool,
        "device": r.device,
    }
    if alpha3 or r.admin_access is not None:
        out["adminAccess"] = r.admin_access
    if r.tolerations:
        out["tolerations"] = [encode_toleration(t) for t in r.tolerations]
    newer = {
        "bindingConditions": list(r.binding_conditions) if r.binding_conditions else None,
        "bindingFailureConditions": list(r.binding_failure_conditions)
        if r.binding_failure_conditions
        else None,
        "shareID": r.share_id,
        "consumedCapacity": (
            {k: str(q) for k, q in sorted(r.consumed_capacity.items())}
            if r.consumed_capacity
            else None
        ),
    }
    for key, value in newer.items():
        if value is None:
            continue
        if alpha3:
            warn(f"{where}: {key} does not exist in resource.k8s.io/v1alpha3 and is dropped")
        else:
            out[key] = value
    return out


def _encode_structured(result: AllocationResult, *, alpha3: bool, warn: Warn) -> dict[str, Any]:
    devices: dict[str, Any] = {}
    if result.devices.results:
        devices["results"] = [
            _device_result(r, alpha3, warn, f"AllocationResult: devices.results[{i}]")
            for i, r in enumerate(result.devices.results)
        ]
    if result.devices.config:
        devices["config"] = [_config(c) for c in result.devices.config]
    out: dict[str, Any] = {"devices": devices}
    if result.node_selector is not None:
        out["nodeSelector"] = encode_node_selector(result.node_selector)
    if result.allocation_timestamp is not None:
        if alpha3:
            warn(
                "AllocationResult: allocationTimestamp does not exist in "
                "resource.k8s.io/v1alpha3 and is dropped"
            )
        else:
            out["allocationTimestamp"] = result.allocation_timestamp
    return out


# -------------------------------------------------------------------------- v1alpha2


def _single_node(selector: NodeSelector | None) -> str:
    """The node of a ``metadata.name In [node]`` selector, else ""."""
    if selector is None or len(selector.node_selector_terms) != 1:
        return ""
    term = selector.node_selector_terms[0]
    if term.match_expressions or len(term.match_fields) != 1:
        return ""
    req = term.match_fields[0]
    if req.key == "metadata.name" and req.operator == "In" and len(req.values) == 1:
        return req.values[0]
    return ""


def _encode_classic(result: AllocationResult, warn: Warn) -> dict[str, Any]:
    where = "AllocationResult"
    node = _single_node(result.node_selector)
    handles: dict[str, dict[str, Any]] = {}
    lost: set[str] = set()
    for i, r in enumerate(result.devices.results):
        handle = handles.get(r.driver)
        if handle is None:
            data: dict[str, Any] = {"vendorClassParameters": None, "vendorClaimParameters": None}
            if node:
                data["nodeName"] = node
            data["results"] = []
            handle = handles[r.driver] = {"driverName": r.driver, "structuredData": data}
        handle["structuredData"]["results"].append(
            {"vendorRequestParameters": None, "namedResources": {"name": r.device}}
        )
        if r.pool != node:
            warn(
                f"{where}: devices.results[{i}]: pool {r.pool!r} cannot be expressed in "
                f"resource.k8s.io/v1alpha2 (only the node name is kept)"
            )
        if r.request != CLASSIC_REQUEST_NAME:
            lost.add("request names")
        for label, present in (
            ("adminAccess", r.admin_access is not None),
            ("tolerations", bool(r.tolerations)),
            ("bindingConditions", bool(r.binding_conditions or r.binding_failure_conditions)),
            ("shareID", r.share_id is not None),
            ("consumedCapacity", bool(r.consumed_capacity)),
        ):
            if present:
                lost.add(label)
    for i, cfg in enumerate(result.devices.config):
        _place_classic_config(
            cfg, handles, result.devices.results, warn, f"{where}: devices.config[{i}]"
        )
    for label in sorted(lost):
        warn(f"{where}: {label} cannot be expressed in resource.k8s.io/v1alpha2 and are dropped")
    if result.allocation_timestamp is not None:
        warn(
            f"{where}: allocationTimestamp cannot be expressed in resource.k8s.io/v1alpha2 "
            "and is dropped"
        )
    out: dict[str, Any] = {}
    if handles:
        out["resourceHandles"] = list(handles.values())
    if result.node_selector is not None:
        out["availableOnNodes"] = encode_node_selector(result.node_selector)
    return out


def _place_classic_config(
    cfg: DeviceAllocationConfiguration,
    handles: dict[str, dict[str, Any]],
    results: list[DeviceRequestAllocationResult],
    warn: Warn,
    where: str,
) -> None:
    """Class config -> the driver's vendorClassParameters, claim-wide config ->
    vendorClaimParameters, per-request claim config -> vendorRequestParameters."""
    if cfg.opaque is None or cfg.opaque.driver not in handles:
        warn(f"{where}: configuration for a driver without allocated devices is dropped")
        return
    data = handles[cfg.opaque.driver]["structuredData"]
    params = copy.deepcopy(cfg.opaque.parameters)
    if cfg.source == "FromClaim" and cfg.requests:
        placed = False
        names = {
            r.device
            for r in results
            if r.driver == cfg.opaque.driver
            and r.request.split("/")[0] in {q.split("/")[0] for q in cfg.requests}
        }
        for entry in data["results"]:
            if (
                entry["namedResources"]["name"] in names
                and entry["vendorRequestParameters"] is None
            ):
                entry["vendorRequestParameters"] = params
                placed = True
        if not placed:
            warn(
                f"{where}: per-request configuration has no free slot in "
                "resource.k8s.io/v1alpha2; dropped"
            )
        return
    key = "vendorClassParameters" if cfg.source == "FromClass" else "vendorClaimParameters"
    if data[key] is not None:
        warn(
            f"{where}: a second {cfg.source} configuration for driver {cfg.opaque.driver!r} "
            "cannot be expressed in resource.k8s.io/v1alpha2; dropped"
        )
        return
    data[key] = params
