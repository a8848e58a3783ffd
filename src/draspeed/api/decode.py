"""Dispatch on ``apiVersion`` and ``kind`` to the per-kind decoders."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from draspeed.api.claims import (
    decode_allocation_result,
    decode_resource_claim,
    decode_resource_claim_template,
)
from draspeed.api.classes import decode_device_class, decode_device_taint_rule, decode_node
from draspeed.api.classic import (
    decode_classic_claim,
    decode_classic_claim_template,
    decode_classic_class,
)
from draspeed.api.common import object_name
from draspeed.api.context import Caches, DecodeContext, Pending, Validation, validation_mode
from draspeed.api.messages import required, wrong_type
from draspeed.api.model import AllocationResult, DRAObject
from draspeed.api.pods import decode_pod
from draspeed.api.slices import decode_resource_slice
from draspeed.errors import DraspeedError, InputError

GROUP = "resource.k8s.io"
_Decoder = Callable[[DecodeContext, Mapping[str, Any], str], DRAObject]

_CURRENT = ("v1", "v1beta2", "v1beta1", "v1alpha3")
# kind -> (decoder per version, namespaced)
_KINDS: dict[str, tuple[dict[str, _Decoder], bool]] = {
    "ResourceSlice": ({v: decode_resource_slice for v in _CURRENT}, False),
    "DeviceClass": ({v: decode_device_class for v in _CURRENT}, False),
    "ResourceClaim": (
        {**{v: decode_resource_claim for v in _CURRENT}, "v1alpha2": decode_classic_claim},
        True,
    ),
    "ResourceClaimTemplate": (
        {
            **{v: decode_resource_claim_template for v in _CURRENT},
            "v1alpha2": decode_classic_claim_template,
        },
        True,
    ),
    "DeviceTaintRule": (
        {v: decode_device_taint_rule for v in ("v1", "v1beta2", "v1alpha3")},
        False,
    ),
    "ResourceClass": ({"v1alpha2": decode_classic_class}, False),
}

# core/v1 kinds: kind -> (decoder, namespaced)
_CORE: dict[str, tuple[_Decoder, bool]] = {"Node": (decode_node, False), "Pod": (decode_pod, True)}

SUPPORTED_KINDS = (*_KINDS, *_CORE)


Found = tuple[_Decoder, str, bool]  # (decoder, version, namespaced)
_found: dict[tuple[str, str], Found] = {}  # supported (apiVersion, kind) pairs seen


def lookup(api_version: str, kind: str) -> Found | None:
    """(decoder, version, namespaced) for a supported apiVersion/kind, else None."""
    found = _found.get((api_version, kind))
    if found is None:
        found = _lookup(api_version, kind)
        if found is not None:
            _found[(api_version, kind)] = found
    return found


def _lookup(api_version: str, kind: str) -> Found | None:
    core = _CORE.get(kind)
    if core is not None:
        return (core[0], "v1", core[1]) if api_version == "v1" else None
    group, _, version = api_version.rpartition("/")
    entry = _KINDS.get(kind)
    if group != GROUP or entry is None:
        return None
    decoder = entry[0].get(version)
    return None if decoder is None else (decoder, version, entry[1])


def is_foreign(api_version: str, kind: str) -> bool:
    """A kind draspeed does not read at all, outside the DRA API group (a Service, a
    Deployment, ...): a loader skips it. A known kind in a version draspeed does not
    read, or an unknown kind of resource.k8s.io (a misspelling, most likely), is not
    foreign: that is an error."""
    return kind not in SUPPORTED_KINDS and api_version.rpartition("/")[0] != GROUP


def supported_versions(kind: str) -> list[str]:
    if kind in _CORE:
        return ["v1"]
    entry = _KINDS.get(kind)
    return [] if entry is None else [f"{GROUP}/{v}" for v in entry[0]]


def decode(obj: Mapping[str, Any], *, validate: bool | Validation = "strict") -> DRAObject:
    """Decode one Kubernetes object of any served version into the v1 model.

    Raises :class:`~draspeed.errors.InputError` naming the object and field path when
    the object is malformed, or breaks one of the API server's rules (``validate``
    "strict", the default, or "warn"), or (strict) has a field its version lacks.
    ``validate`` as ``kubectl --validate``: "strict" (True), "warn" (unknown fields
    are warnings), "ignore" (False: no validation). Conversion losses (older
    versions) and warnings are reported with ``warnings.warn``.
    """
    return decode_object(obj, validate=validate)


def decode_object(
    obj: Mapping[str, Any],
    *,
    validate: bool | Validation = "strict",
    caches: Caches | None = None,
    sink: list[str] | None = None,
    type_meta: tuple[str, str] | None = None,
) -> DRAObject:
    """:func:`decode` with the load's caches and warning list.

    ``type_meta`` is ``(apiVersion, kind)`` for items of typed lists, which do not carry
    their own (``raw`` stays the item as given).
    """
    if type(obj) is not dict and not isinstance(obj, Mapping):
        raise InputError("object", "", wrong_type("object", obj))
    api_version, kind = (
        type_meta if type_meta is not None else (obj.get("apiVersion"), obj.get("kind"))
    )
    if not (type(api_version) is str and type(kind) is str and api_version and kind):
        for key, value in (("apiVersion", api_version), ("kind", kind)):
            if not isinstance(value, str) or not value:
                raise InputError(
                    "object",
                    key,
                    required() if value in (None, "") else wrong_type("string", value),
                )
    assert isinstance(api_version, str) and isinstance(kind, str)
    found = lookup(api_version, kind)
    if found is None:
        raise InputError(f"{kind} {_plain_name(obj)}", "apiVersion", unsupported(api_version, kind))
    return decode_known(obj, kind, found, validate=validate, caches=caches, sink=sink)


def decode_known(
    obj: Mapping[str, Any],
    kind: str,
    found: Found,
    *,
    validate: bool | Validation,
    caches: Caches | None,
    sink: list[str] | None,
    pending: Pending | None = None,
) -> DRAObject:
    """:func:`decode_object` for a mapping whose kind the caller has already looked up
    (``found = lookup(apiVersion, kind)``): a loader of thousands of list items does
    that once per kind, not per object. ``pending``: see :class:`DecodeContext`."""
    decoder, version, namespaced = found
    mode = validation_mode(validate)
    ctx = DecodeContext(
        object_name(kind, obj, namespaced=namespaced),
        validate=mode != "ignore",
        caches=caches,
        sink=sink,
        pending=pending,
        fields=mode,
        version="core/v1" if kind in _CORE else version,
    )
    try:
        if kind != "ResourceSlice":
            # Small objects: every field checked up front, as the API server's strict
            # decoding does before validation. Slices, the bulk of any dump, are
            # checked by their decoder as it reads them.
            ctx.known_tree(obj, "", kind)
        return decoder(ctx, obj, version)
    except DraspeedError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        # A shape no decoder anticipated: still one error naming the object.
        raise InputError(ctx.obj, "", f"cannot decode: {exc}") from exc


def _plain_name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) and name else "(unnamed)"


def unsupported(api_version: str, kind: str) -> str:
    versions = supported_versions(kind)
    if versions:
        supported = ", ".join(versions)
        return f"unsupported apiVersion {api_version!r} for kind {kind}; supported: {supported}"
    return (
        f"unsupported kind {kind!r} (apiVersion {api_version!r}); supported kinds: "
        f"{', '.join(SUPPORTED_KINDS)}"
    )


def decode_allocation(
    d: Mapping[str, Any],
    *,
    obj: str = "AllocationResult",
    validate: bool | Validation = "strict",
) -> AllocationResult:
    """An AllocationResult from its JSON form (``status.allocation`` of a claim)."""
    if not isinstance(d, Mapping):
        raise InputError(obj, "", wrong_type("object", d))
    mode = validation_mode(validate)
    ctx = DecodeContext(obj, validate=mode != "ignore", fields=mode)
    return decode_allocation_result(ctx, d, "")
