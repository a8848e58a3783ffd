"""Reading a live cluster: ``draspeed capacity --from-cluster [--context C]``.

Lists, with the official ``kubernetes`` Python client (``pip install
'draspeed[kube]'``) and the usual kubeconfig (``$KUBECONFIG`` or
``~/.kube/config``; in-cluster service account as a fallback):

- ResourceSlices, DeviceClasses, ResourceClaims (all namespaces),
  ResourceClaimTemplates (all namespaces) and DeviceTaintRules from the
  ``resource.k8s.io`` version the server prefers among those it serves
  (v1, v1beta2, v1beta1, v1alpha3 -- whichever the client knows; a kind a version
  does not serve is asked of the next one; DeviceTaintRules are skipped, with a
  warning, when no served version has them: the DRADeviceTaintRules gate is off);
- Nodes (``v1``).

Each list is read in pages (``limit`` / ``continue``, as ``kubectl get --chunk-size``
does) as raw JSON (``_preload_content=False``: the client's own model
deserialisation costs about a millisecond per slice), and every page is decoded
by :func:`draspeed.api.loader.load`. Needs permission to ``list`` those resources.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from draspeed.api.loader import Objects, load

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


class ClusterReadError(Exception):
    """The cluster could not be read (no client, no config, no permission, no API)."""


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


def api_client_for(context: str | None = None, kubeconfig: str | None = None) -> Any:
    """A ``kubernetes.client.ApiClient`` for a kubeconfig context (default: current)."""
    try:
        from kubernetes import client, config
    except ImportError as exc:
        raise ClusterReadError(
            "reading a live cluster needs the kubernetes client: pip install 'draspeed[kube]'"
        ) from exc
    try:
        return config.new_client_from_config(config_file=kubeconfig, context=context)
    except config.ConfigException as exc:
        if context is not None or kubeconfig is not None:
            raise ClusterReadError(f"kubeconfig: {exc}") from exc
        try:
            config.load_incluster_config()
        except config.ConfigException:
            raise ClusterReadError(f"no kubeconfig and not in a cluster: {exc}") from exc
        return client.ApiClient()


def list_cluster(
    context: str | None = None,
    *,
    kubeconfig: str | None = None,
    api_client: Any = None,
    page_size: int = DEFAULT_PAGE_SIZE,
    validate: bool = False,
    progress: Callable[[str, int], None] | None = None,
    stats: ListStats | None = None,
) -> Objects:
    """Every DRA object and Node of the cluster, decoded (one :class:`Objects`).

    ``validate``: re-check objects against the API's rules (the server has already
    validated them: off by default). ``progress(kind, objects so far)`` after each page.
    """
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = api_client if api_client is not None else api_client_for(context, kubeconfig)
    stats = stats if stats is not None else ListStats()
    objects = Objects()
    try:
        versions = _served_versions(client.ResourceApi(api))
        for what, method, required in _RESOURCE_KINDS:
            for version in versions:
                api_class = getattr(client, f"Resource{version.capitalize()}Api", None)
                lister = getattr(api_class(api), method, None) if api_class else None
                if lister is None:
                    continue
                try:
                    _paginate(lister, what, page_size, validate, objects, stats, progress)
                except ApiException as exc:
                    if exc.status == 404:
                        continue  # this version does not serve the kind
                    raise
                stats.versions[what] = version
                break
            else:
                message = (
                    f"{what} are not served in any version draspeed reads "
                    f"({', '.join(versions) or 'resource.k8s.io not served'})"
                )
                if required:
                    raise ClusterReadError(message)
                objects.warnings.append(message)
        _paginate(
            client.CoreV1Api(api).list_node, "Nodes", page_size, validate, objects, stats, progress
        )
        stats.versions["Nodes"] = "v1"
    except ApiException as exc:
        raise ClusterReadError(f"API server: {exc.status} {exc.reason}") from exc
    return objects


def _served_versions(group_api: Any) -> list[str]:
    """Versions of resource.k8s.io the server serves and draspeed reads, preferred first."""
    from kubernetes.client.exceptions import ApiException

    try:
        response = group_api.get_api_group(_preload_content=False)
    except ApiException as exc:
        if exc.status == 404:
            return []
        raise
    group = msgspec.json.decode(_body(response))
    served = [v["version"] for v in group.get("versions", [])]
    preferred = (group.get("preferredVersion") or {}).get("version")
    ordered = ([preferred] if preferred in served else []) + [v for v in served if v != preferred]
    return [v for v in ordered if v in KNOWN_VERSIONS]


def _paginate(
    lister: Callable[..., Any],
    what: str,
    page_size: int,
    validate: bool,
    objects: Objects,
    stats: ListStats,
    progress: Callable[[str, int], None] | None,
) -> None:
    token: str | None = None
    pages = count = 0
    page_objects = Objects()  # a kind's pages, added only once the whole list is read
    while True:
        kwargs: dict[str, Any] = {"limit": page_size, "_preload_content": False}
        if token:
            kwargs["_continue"] = token
        body = _body(lister(**kwargs))
        meta = msgspec.json.decode(body, type=_Page).metadata
        page = load(body, validate=validate)
        count += len(page)
        page_objects.extend(page)
        pages += 1
        if progress is not None:
            progress(what, count)
        token = meta.continue_
        if not token:
            break
    objects.extend(page_objects)
    stats.pages[what] = pages
    stats.objects[what] = count


def _body(response: Any) -> bytes:
    """The raw body of a ``_preload_content=False`` response (urllib3)."""
    try:
        data = response.data
    finally:
        release = getattr(response, "release_conn", None)
        if callable(release):
            release()
    return bytes(data)
