"""Pod decoding (core/v1): the parts that scheduling a pod's device claims reads.

A cluster dump (``kubectl get pods,resourceclaims,... -o yaml``) holds Pods; draspeed
reads their ``spec.resourceClaims`` (claims by name or from a ResourceClaimTemplate),
their containers' resource requests (extended resources backed by a DeviceClass),
``spec.overhead``, ``spec.nodeName`` and ``status.resourceClaimStatuses`` (the claims
kube-controller-manager made from templates). Everything else is kept in ``raw``.

With ``validate=True`` the pod claims are checked as the API server checks them
(names, exactly one source), and so are the amounts of the containers' requests and
limits and of the overhead (at least 0; whole for extended resources).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from draspeed.api import names
from draspeed.api.common import decode_metadata
from draspeed.api.context import DecodeContext, child, dict_of
from draspeed.api.messages import duplicate, invalid, not_found, required
from draspeed.api.model import Container, Pod, PodResourceClaim
from draspeed.quantity import Quantity


def decode_pod(ctx: DecodeContext, obj: Mapping[str, Any], version: str) -> Pod:
    metadata = decode_metadata(ctx, obj, namespaced=True)
    spec = ctx.mapping(obj, "spec", "") or {}
    status = ctx.mapping(obj, "status", "") or {}
    meta = obj.get("metadata")
    deleting = isinstance(meta, Mapping) and meta.get("deletionTimestamp") is not None
    overhead = _resource_list(ctx, spec, "overhead", "spec")
    if ctx.validate:
        for name, quantity in overhead.items():
            _check_amount(ctx, name, quantity, f"spec.overhead[{name}]")
    # (In the API server's order: the pod's claims, then its containers, then its
    # init containers.)
    claims = _pod_claims(ctx, spec)
    claim_names = {c.name for c in claims if c.name}
    containers = _containers(ctx, spec, "containers", claim_names)
    init_containers = _containers(ctx, spec, "initContainers", claim_names)
    return Pod(
        metadata=metadata,
        resource_claims=claims,
        init_containers=init_containers,
        containers=containers,
        overhead=overhead,
        node_name=ctx.string(spec, "nodeName", "spec"),
        phase=ctx.string(status, "phase", "status"),
        deleting=deleting,
        claim_statuses=_claim_statuses(ctx, status),
        raw=dict_of(obj),
    )


def _pod_claims(ctx: DecodeContext, spec: Mapping[str, Any]) -> list[PodResourceClaim]:
    out: list[PodResourceClaim] = []
    seen: set[str] = set()
    for i, raw in enumerate(ctx.array(spec, "resourceClaims", "spec") or []):
        path = f"spec.resourceClaims[{i}]"
        raw = ctx.item(raw, path)
        claim = PodResourceClaim(
            name=ctx.string(raw, "name", path),
            resource_claim_name=ctx.opt_string(raw, "resourceClaimName", path),
            resource_claim_template_name=ctx.opt_string(raw, "resourceClaimTemplateName", path),
        )
        if ctx.validate:
            _check_pod_claim(ctx, claim, raw, path, seen)
        out.append(claim)
    return out


def _check_pod_claim(
    ctx: DecodeContext,
    claim: PodResourceClaim,
    raw: Mapping[str, Any],
    path: str,
    seen: set[str],
) -> None:
    if not claim.name:
        ctx.fail(child(path, "name"), required())
    if claim.name in seen:
        ctx.fail(child(path, "name"), duplicate(claim.name))
    seen.add(claim.name)
    ctx.check("dns-label", claim.name, names.check_dns_label, child(path, "name"))
    sources = (claim.resource_claim_name, claim.resource_claim_template_name)
    if all(s is not None for s in sources):
        ctx.fail(
            path,
            invalid(
                dict(raw),
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` "
                "may be specified",
            ),
        )
    if all(s is None for s in sources):
        ctx.fail(
            path,
            invalid(
                dict(raw), "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
            ),
        )
    for key, value in zip(("resourceClaimName", "resourceClaimTemplateName"), sources, strict=True):
        if value is not None:
            ctx.check("dns-subdomain", value, names.check_dns_subdomain, child(path, key))


def _containers(
    ctx: DecodeContext, spec: Mapping[str, Any], key: str, claim_names: set[str]
) -> list[Container]:
    out = []
    for i, raw in enumerate(ctx.array(spec, key, "spec") or []):
        path = f"spec.{key}[{i}]"
        raw = ctx.item(raw, path)
        resources = ctx.mapping(raw, "resources", path) or {}
        resources_path = child(path, "resources")
        requests = _resource_list(ctx, resources, "requests", resources_path)
        limits = _resource_list(ctx, resources, "limits", resources_path)
        if ctx.validate:
            _check_requirements(ctx, requests, limits, resources_path)
            _check_claim_names(ctx, resources, resources_path, claim_names)
        # The API server's defaulting: a resource limited and not requested is requested
        # as much as its limit (how extended resources are usually written: limits only).
        for name, limit in limits.items():
            requests.setdefault(name, limit)
        out.append(
            Container(
                name=ctx.string(raw, "name", path),
                requests=requests,
                restart_always=ctx.opt_string(raw, "restartPolicy", path) == "Always",
            )
        )
    return out


def _check_claim_names(
    ctx: DecodeContext, resources: Mapping[str, Any], path: str, claim_names: set[str]
) -> None:
    """A container's ``resources.claims`` as the API server checks them: each names one
    of the pod's claims (and a request of it at most once)."""
    claims_path = child(path, "claims")
    seen: set[str] = set()
    for i, raw in enumerate(ctx.array(resources, "claims", path) or []):
        item_path = f"{claims_path}[{i}]"
        raw = ctx.item(raw, item_path)
        name = ctx.string(raw, "name", item_path)
        if not name:
            ctx.fail(item_path, required())
        request = ctx.string(raw, "request", item_path)
        key = f"{name}/{request}" if request else name
        if key in seen:
            ctx.fail(item_path, duplicate(key))
        seen.add(key)
        if name not in claim_names:
            listed = f": {', '.join(sorted(claim_names))}" if claim_names else " which is empty"
            ctx.fail(
                item_path,
                f"{not_found(name)}: must be one of the names in pod.spec.resourceClaims{listed}",
            )


def _check_requirements(
    ctx: DecodeContext, requests: dict[str, Quantity], limits: dict[str, Quantity], path: str
) -> None:
    """A container's amounts as the API server checks them (core/v1
    ValidateResourceQuantityValue): none below 0, extended resources whole. (Its rule
    that an extended resource needs a limit equal to its request is not applied: pods
    written as the scheduler's own tests write them ask by requests alone.)"""
    for key, found in (("limits", limits), ("requests", requests)):
        for name, quantity in found.items():
            _check_amount(ctx, name, quantity, f"{path}.{key}[{name}]")


def _check_amount(ctx: DecodeContext, name: str, quantity: Quantity, path: str) -> None:
    if quantity.sign() < 0:
        ctx.fail(path, invalid(str(quantity), "must be greater than or equal to 0"))
    if names.is_extended_resource_name(name) and quantity.milli_value() % 1000:
        ctx.fail(path, invalid(str(quantity), "must be an integer"))


def _resource_list(
    ctx: DecodeContext, d: Mapping[str, Any], key: str, path: str
) -> dict[str, Quantity]:
    found = ctx.mapping(d, key, path)
    if not found:
        return {}
    where = child(path, key)
    return {
        str(name): ctx.quantity(value, child(where, str(name))) for name, value in found.items()
    }


def _claim_statuses(ctx: DecodeContext, status: Mapping[str, Any]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for i, raw in enumerate(ctx.array(status, "resourceClaimStatuses", "status") or []):
        path = f"status.resourceClaimStatuses[{i}]"
        raw = ctx.item(raw, path)
        out[ctx.string(raw, "name", path)] = ctx.opt_string(raw, "resourceClaimName", path)
    return out
