"""ResourceClaims made from ResourceClaimTemplates, as kube-controller-manager makes them.

For each ``spec.resourceClaims`` entry of a pod that names a template, the resource
claim controller (``pkg/controller/resourceclaim``) creates a claim:

- ``generateName``: ``<pod>-<pod claim>-``; when that is longer than 57 characters,
  both names are cut in proportion to their lengths and joined by ``-`` (no trailing
  ``-`` then), so that the API server's 5 random characters still fit in 63;
- the API server completes the name: the base cut to 58 characters, then 5
  characters from ``bcdfghjklmnpqrstvwxz2456789``. draspeed picks those from a hash
  of the pod and the pod claim, so that the same input always gives the same names;
- labels and annotations of the template's ``spec.metadata``, plus the annotation
  ``resource.kubernetes.io/pod-claim-name: <pod claim>``;
- an owner reference to the pod (``controller`` and ``blockOwnerDeletion``);
- the template's ``spec.spec`` as its spec.

The controller records the name in the pod's ``status.resourceClaimStatuses``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from draspeed.api.decode import decode_object
from draspeed.api.model import ObjectMeta, Pod, ResourceClaim, ResourceClaimTemplate

POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"

# The controller leaves room for "-" and 5 random characters in 63; the API server
# cuts any base to 63 - 5 characters before adding them.
_MAX_BASE = 57
_MAX_GENERATED_BASE = 58
_RANDOM_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's utilrand alphabet
_RANDOM_LENGTH = 5


def generate_name(pod_name: str, pod_claim_name: str) -> str:
    """The ``generateName`` the claim controller gives the claim of one pod claim."""
    base = f"{pod_name}-{pod_claim_name}-"
    if len(base) > _MAX_BASE:
        # Both parts cut in proportion (integer division, as the controller does).
        total = len(base)
        base = (
            pod_name[: len(pod_name) * _MAX_BASE // total]
            + "-"
            + pod_claim_name[: len(pod_claim_name) * _MAX_BASE // total]
        )
    return base


def generated_name(base: str, seed: str) -> str:
    """The name the API server makes of ``generateName: base``, its random part drawn
    from a hash of ``seed`` instead of a random source (repeatable answers)."""
    digest = hashlib.sha256(seed.encode()).digest()
    suffix = "".join(_RANDOM_ALPHABET[b % len(_RANDOM_ALPHABET)] for b in digest[:_RANDOM_LENGTH])
    return base[:_MAX_GENERATED_BASE] + suffix


def owner_reference(pod: Pod, *, block_owner_deletion: bool = True) -> dict[str, Any]:
    """The pod as a claim's controlling owner."""
    ref: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": pod.metadata.name,
        "uid": pod.metadata.uid,
        "controller": True,
    }
    if block_owner_deletion:
        ref["blockOwnerDeletion"] = True
    return ref


def instantiate(template: ResourceClaimTemplate, pod: Pod, pod_claim_name: str) -> ResourceClaim:
    """The claim the controller creates for pod claim ``pod_claim_name`` of ``pod``."""
    inner_meta = template.raw.get("spec", {}).get("metadata") or {}
    annotations = dict(inner_meta.get("annotations") or {})
    annotations[POD_CLAIM_NAME_ANNOTATION] = pod_claim_name
    base = generate_name(pod.metadata.name, pod_claim_name)
    seed = f"{pod.metadata.namespace}/{pod.metadata.name}/{pod.metadata.uid}/{pod_claim_name}"
    metadata: dict[str, Any] = {
        "name": generated_name(base, seed),
        "generateName": base,
        "namespace": pod.metadata.namespace,
        "ownerReferences": [owner_reference(pod)],
        "annotations": annotations,
    }
    labels = inner_meta.get("labels")
    if labels:
        metadata["labels"] = dict(labels)
    doc = {
        "apiVersion": template.api_version,
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": template.raw.get("spec", {}).get("spec") or {},
    }
    claim = decode_object(doc, validate=False)
    assert isinstance(claim, ResourceClaim)
    return claim


def standalone_pod(template: ResourceClaimTemplate) -> Pod:
    """The pod a template given on its own stands for: named after the template, in
    its namespace, using it once under its own name."""
    from draspeed.api.model import PodResourceClaim

    name = template.metadata.name
    namespace = template.metadata.namespace or "default"
    return Pod(
        metadata=ObjectMeta(name=name, namespace=namespace),
        resource_claims=[PodResourceClaim(name=name, resource_claim_template_name=name)],
    )


def instantiate_alone(template: ResourceClaimTemplate) -> ResourceClaim:
    """A template given without a pod (``--claims template.yaml``): the claim of a pod
    named after it that uses it once under its own name (:func:`standalone_pod`)."""
    pod = standalone_pod(template)
    return instantiate(template, pod, template.metadata.name)
