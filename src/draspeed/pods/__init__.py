"""Pods: their claims as kube-scheduler and kube-controller-manager see them.

- :mod:`~draspeed.pods.templates`: claims made from ResourceClaimTemplates (names,
  labels, annotations, owner) as the resource claim controller makes them;
- :mod:`~draspeed.pods.extended`: the claim the scheduler makes for extended
  resources backed by a DeviceClass (DRAExtendedResource);
- :mod:`~draspeed.pods.claims`: one pod's claims, per node (:func:`pod_claims`).
"""

from __future__ import annotations

from draspeed.pods.claims import NodeClaims, PodClaims, pod_claims
from draspeed.pods.extended import RequestMapping
from draspeed.pods.templates import instantiate, instantiate_alone

__all__ = [
    "NodeClaims",
    "PodClaims",
    "RequestMapping",
    "instantiate",
    "instantiate_alone",
    "pod_claims",
]
