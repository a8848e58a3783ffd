"""Objects of the Kubernetes Python clients, in and out.

In: :func:`to_plain` turns a client object (the official ``kubernetes`` client's
models, lightkube and kr8s objects) into the JSON-shaped data the API server sent;
:func:`type_meta` says which ``apiVersion`` and ``kind`` a model stands for when it
does not carry them itself: the items of a list call (``CoreV1Api.list_node().items``,
``ResourceV1Api.list_resource_claim_for_all_namespaces().items``) come without, as the
API server sends list items. The official client's class name says it:
``ResourceV1ResourceClaim`` and ``V1ResourceClaim`` are ``resource.k8s.io/v1``
ResourceClaims, ``V1beta2DeviceClass`` a ``resource.k8s.io/v1beta2`` DeviceClass,
``V1Node`` a core ``v1`` Node.

Out: :func:`to_model` turns a JSON-shaped object (a claim with its allocation, a
status patch) into the official client's model of its kind, for code that works with
those models.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from draspeed.errors import InputError

_CORE_KINDS = ("Node", "Pod")
_RESOURCE_KINDS = (
    "ResourceSlice",
    "DeviceClass",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "DeviceTaintRule",
)
# ResourceV1ResourceClaim / V1beta2ResourceClaimList / CoreV1... : optional group prefix
# (the client adds one where two groups share a kind's name), version, kind.
_MODEL_NAME = re.compile(r"^(?:Resource|Core)?V(\d+)((?:alpha|beta)\d+)?([A-Z][A-Za-z0-9]*)$")


def to_plain(obj: Any) -> Any:
    """A Kubernetes client object as the JSON-shaped data the API server sent."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if isinstance(obj, Mapping):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    attribute_map = getattr(obj, "attribute_map", None)
    if isinstance(attribute_map, Mapping):
        # kubernetes-client (openapi-generator) model: snake_case attributes, their JSON
        # names in attribute_map; unset fields are None.
        out = {}
        for attr, json_name in attribute_map.items():
            value = getattr(obj, attr, None)
            if value is not None:
                out[json_name] = to_plain(value)
        return out
    isoformat = getattr(obj, "isoformat", None)
    if callable(isoformat):
        return str(isoformat()).replace("+00:00", "Z")
    model_dump = getattr(obj, "model_dump", None)
    if callable(model_dump):  # pydantic models
        return to_plain(model_dump(by_alias=True, exclude_none=True, mode="json"))
    raw = getattr(obj, "raw", None)
    if isinstance(raw, Mapping):  # kr8s objects
        return to_plain(raw)
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):  # lightkube models (camelCase already)
        return to_plain(to_dict())
    raise InputError(
        type(obj).__name__, "", "not a Kubernetes object, path, YAML/JSON text or mapping"
    )


def type_meta(obj: Any) -> tuple[str, str] | None:
    """``(apiVersion, kind)`` of an official-client model, from its class name; None for
    anything else (or a model of no kind draspeed reads)."""
    if not hasattr(obj, "attribute_map"):
        return None
    match = _MODEL_NAME.match(type(obj).__name__)
    if match is None:
        return None
    version = f"v{match.group(1)}{match.group(2) or ''}"
    kind = match.group(3)
    base = kind[: -len("List")] if kind.endswith("List") else kind
    if base in _CORE_KINDS:
        return ("v1", kind) if version == "v1" else None
    if base in _RESOURCE_KINDS:
        return f"resource.k8s.io/{version}", kind
    return None


def to_model(doc: Mapping[str, Any], model: str | None = None) -> Any:
    """``doc`` (JSON-shaped, with ``apiVersion`` and ``kind``, or ``model`` naming the
    class) as a model of the official ``kubernetes`` client (``pip install
    'draspeed[kube]'``): ``ResourceV1ResourceClaim`` for a ``resource.k8s.io/v1``
    ResourceClaim, and so on."""
    try:
        from kubernetes import client
    except ImportError as exc:
        raise ImportError(
            "kubernetes-client models need the kubernetes client: pip install 'draspeed[kube]'"
        ) from exc
    name = model or model_name(str(doc.get("apiVersion", "")), str(doc.get("kind", "")))
    cls = getattr(client, name, None)
    if cls is None:
        raise ValueError(f"the installed kubernetes client has no model {name}")
    from_dict = getattr(cls, "from_dict", None)
    if callable(from_dict):  # kubernetes >= 35 (pydantic models)
        return from_dict(dict(doc))
    # Older clients deserialize from a response; the model name is the type. (Typed as
    # Any: the installed client's signature may be the newer one.)
    api: Any = client.ApiClient()
    return api.deserialize(_Response(json.dumps(doc)), name)


def model_name(api_version: str, kind: str) -> str:
    """The official client's class name of a kind in a version (``ResourceV1ResourceClaim``
    for resource.k8s.io/v1 ResourceClaims, where the core group also has a
    ``V1ResourceClaim``)."""
    from kubernetes import client

    version = api_version.rpartition("/")[2]
    plain = f"{version[0].upper()}{version[1:]}{kind}"
    prefixed = f"Resource{plain}" if api_version.startswith("resource.k8s.io/") else f"Core{plain}"
    return prefixed if hasattr(client, prefixed) else plain


class _Response:
    """What ``ApiClient.deserialize`` of clients before 35 reads from a response."""

    def __init__(self, data: str) -> None:
        self.data = data
