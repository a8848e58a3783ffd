"""ResourceClaims of a bulk JSON list in their common shape, straight from typed Structs.

A cluster dump holds one allocated claim per running pod that uses devices: the
scheduler_perf clusters 100,000 of them. Nearly all have the same few fields: a name,
a namespace, requests of a device class (``exactly``, count or all), results naming a
driver, pool and device, the node selector of a node's name, and the pods that
reserve them. :data:`CLAIM_DECODER` decodes such an item into the Structs below in
msgspec's C code (every Struct forbids unknown fields and types each value), and
:class:`ClaimBuilder` builds the model from them, about five times faster than the
checked decoder of :mod:`draspeed.api.claims` walks the item's dict.

It is only a fast path, in the way :mod:`draspeed.api.slice_schema` is: an item the
Structs refuse (any other field, a null, another type) is decoded as a dict, and an
item the builder is not sure about (a value the API server refuses, a count out of
range, a result naming no request of the claim, a node selector of another form) goes
to the checked decoder, which is the only one that reports errors and warnings. So the
builder accepts only what the checked decoder accepts without a word, and builds the
same model from it; ``tests/test_bulk_json.py`` compares the two on edited claims.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
from msgspec import UNSET, Struct, UnsetType

from draspeed.api import limits, names
from draspeed.api.common import metadata_valid
from draspeed.api.context import Caches
from draspeed.api.meta_extras import structs_valid
from draspeed.api.model import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceClaim,
    DeviceRequest,
    DeviceRequestAllocationResult,
    ExactDeviceRequest,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimSpec,
    ResourceClaimStatus,
)
from draspeed.api.slice_schema import JSONMetaFields

# The versions whose ResourceClaim layout this knows (v1beta2 is v1's).
CLAIM_API_VERSIONS = frozenset(("resource.k8s.io/v1", "resource.k8s.io/v1beta2"))


class JSONClaimMetadata(JSONMetaFields):
    """A claim's: claims are namespaced."""

    namespace: str = ""


class JSONExactRequest(Struct, gc=False, forbid_unknown_fields=True):
    deviceClassName: str
    allocationMode: str | UnsetType = UNSET
    count: int | UnsetType = UNSET


class JSONRequest(Struct, gc=False, forbid_unknown_fields=True):
    name: str
    exactly: JSONExactRequest


class JSONDeviceClaim(Struct, gc=False, forbid_unknown_fields=True):
    requests: list[JSONRequest]


class JSONClaimSpec(Struct, gc=False, forbid_unknown_fields=True):
    devices: JSONDeviceClaim


class JSONDeviceResult(Struct, gc=False, forbid_unknown_fields=True):
    request: str
    driver: str
    pool: str
    device: str


class JSONAllocatedDevices(Struct, gc=False, forbid_unknown_fields=True):
    results: list[JSONDeviceResult]


class JSONRequirement(Struct, gc=False, forbid_unknown_fields=True):
    key: str
    operator: str
    values: list[str]


class JSONTerm(Struct, gc=False, forbid_unknown_fields=True):
    matchFields: list[JSONRequirement]


class JSONNodeSelector(Struct, gc=False, forbid_unknown_fields=True):
    nodeSelectorTerms: list[JSONTerm]


class JSONAllocation(Struct, gc=False, forbid_unknown_fields=True):
    devices: JSONAllocatedDevices
    nodeSelector: JSONNodeSelector | UnsetType = UNSET


class JSONConsumer(Struct, gc=False, forbid_unknown_fields=True):
    resource: str = ""
    name: str = ""
    uid: str = ""
    apiGroup: str = ""


class JSONClaimStatus(Struct, gc=False, forbid_unknown_fields=True):
    allocation: JSONAllocation | UnsetType = UNSET
    reservedFor: list[JSONConsumer] | UnsetType = UNSET


class JSONClaim(Struct, gc=False, forbid_unknown_fields=True):
    apiVersion: str | None = None
    kind: str | None = None
    metadata: JSONClaimMetadata | UnsetType = UNSET
    spec: JSONClaimSpec | UnsetType = UNSET
    status: JSONClaimStatus | UnsetType = UNSET


CLAIM_DECODER = msgspec.json.Decoder(JSONClaim)


def _int64(value: int) -> bool:
    return limits.INT64_MIN <= value <= limits.INT64_MAX


class ClaimBuilder:
    """Builds the claims of one load, with the load's caches: its shared strings and
    the name checks that passed (shared with the checked decoders, by the same kinds)."""

    def __init__(self, caches: Caches, validate: bool) -> None:
        self.strings = caches.strings
        self.checked = caches.checked
        self.validate = validate

    def _ok(self, kind: str, value: str, checker: Callable[[str], str | None]) -> bool:
        """Whether ``value`` passes ``checker`` (each distinct value checked once)."""
        key = (kind, value)
        if not self.validate or key in self.checked:
            return True
        if checker(value) is not None:
            return False
        self.checked.add(key)
        return True

    def build(self, item: JSONClaim, raw: msgspec.Raw, api_version: str) -> ResourceClaim | None:
        """The claim of ``item`` (its text ``raw`` kept as ``raw_text``), or None when
        the checked decoder has to decide."""
        meta, spec, status = item.metadata, item.spec, item.status
        if meta is UNSET or spec is UNSET or api_version not in CLAIM_API_VERSIONS:
            return None
        metadata = self._metadata(meta)
        if metadata is None:
            return None
        requests = self._requests(spec.devices.requests)
        if requests is None:
            return None
        claim_status = ResourceClaimStatus()
        if status is not UNSET:
            built = self._status(status, {r.name for r in requests})
            if built is None:
                return None
            claim_status = built
        claim = ResourceClaim(
            metadata=metadata,
            spec=ResourceClaimSpec(devices=DeviceClaim(requests=requests)),
            status=claim_status,
            api_version=self.strings.setdefault(api_version, api_version),
        )
        del claim.raw  # read from the text on demand (see ResourceClaim)
        claim.raw_text = raw
        return claim

    def _metadata(self, meta: JSONClaimMetadata) -> ObjectMeta | None:
        name, namespace = meta.name, meta.namespace
        if not _int64(meta.generation) or not name:
            return None
        if not self._ok("object", name, names.check_object_name) or (
            namespace and not self._ok("label", namespace, names.check_dns_label)
        ):
            return None
        labels = {} if meta.labels is None else meta.labels
        annotations = {} if meta.annotations is None else meta.annotations
        finalizers = [] if meta.finalizers is None else meta.finalizers
        if self.validate and not metadata_valid(
            meta.generateName, meta.generation, labels, annotations, finalizers
        ):
            return None
        if not structs_valid(meta, self.validate):
            return None
        return ObjectMeta(
            name=name,
            namespace=self.strings.setdefault(namespace, namespace),
            uid=meta.uid,
            labels=labels,
            annotations=annotations,
            generation=meta.generation,
            resource_version=meta.resourceVersion,
        )

    def _requests(self, given: list[JSONRequest]) -> list[DeviceRequest] | None:
        if self.validate and len(given) > limits.DEVICE_REQUESTS_MAX_SIZE:
            return None
        strings = self.strings
        requests = []
        for r in given:
            exact = r.exactly
            mode = exact.allocationMode or "ExactCount"
            count = 0 if exact.count is UNSET else exact.count
            if not _int64(count):
                return None
            if mode == "ExactCount":
                if count < 0 and self.validate:
                    return None
                count = count or 1
            elif mode != "All" or count != 0:
                return None  # the checked decoder words it, or keeps an unknown mode
            if not self._ok("label", r.name, names.check_dns_label) or not self._ok(
                "dns-subdomain", exact.deviceClassName, names.check_dns_subdomain
            ):
                return None
            requests.append(
                DeviceRequest(
                    name=strings.setdefault(r.name, r.name),
                    exactly=ExactDeviceRequest(
                        device_class_name=strings.setdefault(
                            exact.deviceClassName, exact.deviceClassName
                        ),
                        allocation_mode=mode,
                        count=count,
                    ),
                )
            )
        if self.validate and len({r.name for r in requests}) != len(requests):
            return None
        return requests

    def _status(self, status: JSONClaimStatus, known: set[str]) -> ResourceClaimStatus | None:
        built = ResourceClaimStatus()
        if status.allocation is not UNSET:
            allocation = self._allocation(status.allocation, known)
            if allocation is None:
                return None
            built.allocation = allocation
        if status.reservedFor is not UNSET:
            consumers = status.reservedFor
            if self.validate and len(consumers) > limits.RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE:
                return None
            built.reserved_for = [
                ResourceClaimConsumerReference(
                    resource=self.strings.setdefault(c.resource, c.resource),
                    name=c.name,
                    uid=c.uid,
                    api_group=self.strings.setdefault(c.apiGroup, c.apiGroup),
                )
                for c in consumers
            ]
        return built

    def _allocation(self, given: JSONAllocation, known: set[str]) -> AllocationResult | None:
        results = given.devices.results
        if self.validate and len(results) > limits.ALLOCATION_RESULTS_MAX_SIZE:
            return None
        strings = self.strings
        built = []
        for r in results:
            if self.validate and r.request not in known:
                return None  # a request or subrequest name, or none: checked
            if not (
                self._ok("driver", r.driver, names.check_driver_name)
                and self._ok("pool", r.pool, names.check_pool_name)
                and self._ok("label", r.device, names.check_dns_label)
            ):
                return None
            built.append(
                DeviceRequestAllocationResult(
                    request=strings.setdefault(r.request, r.request),
                    driver=strings.setdefault(r.driver, r.driver),
                    pool=strings.setdefault(r.pool, r.pool),
                    device=strings.setdefault(r.device, r.device),
                )
            )
        allocation = AllocationResult(devices=DeviceAllocationResult(results=built))
        if given.nodeSelector is not UNSET:
            selector = self._node_selector(given.nodeSelector)
            if selector is None:
                return None
            allocation.node_selector = selector
        return allocation

    def _node_selector(self, given: JSONNodeSelector) -> NodeSelector | None:
        """Only terms of one node's name (``metadata.name In [node]``): what the
        allocator writes for a node-local device."""
        terms = []
        strings = self.strings
        for term in given.nodeSelectorTerms:
            fields = []
            for req in term.matchFields:
                if req.key != "metadata.name" or req.operator != "In" or len(req.values) != 1:
                    return None
                node = req.values[0]
                if not self._ok("node", node, names.check_dns_subdomain):
                    return None
                fields.append(
                    NodeSelectorRequirement(
                        key=strings.setdefault(req.key, req.key),
                        operator=strings.setdefault(req.operator, req.operator),
                        values=[strings.setdefault(node, node)],
                    )
                )
            if not fields:
                return None
            terms.append(NodeSelectorTerm(match_fields=fields))
        if not terms:
            return None
        return NodeSelector(node_selector_terms=terms)
