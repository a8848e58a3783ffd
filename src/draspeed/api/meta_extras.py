"""The ObjectMeta fields draspeed does not keep: owner references, managed fields,
timestamps, the deletion grace period and the self link.

The answer never depends on them, but the API server decodes them with their Go types
and ObjectMeta validation checks owner references and managed fields, so an object it
would refuse for them is refused here too. Both decoders use these rules: the checked
one on decoded dicts (:func:`read`), the bulk fast paths on their msgspec Structs
(:func:`structs_valid`), which leave anything doubtful to the checked decoder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from draspeed.api import limits
from draspeed.api.context import DecodeContext
from draspeed.api.messages import invalid, not_supported, required, too_long
from draspeed.cel.timestamps import parse_rfc3339

# apimachinery's limits (pkg/apis/meta/v1/validation).
FIELD_MANAGER_MAX_LENGTH = 128
SUBRESOURCE_MAX_LENGTH = 256
MANAGED_FIELDS_OPERATIONS = ("Apply", "Update")
# Kinds that may not own anything, as group/version/kind (apimachinery's BannedOwners).
BANNED_OWNERS = frozenset({("", "v1", "Event")})

_TIMESTAMPS = ("creationTimestamp", "deletionTimestamp")
_RFC3339_SHAPE = (
    'must be a time in RFC 3339 form, as "2006-01-02T15:04:05Z07:00" '
    "(Go's time.RFC3339, which metav1.Time decodes with)"
)


class OwnerReference(NamedTuple):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None
    block_owner_deletion: bool | None


class ManagedFieldsEntry(NamedTuple):
    manager: str
    operation: str
    fields_type: str
    subresource: str


class Extras(NamedTuple):
    """What validation reads of the fields the model does not keep."""

    owner_references: tuple[OwnerReference, ...] = ()
    managed_fields: tuple[ManagedFieldsEntry, ...] = ()


NO_EXTRAS = Extras()
_EXTRA_KEYS = frozenset(
    ("selfLink", "deletionGracePeriodSeconds", "ownerReferences", "managedFields", *_TIMESTAMPS)
)


# ------------------------------------------------------------------- the checked decoder


def read(ctx: DecodeContext, meta: Mapping[str, Any], path: str = "metadata") -> Extras:
    """Type-check the fields (a wrong type or an unparsable time fails as the API
    server's decoding does, whatever ``validate`` says) and return what validation reads."""
    if meta.keys().isdisjoint(_EXTRA_KEYS):
        return NO_EXTRAS
    ctx.opt_string(meta, "selfLink", path)
    for key in _TIMESTAMPS:
        _read_time(ctx, meta, key, path)
    ctx.opt_int(meta, "deletionGracePeriodSeconds", path)
    owners = []
    for i, raw in enumerate(ctx.array(meta, "ownerReferences", path) or ()):
        at = f"{path}.ownerReferences[{i}]"
        ref = ctx.item(raw, at)
        owners.append(
            OwnerReference(
                ctx.string(ref, "apiVersion", at),
                ctx.string(ref, "kind", at),
                ctx.string(ref, "name", at),
                ctx.string(ref, "uid", at),
                ctx.opt_bool(ref, "controller", at),
                ctx.opt_bool(ref, "blockOwnerDeletion", at),
            )
        )
    managed = []
    for i, raw in enumerate(ctx.array(meta, "managedFields", path) or ()):
        at = f"{path}.managedFields[{i}]"
        entry = ctx.item(raw, at)
        ctx.string(entry, "apiVersion", at)
        _read_time(ctx, entry, "time", at)
        # fieldsV1 is free-form: any JSON value decodes.
        managed.append(
            ManagedFieldsEntry(
                ctx.string(entry, "manager", at),
                ctx.string(entry, "operation", at),
                ctx.string(entry, "fieldsType", at),
                ctx.string(entry, "subresource", at),
            )
        )
    return Extras(tuple(owners), tuple(managed))


def _read_time(ctx: DecodeContext, d: Mapping[str, Any], key: str, path: str) -> None:
    value = ctx.opt_string(d, key, path)
    if value is not None and not time_valid(value):
        ctx.fail(f"{path}.{key}", invalid(value, _RFC3339_SHAPE))


# The usual shape, checked without the full parser: UTC, whole or fractional seconds.
_PLAIN_TIME = re.compile(
    r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?Z"
)


def time_valid(value: str) -> bool:
    """Whether metav1.Time decodes the string (``time.Parse(time.RFC3339, s)``)."""
    return _PLAIN_TIME.fullmatch(value) is not None or parse_rfc3339(value) is not None


# ------------------------------------------------------------------------- validation


def owner_reference_problems(refs: Sequence[OwnerReference]) -> Iterator[tuple[str, str]]:
    """(field, message) of what ValidateOwnerReferences refuses, in its order."""
    first_controller = ""
    for i, ref in enumerate(refs):
        at = f"metadata.ownerReferences[{i}]"
        group_version = _parse_group_version(ref.api_version)
        if not ref.api_version:
            yield f"{at}.apiVersion", required("must not be empty")
        elif group_version is None or not group_version[1]:
            yield (
                f"{at}.apiVersion",
                invalid(ref.api_version, "must be <group>/<version> or <version>"),
            )
        for field, value in (("kind", ref.kind), ("name", ref.name), ("uid", ref.uid)):
            if not value:
                yield f"{at}.{field}", required("must not be empty")
        group, version = group_version or ("", "")
        if (group, version, ref.kind) in BANNED_OWNERS:
            yield (
                at,
                invalid(
                    _owner_json(ref),
                    f"{group}/{version}, Kind={ref.kind} is disallowed from being an owner",
                ),
            )
        if ref.controller:
            current = f"{ref.kind}/{ref.name}"
            if first_controller:
                yield (
                    "metadata.ownerReferences",
                    invalid(
                        [_owner_json(r) for r in refs],
                        'Only one reference can have Controller set to true. Found "true" in '
                        f"references for {first_controller} and {current}",
                    ),
                )
            else:
                first_controller = current


def managed_fields_problems(entries: Sequence[ManagedFieldsEntry]) -> Iterator[tuple[str, str]]:
    """(field, message) of what ValidateManagedFields refuses, in its order."""
    for i, entry in enumerate(entries):
        at = f"metadata.managedFields[{i}]"
        if not entry.operation:
            yield f"{at}.operation", required("must not be empty")
        elif entry.operation not in MANAGED_FIELDS_OPERATIONS:
            yield f"{at}.operation", not_supported(entry.operation, MANAGED_FIELDS_OPERATIONS)
        if entry.fields_type and entry.fields_type != "FieldsV1":
            yield f"{at}.fieldsType", invalid(entry.fields_type, "must be `FieldsV1`")
        manager = entry.manager
        if len(manager.encode()) > FIELD_MANAGER_MAX_LENGTH:
            yield f"{at}.manager", too_long(FIELD_MANAGER_MAX_LENGTH)
        if not manager.isprintable():
            position = 0  # Go ranges over bytes: positions are byte offsets
            for c in manager:
                if not c.isprintable():
                    yield (
                        f"{at}.manager",
                        invalid(
                            manager, f"invalid character U+{ord(c):04X} (at position {position})"
                        ),
                    )
                position += len(c.encode("utf-8", "surrogatepass"))
        if len(entry.subresource.encode()) > SUBRESOURCE_MAX_LENGTH:
            yield f"{at}.subresource", too_long(SUBRESOURCE_MAX_LENGTH)


def _parse_group_version(text: str) -> tuple[str, str] | None:
    """schema.ParseGroupVersion: (group, version), None for more than one '/'."""
    if not text or text == "/":
        return "", ""
    slashes = text.count("/")
    if slashes == 0:
        return "", text
    if slashes == 1:
        group, _, version = text.partition("/")
        return group, version
    return None


def _owner_json(ref: OwnerReference) -> dict[str, Any]:
    """The reference as Go's json.Marshal writes it (the pointer fields omitted when unset)."""
    out: dict[str, Any] = {
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "name": ref.name,
        "uid": ref.uid,
    }
    if ref.controller is not None:
        out["controller"] = ref.controller
    if ref.block_owner_deletion is not None:
        out["blockOwnerDeletion"] = ref.block_owner_deletion
    return out


# -------------------------------------------------------------------- bulk fast paths


def structs_valid(meta: Any, validate: bool) -> bool:
    """Whether the API server takes these fields of a bulk decoder's metadata Struct
    (typed by msgspec already): False sends the object to the checked decoder."""
    created, deleted = meta.creationTimestamp, meta.deletionTimestamp
    if created is not None and not time_valid(created):
        return False
    if deleted is not None and not time_valid(deleted):
        return False
    grace = meta.deletionGracePeriodSeconds
    if grace is not None and not limits.INT64_MIN <= grace <= limits.INT64_MAX:
        return False
    owners, managed = meta.ownerReferences, meta.managedFields
    for entry in managed or ():
        if entry.time is not None and not time_valid(entry.time):
            return False
    if not validate or not (owners or managed):
        return True
    refs = [
        OwnerReference(r.apiVersion, r.kind, r.name, r.uid, r.controller, r.blockOwnerDeletion)
        for r in owners or ()
    ]
    entries = [
        ManagedFieldsEntry(e.manager, e.operation, e.fieldsType, e.subresource)
        for e in managed or ()
    ]
    return (
        next(owner_reference_problems(refs), None) is None
        and next(managed_fields_problems(entries), None) is None
    )
