"""The live cluster: reading it (``--from-cluster``) with the official ``kubernetes``
client, requests that time out, retry and fail in one line
(:mod:`draspeed.kube.client`), and lists read page by page
(:mod:`draspeed.kube.listing`)."""

from __future__ import annotations

from draspeed.kube.client import ClientMissing, ClusterReadError, RequestPolicy
from draspeed.kube.listing import ListStats, PodQuery, list_cluster

__all__ = [
    "ClientMissing",
    "ClusterReadError",
    "ListStats",
    "PodQuery",
    "RequestPolicy",
    "list_cluster",
]
