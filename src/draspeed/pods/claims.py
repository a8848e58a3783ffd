"""One pod's claims as kube-scheduler's DynamicResources plugin sees them.

PreFilter reads each ``spec.resourceClaims`` entry: a claim named directly, or the
claim made from a template (named in ``status.resourceClaimStatuses``; draspeed
makes it from the template, as kube-controller-manager would, when the dump has not
got it yet); a claim being deleted, one made for another pod, or one whose
``reservedFor`` is full makes the pod unschedulable. Filter then checks, per node,
that the pod's allocated claims are available there and which extended resources the
node must give through DRA, and allocates the pending claims together with the
extended-resource claim (:mod:`draspeed.pods.extended`), that one last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from draspeed.api.limits import RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE
from draspeed.api.model import (
    DeviceClass,
    Node,
    Pod,
    PodResourceClaim,
    ResourceClaim,
    ResourceClaimTemplate,
)
from draspeed.features import Features
from draspeed.pods.extended import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    CannotFit,
    RequestMapping,
    backed_resources,
    extended_claim,
    resources_for_node,
)
from draspeed.pods.templates import POD_CLAIM_NAME_ANNOTATION, instantiate
from draspeed.rules.node_selection import NodeSelectorError, node_selector_matches


@dataclass(frozen=True, slots=True)
class NodeClaims:
    """What Filter allocates for the pod on one node: ``claims`` (the pending claims,
    then the extended-resource claim if the node needs one) and that claim's request
    mappings; or ``reason``, why the node does not fit before any allocation."""

    claims: tuple[ResourceClaim, ...] = ()
    mappings: tuple[RequestMapping, ...] = ()
    reason: str | None = None
    new: tuple[ResourceClaim, ...] = ()  # made here: to be created in the API server


@dataclass(slots=True)
class PodClaims:
    """The claims of one pod (:func:`pod_claims`)."""

    pod: Pod
    claims: list[ResourceClaim]  # spec.resourceClaims order, found or made
    made: list[ResourceClaim] = field(default_factory=list)  # made from templates here
    classes: list[DeviceClass] = field(default_factory=list)
    extended: dict[str, int] = field(default_factory=dict)  # backed extended resources
    extended_found: ResourceClaim | None = None  # the scheduler's claim of a prior cycle
    problem: str | None = None  # why no node fits (PreFilter)
    _by_resources: dict[tuple[tuple[str, int], ...], NodeClaims] = field(
        default_factory=dict, repr=False
    )

    @property
    def pending(self) -> list[ResourceClaim]:
        """The pod's claims without an allocation, in order."""
        return [c for c in self.claims if c.status.allocation is None]

    @property
    def allocated(self) -> list[ResourceClaim]:
        """The pod's claims that are allocated already (the node must be theirs)."""
        found = [c for c in self.claims if c.status.allocation is not None]
        if self.extended_found is not None and self.extended_found.status.allocation:
            found.append(self.extended_found)
        return found

    @property
    def needs_nothing(self) -> bool:
        """No claims and no extended resources backed by DRA: the plugin skips the pod."""
        return not self.claims and not self.extended and self.extended_found is None

    def for_node(self, node: Node) -> NodeClaims:
        """What the plugin's Filter does on ``node`` before allocating."""
        if self.problem is not None:
            return NodeClaims(reason=self.problem)
        for claim in self.allocated:
            allocation = claim.status.allocation
            assert allocation is not None
            selector = allocation.node_selector
            try:
                available = selector is None or node_selector_matches(selector, node)
            except NodeSelectorError as exc:
                return NodeClaims(reason=str(exc))
            if not available:
                return NodeClaims(reason="resourceclaim not available on the node")
        pending = tuple(self.pending)
        made = tuple(self.made)
        if not self.extended and self.extended_found is None:
            return NodeClaims(pending, new=made)
        found = self.extended_found
        if found is not None:
            if found.status.allocation is not None:
                return NodeClaims(pending, new=made)
            if found.spec.devices.requests:
                # Left over from an earlier attempt: the scheduler deletes it first.
                return NodeClaims(reason="cannot schedule extended resource claim")
        try:
            resources = resources_for_node(self.pod, self.classes, node)
        except CannotFit as exc:
            return NodeClaims(reason=str(exc))
        key = tuple(sorted(resources.items()))
        known = self._by_resources.get(key)
        if known is None:
            extra = extended_claim(self.pod, self.classes, resources)
            if extra is None:
                known = NodeClaims(pending, new=made)
            else:
                known = NodeClaims((*pending, extra[0]), tuple(extra[1]), new=(*made, extra[0]))
            self._by_resources[key] = known
        return known


def pod_claims(
    pod: Pod,
    claims: Sequence[ResourceClaim],
    templates: Sequence[ResourceClaimTemplate],
    classes: Sequence[DeviceClass] = (),
    features: Features | None = None,
) -> PodClaims:
    """The claims of ``pod`` among ``claims`` (a cluster's), templates instantiated as
    the claim controller would where the claim does not exist yet."""
    features = features or Features()
    namespace = pod.metadata.namespace
    by_name = {c.metadata.name: c for c in claims if c.metadata.namespace == namespace}
    out = PodClaims(pod, [], classes=list(classes))
    for pod_claim in pod.resource_claims:
        found, problem = _claim_of(pod, pod_claim, by_name, templates)
        if problem is not None:
            out.problem = out.problem or problem
            continue
        if found is None:
            continue
        claim, made = found
        if made:
            out.made.append(claim)
        else:
            problem = _unusable(pod, claim)
            if problem is not None:
                out.problem = out.problem or problem
        out.claims.append(claim)
    if features.extended_resource:
        out.extended = backed_resources(pod, classes)
        if out.extended:
            out.extended_found = _extended_claim_of(pod, claims)
    return out


def _claim_of(
    pod: Pod,
    entry: PodResourceClaim,
    by_name: Mapping[str, ResourceClaim],
    templates: Sequence[ResourceClaimTemplate],
) -> tuple[tuple[ResourceClaim, bool] | None, str | None]:
    """((claim, made here) or None when none is needed, problem or None)."""
    pod_claim = entry.name
    if entry.resource_claim_name is not None:
        claim = by_name.get(entry.resource_claim_name)
        if claim is None:
            return None, f'resourceclaim.resource.k8s.io "{entry.resource_claim_name}" not found'
        return (claim, False), None
    template_name = entry.resource_claim_template_name
    if template_name is None:
        problem = (
            f'pod "{pod.key}", spec.resourceClaim "{pod_claim}": unknown API type in pod '
            "claim: neither ResourceClaimName nor ResourceClaimTemplateName set"
        )
        return None, problem
    if pod_claim in pod.claim_statuses:
        name = pod.claim_statuses[pod_claim]
        if name is None:
            return None, None  # the controller decided that no claim is needed
        claim = by_name.get(name)
        if claim is not None:
            return (claim, False), None  # the scheduler checks its owner (_unusable)
    # Not made yet (or gone): an orphan the controller made earlier, else a new one.
    for claim in by_name.values():
        annotations = claim.metadata.annotations
        if annotations.get(POD_CLAIM_NAME_ANNOTATION) == pod_claim and _owned_by(claim, pod):
            return (claim, False), None
    template = next(
        (
            t
            for t in templates
            if t.metadata.name == template_name and t.metadata.namespace == pod.metadata.namespace
        ),
        None,
    )
    if template is None:
        return None, (
            f'resource claim template "{template_name}": resourceclaimtemplate.resource.k8s.io '
            f'"{template_name}" not found'
        )
    return (instantiate(template, pod, pod_claim), True), None


def _unusable(pod: Pod, claim: ResourceClaim) -> str | None:
    """Why the scheduler's PreFilter refuses an existing claim of the pod, or None."""
    meta = claim.raw.get("metadata") if isinstance(claim.raw, Mapping) else None
    if isinstance(meta, Mapping) and meta.get("deletionTimestamp") is not None:
        return f'resourceclaim "{claim.metadata.name}" is being deleted'
    entry_is_template = any(
        c.resource_claim_template_name is not None
        and pod.claim_statuses.get(c.name) == claim.metadata.name
        for c in pod.resource_claims
    )
    if entry_is_template and not _owned_by(claim, pod):
        return f"ResourceClaim {claim.key} was not created for pod {pod.key} (pod is not owner)"
    reserved = claim.status.reserved_for
    full = len(reserved) >= RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE
    mine = any(r.resource == "pods" and r.uid == pod.metadata.uid for r in reserved)
    if claim.status.allocation is not None and full and not mine:
        return "resourceclaim in use"
    return None


def _owner_references(claim: ResourceClaim) -> list[Any]:
    meta = claim.raw.get("metadata") if isinstance(claim.raw, Mapping) else None
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    return list(refs) if isinstance(refs, list) else []


def _owned_by(claim: ResourceClaim, pod: Pod, *, by_name: bool = False) -> bool:
    """The pod is the claim's controlling owner (upstream's IsForPod: by UID)."""
    for ref in _owner_references(claim):
        if not isinstance(ref, Mapping) or not ref.get("controller"):
            continue
        if ref.get("uid", "") == pod.metadata.uid and (
            not by_name or ref.get("name") == pod.metadata.name
        ):
            return True
    return False


def _extended_claim_of(pod: Pod, claims: Sequence[ResourceClaim]) -> ResourceClaim | None:
    """The extended-resource claim the scheduler made for the pod earlier, if any."""
    for claim in claims:
        if claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        if _owned_by(claim, pod, by_name=True):
            return claim
    return None
