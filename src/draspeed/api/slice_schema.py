"""msgspec types of a ``resource.k8s.io/v1`` (or ``v1beta2``) ResourceSlice, for bulk JSON.

:mod:`draspeed.api.bulk` decodes each item of a big JSON list with :data:`SLICE_DECODER`
straight into these Structs (``gc=False``: no object here is ever part of a cycle), and
the compiled :class:`draspeed.api._decode.SliceBuilder` turns them into the model. That is
faster than building a dict per JSON object and reading it back, but it is only a fast
path: an item these types refuse (an unknown field, a null or a type they do not
expect, another kind) is decoded as a plain dict and goes through the checked decoder
of :mod:`draspeed.api.slices`, which gives the errors.

So the types only need to be right for what they accept:

- every field of the API's types is declared, and every Struct forbids unknown
  fields, so an unknown field (an error, or a warning, for the checked decoder) never
  takes the fast path;
- ``UNSET`` is "absent"; where the decoder treats ``null`` like an absent field the
  type allows ``None`` for it, elsewhere ``null`` is refused or left for the builder to
  send to the checked decoder;
- fields the builder never takes the fast way (counters, taints, node selectors ...)
  are ``Any``: their presence alone sends the device or slice to the checked decoder;
- a device's ``attributes`` and ``capacity`` stay JSON text (``msgspec.Raw``): the
  builder reads the common shape of these maps straight from their bytes, which saves
  a dict, a Struct and a str per attribute. ``consumesCounters`` stays text as well:
  the checked decoder decodes each distinct text once, and the builder reuses its
  answer for every later device with the same bytes.

Object metadata has many fields the model does not hold (``managedFields`` is the
biggest part of most slices): :class:`JSONMetadata` decodes them typed, as the API
server does, for :mod:`draspeed.api.meta_extras` to check; only ``fieldsV1`` (free-form)
stays text. They stay in the slice's ``raw`` text.

msgspec checks less in what it skips or keeps as text than in what it decodes (UTF-8,
numbers out of range): :func:`draspeed.api._jsontext.json_list_spans` refuses texts where
that could matter, before any of this is used.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Struct, UnsetType

# The two versions whose ResourceSlice layout the builder knows (v1beta2 is v1's).
FAST_API_VERSIONS = frozenset(("resource.k8s.io/v1", "resource.k8s.io/v1beta2"))


# An absent map reads as null, which the checked decoder takes for absent too.
_NULL = msgspec.Raw(b"null")


class JSONDevice(Struct, gc=False, forbid_unknown_fields=True):
    name: str | UnsetType = UNSET
    # Kept as text: the builder reads these maps itself (see draspeed.api._decode).
    attributes: msgspec.Raw = _NULL
    capacity: msgspec.Raw = _NULL
    # Text too: a device's counter consumption repeats from node to node, and the
    # builder takes a text it has seen decoded (and checked) before as it was.
    consumesCounters: msgspec.Raw = _NULL
    nodeName: Any = UNSET
    nodeSelector: Any = UNSET
    allNodes: Any = UNSET
    taints: Any = UNSET
    bindsToNode: Any = UNSET
    bindingConditions: Any = UNSET
    bindingFailureConditions: Any = UNSET
    allowMultipleAllocations: Any = UNSET


class JSONPool(Struct, gc=False, forbid_unknown_fields=True):
    name: str | UnsetType = UNSET
    generation: int | None = None
    resourceSliceCount: int | None = None


class JSONSpec(Struct, gc=False, forbid_unknown_fields=True):
    driver: str | UnsetType = UNSET
    pool: JSONPool | UnsetType = UNSET
    nodeName: str | None = None
    nodeSelector: Any = None
    allNodes: bool | None = None
    perDeviceNodeSelection: Any = None
    devices: list[JSONDevice] | None = None
    # Text, like consumesCounters: the counter sets of one node repeat on the next.
    sharedCounters: msgspec.Raw = _NULL


class JSONOwnerReference(Struct, gc=False, forbid_unknown_fields=True):
    apiVersion: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    blockOwnerDeletion: bool | None = None


class JSONManagedFieldsEntry(Struct, gc=False, forbid_unknown_fields=True):
    manager: str = ""
    operation: str = ""
    apiVersion: str = ""
    time: str | None = None
    fieldsType: str = ""
    fieldsV1: msgspec.Raw = _NULL  # free-form
    subresource: str = ""


class JSONMetaFields(Struct, gc=False, forbid_unknown_fields=True):
    """The ObjectMeta fields but the namespace, typed as the API server decodes them, so
    that an unknown field or a wrong type sends the object to the checked decoder, which
    reports it (also the claims' Structs, draspeed.api.bulk_claims)."""

    name: str = ""
    uid: str = ""
    resourceVersion: str = ""
    generation: int = 0
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    generateName: str = ""
    selfLink: str | None = None
    creationTimestamp: str | None = None
    deletionTimestamp: str | None = None
    deletionGracePeriodSeconds: int | None = None
    finalizers: list[str] | None = None
    ownerReferences: list[JSONOwnerReference] | None = None
    managedFields: list[JSONManagedFieldsEntry] | None = None


class JSONMetadata(JSONMetaFields):
    """A slice's: slices are cluster-scoped, a namespace is kept as text (ignored)."""

    namespace: msgspec.Raw = _NULL


class JSONSlice(Struct, gc=False, forbid_unknown_fields=True):
    apiVersion: str | None = None
    kind: str | None = None
    metadata: JSONMetadata | UnsetType = UNSET
    spec: JSONSpec | UnsetType = UNSET


SLICE_DECODER = msgspec.json.Decoder(JSONSlice)
