"""Reading a live cluster: ``--from-cluster [--kubeconfig F] [--context C]``.

Lists, with the official ``kubernetes`` Python client and the usual kubeconfig
(``$KUBECONFIG`` or ``~/.kube/config``; in-cluster service account as a fallback):

- ResourceSlices, DeviceClasses, ResourceClaims (all namespaces),
  ResourceClaimTemplates (all namespaces) and DeviceTaintRules from the
  ``resource.k8s.io`` version the server prefers among those it serves
  (v1, v1beta2, v1beta1, v1alpha3 -- whichever the client knows; a kind a version
  does not serve is asked of the next one; DeviceTaintRules are skipped, with a
  warning, when no served version has them: the DRADeviceTaintRules gate is off);
- Nodes (``v1``); Pods only when asked for (:class:`PodQuery`): one pod by name, or
  the pending pods of a namespace (or all) that match a label selector.

Each list is read in pages (``limit`` / ``continue``, as ``kubectl get --chunk-size``
does) as raw JSON (``_preload_content=False``: the client's own model
deserialisation costs about a millisecond per slice), and every page is decoded
by :func:`draspeed.api.loader.load`. When a continue token has expired (410 Gone),
the list is read again whole, without paging, as client-go's pager does. Requests
time out, retry and fail as :mod:`draspeed.kube.client` says. Needs permission to
``list`` those resources (and ``get``/``list`` pods when asked).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from draspeed.api.loader import Objects, load
from draspeed.kube.client import (
    ClusterReadError,
    Gone,
    NotServed,
    RequestPolicy,
    api_client_for,
    kubernetes_client,
    request,
    server_of,
)

__all__ = ["ClusterReadError", "ListStats", "PodQuery", "list_cluster"]

DEFAULT_PAGE_SIZE = 500

# (what, resource.k8s.io method, required): the order kinds are listed in.
_RESOURCE_KINDS: tuple[tuple[str, str, bool], ...] = (
    ("DeviceClasses", "list_device_class", True),
    ("ResourceSlices", "list_resource_slice", True),
    ("ResourceClaims", "list_resource_claim_for_all_namespaces", True),
    ("ResourceClaimTemplates", "list_resource_claim_template_for_all_namespaces", True),
    ("DeviceTaintRules", "list_device_taint_rule", False),
)
# Versions draspeed decodes, most preferred first.
KNOWN_VERSIONS = ("v1", "v1beta2", "v1beta1", "v1alpha3")


class _ListMeta(msgspec.Struct):
    continue_: str = msgspec.field(default="", name="continue")
    resourceVersion: str = ""


class _Page(msgspec.Struct):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


@dataclass
class ListStats:
    """Pages and objects read per kind (for progress and tests)."""

    pages: dict[str, int] = field(default_factory=dict)
    objects: dict[str, int] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)  # kind -> version used
    restarts: dict[str, int] = field(default_factory=dict)  # kind -> lists read again


@dataclass(frozen=True)
class PodQuery:
    """Which pods to read: ``names`` (``namespace/name`` each), or, without names, the
    pods not yet bound to a node in ``namespace`` (None: all) matching ``selector``."""

    names: tuple[str, ...] = ()
    namespace: str | None = None
    selector: str = ""


def list_cluster(
    context: str | None = None,
    *,
    kubeconfig: str | None = None,
    api_client: Any = None,
    page_size: int = DEFAULT_PAGE_SIZE,
    validate: bool = False,
    pods: PodQuery | None = None,
    policy: RequestPolicy | None = None,
    progress: Callable[[str, int], None] | None = None,
    stats: ListStats | None = None,
) -> Objects:
    """Every DRA object and Node of the cluster, and the pods asked for, decoded.

    ``validate``: re-check objects against the API's rules (the server has already
    validated them: off by default). ``progress(kind, objects so far)`` after each page.
    Raises ClusterReadError (one line: the server and the reason) or ClientMissing.
    """
    client = kubernetes_client()
    api = api_client if api_client is not None else api_client_for(context, kubeconfig)
    lister = _Lister(api, policy or RequestPolicy(), page_size, validate, progress, stats)
    versions = _served_versions(api, client.ResourceApi(api), lister.policy)
    for what, method, required in _RESOURCE_KINDS:
        for version in versions:
            api_class = getattr(client, f"Resource{version.capitalize()}Api", None)
            call = getattr(api_class(api), method, None) if api_class else None
            if call is None:
                continue
            try:
                lister.list(call, what)
            except NotServed:
                continue  # this version does not serve the kind
            lister.stats.versions[what] = version
            break
        else:
            message = (
                f"{what} are not served in any version draspeed reads "
                f"({', '.join(versions) or 'resource.k8s.io not served'})"
            )
            if required:
                raise ClusterReadError(server_of(api), message)
            lister.objects.warnings.append(message)
    core = client.CoreV1Api(api)
    lister.list_required(core.list_node, "Nodes")
    lister.stats.versions["Nodes"] = "v1"
    if pods is not None:
        _read_pods(lister, core, pods)
    return lister.objects


def _read_pods(lister: _Lister, core: Any, query: PodQuery) -> None:
    if query.names:
        for key in query.names:
            namespace, _, name = key.rpartition("/")
            try:
                body = request(
                    lister.api,
                    core.read_namespaced_pod,
                    lister.policy,
                    name=name,
                    namespace=namespace or "default",
                )
            except NotServed:
                raise ClusterReadError(
                    server_of(lister.api), f'pods "{name}" not found in namespace "{namespace}"'
                ) from None
            lister.objects.extend(load(body, validate=lister.validate))
        lister.stats.versions["Pods"] = "v1"
        return
    # Pending pods: not bound to a node yet (as the scheduler's queue holds them).
    filters: dict[str, Any] = {"field_selector": "spec.nodeName="}
    if query.selector:
        filters["label_selector"] = query.selector
    if query.namespace is None:
        lister.list_required(core.list_pod_for_all_namespaces, "Pods", **filters)
    else:
        lister.list_required(core.list_namespaced_pod, "Pods", namespace=query.namespace, **filters)
    lister.stats.versions["Pods"] = "v1"


class _Lister:
    def __init__(
        self,
        api: Any,
        policy: RequestPolicy,
        page_size: int,
        validate: bool,
        progress: Callable[[str, int], None] | None,
        stats: ListStats | None,
    ) -> None:
        self.api = api
        self.policy = policy
        self.page_size = page_size
        self.validate = validate
        self.progress = progress
        self.stats = stats if stats is not None else ListStats()
        self.objects = Objects()

    def list_required(self, call: Callable[..., Any], what: str, **filters: Any) -> None:
        try:
            self.list(call, what, **filters)
        except NotServed:
            raise ClusterReadError(server_of(self.api), f"{what} are not served") from None

    def list(self, call: Callable[..., Any], what: str, **filters: Any) -> None:
        """One kind, page by page; read again whole if a continue token expires."""
        try:
            found, pages = self._pages(call, what, self.page_size, filters)
        except Gone:
            self.stats.restarts[what] = self.stats.restarts.get(what, 0) + 1
            try:
                found, pages = self._pages(call, what, 0, filters)
            except Gone:
                raise ClusterReadError(
                    server_of(self.api), f"{what}: the list expired twice (410 Gone)"
                ) from None
        self.objects.extend(found)
        self.stats.pages[what] = pages
        self.stats.objects[what] = len(found)

    def _pages(
        self, call: Callable[..., Any], what: str, limit: int, filters: dict[str, Any]
    ) -> tuple[Objects, int]:
        token: str | None = None
        pages = 0
        found = Objects()  # a kind's pages, kept only once the whole list is read
        while True:
            kwargs: dict[str, Any] = dict(filters)
            if limit:
                kwargs["limit"] = limit
            if token:
                kwargs["_continue"] = token
            body = request(self.api, call, self.policy, **kwargs)
            meta = msgspec.json.decode(body, type=_Page).metadata
            found.extend(load(body, validate=self.validate))
            pages += 1
            if self.progress is not None:
                self.progress(what, len(found))
            token = meta.continue_
            if not token:
                return found, pages


def _served_versions(api: Any, group_api: Any, policy: RequestPolicy) -> list[str]:
    """Versions of resource.k8s.io the server serves and draspeed reads, preferred first."""
    try:
        body = request(api, group_api.get_api_group, policy)
    except NotServed:
        return []
    group = msgspec.json.decode(body)
    served = [v["version"] for v in group.get("versions", [])]
    preferred = (group.get("preferredVersion") or {}).get("version")
    ordered = ([preferred] if preferred in served else []) + [v for v in served if v != preferred]
    return [v for v in ordered if v in KNOWN_VERSIONS]
