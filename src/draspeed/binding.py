"""Writing an allocation back: what kube-scheduler's PreBind writes for a claim.

For each claim it allocated, the scheduler first makes sure the claim carries the
finalizer ``resource.kubernetes.io/delete-protection`` (so that it is not deleted
while allocated), then writes ``status.allocation`` and adds the pod to
``status.reservedFor``. :func:`finalizer_patch` and :func:`status_patch` are those
two bodies, JSON-ready, for the official client::

    api = kubernetes.client.ResourceV1Api()
    api.patch_namespaced_resource_claim(name, namespace, finalizer_patch(claim))
    api.patch_namespaced_resource_claim_status(name, namespace, status_patch(claim, result, pod))

A claim made here from a template (or for extended resources) does not exist in the
API server yet: create it first with :func:`claim_document` (the same bodies apply
afterwards). :func:`draspeed.api.clients.to_model` turns any of these documents into
the client's model (``ResourceV1ResourceClaim``); :func:`with_allocation` is the
allocated claim for the next snapshot version.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from draspeed import arguments
from draspeed.api.encode import encode_allocation
from draspeed.api.model import AllocationResult, Pod, ResourceClaim

FINALIZER = "resource.kubernetes.io/delete-protection"


def finalizer_patch(claim: ResourceClaim) -> dict[str, Any] | None:
    """The metadata patch adding the scheduler's finalizer, or None if it is there.

    The list is given whole (a JSON merge patch replaces lists, a strategic merge patch,
    what the client sends for a mapping, merges them: whole, both mean the same), with the claim's
    ``resourceVersion`` so that the API server refuses it if the claim changed."""
    _claim(claim)
    meta = claim.raw.get("metadata") or {}
    finalizers = list(meta.get("finalizers") or [])
    if FINALIZER in finalizers:
        return None
    patch: dict[str, Any] = {"finalizers": [*finalizers, FINALIZER]}
    if claim.metadata.resource_version:
        patch["resourceVersion"] = claim.metadata.resource_version
    return {"metadata": patch}


def status_patch(
    claim: ResourceClaim, result: AllocationResult, pod: Pod | None = None
) -> dict[str, Any]:
    """The status patch with ``allocation`` (in the claim's API version) and, with
    ``pod``, ``reservedFor`` listing the pod after the claim's current consumers."""
    _claim(claim)
    _result(result)
    _pod(pod)
    status: dict[str, Any] = {"allocation": encode_allocation(result, claim.api_version)}
    if pod is not None:
        status["reservedFor"] = _reserved_for(claim, pod)
    return {"status": status}


def claim_document(
    claim: ResourceClaim, result: AllocationResult | None = None, pod: Pod | None = None
) -> dict[str, Any]:
    """The claim as a whole object (its ``raw``), with the allocation and the pod's
    reservation when given: what ``create_namespaced_resource_claim`` takes for a claim
    made here, or what ``replace_namespaced_resource_claim_status`` takes."""
    _claim(claim)
    if result is not None:
        _result(result)
    _pod(pod)
    doc = copy.deepcopy(claim.raw)
    doc.setdefault("apiVersion", claim.api_version)
    doc.setdefault("kind", "ResourceClaim")
    if result is not None:
        doc.setdefault("status", {}).update(status_patch(claim, result, pod)["status"])
    return doc


def with_allocation(claim: ResourceClaim, result: AllocationResult) -> ResourceClaim:
    """The claim as allocated (``status.allocation`` set): what a new snapshot version
    takes (``snapshot.add_allocated``) so that the next pod does not get its devices."""
    _claim(claim)
    _result(result)
    return dataclasses.replace(claim, status=dataclasses.replace(claim.status, allocation=result))


def _claim(claim: object) -> None:
    arguments.instance_of(claim, ResourceClaim, "claim", "a ResourceClaim")


def _result(result: object) -> None:
    what = "an AllocationResult (what the allocator returns)"
    arguments.instance_of(result, AllocationResult, "result", what)


def _pod(pod: object) -> None:
    if pod is not None:
        arguments.instance_of(pod, Pod, "pod", "a Pod")


def _reserved_for(claim: ResourceClaim, pod: Pod) -> list[dict[str, Any]]:
    entries = []
    for ref in claim.status.reserved_for:
        entry = {"resource": ref.resource, "name": ref.name, "uid": ref.uid}
        if ref.api_group:
            entry = {"apiGroup": ref.api_group, **entry}
        entries.append(entry)
    if not any(e["uid"] == pod.metadata.uid and e["resource"] == "pods" for e in entries):
        entries.append({"resource": "pods", "name": pod.metadata.name, "uid": pod.metadata.uid})
    return entries
