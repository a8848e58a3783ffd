"""ResourceSlice decoding (v1, v1beta2, v1beta1, v1alpha3) with upstream's limits.

This is the bulk of any cluster dump, so the per-device and per-attribute loops avoid
building field paths until something is wrong, and look distinct attribute names,
attribute values and quantities up in the load's :class:`~draspeed.api.context.Caches`;
devices of the common shape do not even come here but are built by the compiled
:func:`draspeed.api._decode.decode_common_devices` from those caches, and the node and
pool names (unique per slice) pass compiled syntax predicates before the checks.
Slices of bulk JSON lists are built by :class:`draspeed.api._decode.SliceBuilder` from
typed Structs; the devices it does not build come here through :class:`CheckedDevices`.

Version differences handled here:

- v1 and v1beta2 have the device fields directly on the device.
- v1beta1 and v1alpha3 nest them under ``basic``; ``nodeName`` is a plain string and
  ``allNodes`` a plain bool there (empty / false mean unset).
- v1alpha3 capacities are bare quantities instead of ``{value: ...}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from draspeed.api import json_as_go, limits, names
from draspeed.api._decode import (
    SliceBuilder,
    decode_common_devices,
    dns_subdomain_ok,
    pool_name_ok,
)
from draspeed.api.common import (
    check_binding_conditions,
    decode_metadata,
    decode_node_selector,
    decode_taint,
    object_name,
)
from draspeed.api.context import (
    ATTRIBUTE_KEY_LIMIT,
    COUNTER_KEY_LIMIT,
    Caches,
    DecodeContext,
    DraspeedWarning,
    Pending,
    Validation,
    child,
    dict_of,
    map_entry,
)
from draspeed.api.messages import (
    duplicate,
    forbidden,
    invalid,
    required,
    too_many,
    wrong_type,
)
from draspeed.api.model import (
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    Counter,
    CounterSet,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceCounterConsumption,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from draspeed.errors import DraspeedError, InputError
from draspeed.quantity import Quantity

__all__ = ["LIST_KINDS", "CheckedDevices", "SliceBuilder", "decode_resource_slice"]

_SCALAR_KINDS = ("int", "bool", "string", "version")
_LIST_KINDS = ("ints", "bools", "strings", "versions")
_VALUE_KINDS = frozenset(_SCALAR_KINDS + _LIST_KINDS)
_GO_FIELD_ORDER = _SCALAR_KINDS + _LIST_KINDS  # resource.DeviceAttribute's fields
LIST_KINDS = frozenset(_LIST_KINDS)


def decode_resource_slice(
    ctx: DecodeContext, obj: Mapping[str, Any], version: str
) -> ResourceSlice:
    if ctx.fields != "ignore":
        ctx.known(obj, "", "ResourceSlice")
        meta = obj.get("metadata")
        if isinstance(meta, Mapping):
            _known_metadata(ctx, meta)
    metadata = decode_metadata(ctx, obj, namespaced=False)
    spec_raw = obj.get("spec")
    if type(spec_raw) is not dict:
        # (A struct, not a pointer: absent or null, it is the zero spec, validated
        # as the API server validates it.)
        spec_raw = ctx.mapping(obj, "spec", "") or {}
    nested = version in ("v1beta1", "v1alpha3")
    spec = _decode_spec(ctx, spec_raw, nested=nested, bare_capacity=version == "v1alpha3")
    return ResourceSlice(
        metadata=metadata, spec=spec, api_version=f"resource.k8s.io/{version}", raw=dict_of(obj)
    )


_NESTED_METADATA = ("ownerReferences", "managedFields")


def _known_metadata(ctx: DecodeContext, meta: Mapping[str, Any]) -> None:
    """Unknown fields of a slice's metadata (its lists of objects too)."""
    ctx.known(meta, "metadata", "ObjectMeta")
    for key in _NESTED_METADATA:
        if meta.get(key):
            ctx.known_tree(meta, "metadata", "ObjectMeta")
            return


# ------------------------------------------------------------------------------- spec


def _decode_spec(
    ctx: DecodeContext, raw: Mapping[str, Any], *, nested: bool, bare_capacity: bool
) -> ResourceSliceSpec:
    # Once per slice: the plain types are read inline, anything else (null, a wrong
    # type) through the typed readers, which decide and report as everywhere else.
    validate = ctx.validate
    ctx.known(raw, "spec", "ResourceSliceSpec")
    driver = raw.get("driver")
    if type(driver) is not str:
        driver = ctx.string(raw, "driver", "spec", required=True)
    if validate:
        ctx.check("driver", driver, names.check_driver_name, "spec.driver")
    pool = _decode_pool(ctx, raw)

    node_name = raw.get("nodeName")
    if node_name is not None and type(node_name) is not str:
        node_name = ctx.opt_string(raw, "nodeName", "spec")
    all_nodes = raw.get("allNodes")
    if all_nodes is not None and type(all_nodes) is not bool:
        all_nodes = ctx.opt_bool(raw, "allNodes", "spec")
    if nested:
        # Plain fields in these versions: the zero value means "not set".
        node_name = node_name or None
        all_nodes = all_nodes or None
    selector_raw = raw.get("nodeSelector")
    node_selector = None
    if selector_raw is not None:
        ctx.known_tree(selector_raw, "spec.nodeSelector", "NodeSelector")
        node_selector = decode_node_selector(ctx, selector_raw, "spec.nodeSelector")
    per_device = raw.get("perDeviceNodeSelection")
    if per_device is not None and type(per_device) is not bool:
        per_device = ctx.opt_bool(raw, "perDeviceNodeSelection", "spec")
    if validate:
        _check_node_selection(ctx, node_name, node_selector, all_nodes, per_device)

    devices_raw = raw.get("devices")
    if devices_raw is not None and type(devices_raw) is not list:
        devices_raw = ctx.array(raw, "devices", "spec")
    counters_raw = raw.get("sharedCounters")
    if counters_raw is not None:
        counters_raw = ctx.array(raw, "sharedCounters", "spec")
        ctx.known_tree(counters_raw, "spec.sharedCounters", "[CounterSet]")
    if validate and counters_raw is not None and devices_raw is not None:
        # Both present, even empty: upstream's allocator would use the counters and
        # ignore the devices (slices of the first partitionable-devices API had both).
        ctx.fail("spec", invalid("", "only one of `sharedCounters` or `devices` is allowed"))

    devices: list[Device] = []
    if devices_raw:
        if validate:
            _check_device_count(ctx, devices_raw, nested)
        devices = _decode_devices(ctx, devices_raw, driver, per_device, nested, bare_capacity)
        if validate:
            _check_devices(ctx, devices, per_device)
    shared = _decode_counter_sets(ctx, counters_raw) if counters_raw else []
    return ResourceSliceSpec(
        driver=driver,
        pool=pool,
        node_name=node_name,
        node_selector=node_selector,
        all_nodes=all_nodes,
        per_device_node_selection=per_device,
        devices=devices,
        shared_counters=shared,
    )


def _decode_pool(ctx: DecodeContext, spec: Mapping[str, Any]) -> ResourcePool:
    raw = spec.get("pool")
    if type(raw) is not dict:
        raw = ctx.mapping(spec, "pool", "spec") or {}  # (a struct: absent, the zero pool)
    ctx.known(raw, "spec.pool", "ResourcePool")
    name = raw.get("name")
    if type(name) is not str:
        name = ctx.string(raw, "name", "spec.pool", required=True)
    generation = raw.get("generation")
    if type(generation) is not int or not limits.INT64_MIN <= generation <= limits.INT64_MAX:
        generation = ctx.opt_int(raw, "generation", "spec.pool") or 0
    count = raw.get("resourceSliceCount")
    if type(count) is not int or not limits.INT64_MIN <= count <= limits.INT64_MAX:
        count = ctx.opt_int(raw, "resourceSliceCount", "spec.pool") or 0
    pool = ResourcePool(name=name, generation=generation, resource_slice_count=count)
    if ctx.validate:
        if not pool_name_ok(pool.name):
            ctx.check("pool", pool.name, names.check_pool_name, "spec.pool.name")
        if pool.resource_slice_count <= 0:
            ctx.fail(
                "spec.pool.resourceSliceCount",
                invalid(pool.resource_slice_count, "must be greater than zero"),
            )
        if pool.generation < 0:
            ctx.fail(
                "spec.pool.generation",
                invalid(pool.generation, "must be greater than or equal to zero"),
            )
    return pool


_NODE_SELECTION_FIELDS = (
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
)


def _check_node_selection(
    ctx: DecodeContext,
    node_name: str | None,
    node_selector: Any,
    all_nodes: bool | None,
    per_device: bool | None,
) -> None:
    chosen = []
    if node_name is not None:
        if not node_name:
            ctx.fail(
                "spec.nodeName", invalid("", "must be either unset or set to a non-empty string")
            )
        if not dns_subdomain_ok(node_name):
            ctx.check("node", node_name, names.check_dns_subdomain, "spec.nodeName")
        chosen.append("`nodeName`")
    if node_selector is not None:
        if len(node_selector.node_selector_terms) != 1:
            ctx.fail(
                "spec.nodeSelector.nodeSelectorTerms",
                invalid(
                    len(node_selector.node_selector_terms),
                    "must have exactly one node selector term",
                ),
            )
        chosen.append("`nodeSelector`")
    if all_nodes is not None:
        if not all_nodes:
            ctx.fail("spec.allNodes", invalid(False, "must be either unset or set to true"))
        chosen.append("`allNodes`")
    if per_device is not None:
        if not per_device:
            ctx.fail(
                "spec.perDeviceNodeSelection", invalid(False, "must be either unset or set to true")
            )
        chosen.append("`perDeviceNodeSelection`")
    if not chosen:
        ctx.fail("spec", required(_NODE_SELECTION_FIELDS))
    if len(chosen) > 1:
        ctx.fail(
            "spec",
            invalid(
                "{" + ", ".join(chosen) + "}",
                f"{_NODE_SELECTION_FIELDS}, but multiple fields are set",
            ),
        )


def _check_device_count(ctx: DecodeContext, devices: list[Any], nested: bool) -> None:
    n = len(devices)
    if n > limits.RESOURCE_SLICE_MAX_DEVICES:
        ctx.fail("spec.devices", too_many(n, limits.RESOURCE_SLICE_MAX_DEVICES))
    limit = limits.RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES
    if n > limit and _uses_advanced_features(devices, nested):
        ctx.fail("spec.devices", too_many(n, limit))


_PER_DEVICE_NODE_SELECTION = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
)


def _check_devices(ctx: DecodeContext, devices: list[Device], per_device: bool | None) -> None:
    """What the API server checks across a slice's devices (each device's own fields
    were checked as it was read): unique names, and with ``perDeviceNodeSelection``
    a node selection on every device."""
    names: set[str] = set()
    for i, device in enumerate(devices):
        if per_device and (
            device.node_name is None and device.node_selector is None and device.all_nodes is None
        ):
            ctx.fail(f"spec.devices[{i}]", required(_PER_DEVICE_NODE_SELECTION))
        if device.name in names:
            ctx.fail(f"spec.devices[{i}]", duplicate(device.name))
        names.add(device.name)


def _uses_advanced_features(devices: list[Any], nested: bool) -> bool:
    """Taints, counter consumption or list-type attributes on any device."""
    for d in devices:
        body = d.get("basic") if nested and isinstance(d, Mapping) else d
        if not isinstance(body, Mapping):
            continue
        if body.get("taints") or body.get("consumesCounters"):
            return True
        attrs = body.get("attributes")
        if isinstance(attrs, Mapping):
            for a in attrs.values():
                if isinstance(a, Mapping) and any(a.get(k) is not None for k in _LIST_KINDS):
                    return True
    return False


# ----------------------------------------------------------------------------- device


def _device_path(i: int, nested: bool) -> str:
    return f"spec.devices[{i}].basic" if nested else f"spec.devices[{i}]"


def _decode_devices(
    ctx: DecodeContext,
    devices_raw: list[Any],
    driver: str,
    per_device: bool | None,
    nested: bool,
    bare_capacity: bool,
) -> list[Device]:
    """The device list: the common shape from the load's caches
    (:func:`draspeed.api._decode.decode_common_devices`), anything else through
    :func:`_decode_device`."""
    key_names = ctx.caches.attribute_names.get(driver)
    if key_names is None:
        key_names = ctx.caches.attribute_names[driver] = {}

    def checked(i: int, d: Any) -> Device:
        return _decode_device(ctx, i, d, driver, key_names, per_device, nested, bare_capacity)

    return decode_common_devices(ctx, devices_raw, driver, nested, bare_capacity, checked)


def _decode_device(
    ctx: DecodeContext,
    i: int,
    d: Any,
    driver: str,
    key_names: dict[str, str],
    per_device: bool | None,
    nested: bool,
    bare_capacity: bool,
) -> Device:
    """Device ``i``, every field checked (errors name its path). Distinct attribute
    names, attribute values and quantities are memoised in the load's caches, which is
    what lets :func:`~draspeed.api._decode.decode_common_devices` take the next
    device of the same shape without this function."""
    caches = ctx.caches
    validate = ctx.validate
    attr_caches = caches.attributes
    strings = attr_caches["string"][1]
    capacities = caches.capacities
    dns_labels = caches.dns_labels
    max_fields = limits.RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE
    max_values = limits.RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE
    base_keys = 0 if nested else 1  # "name" lives next to the fields in v1

    if type(d) is not dict:
        d = dict(ctx.item(d, f"spec.devices[{i}]"))
    ctx.known(d, f"spec.devices[{i}]", "Device")
    name = d.get("name")
    if type(name) is not str:
        ctx.fail(
            f"spec.devices[{i}].name",
            required() if name is None else wrong_type("string", name),
        )
    if validate and name not in dns_labels:
        problem = names.check_dns_label(name)
        if problem is not None:
            ctx.fail(f"spec.devices[{i}].name", problem)
        dns_labels.add(name)
    name = caches.strings.setdefault(name, name)  # one object per name (as _decode does)
    body: Any = d
    if nested:
        body = d.get("basic")
        if body is None:
            return Device(name=name)
        if type(body) is not dict:
            if not isinstance(body, Mapping):
                ctx.fail(f"spec.devices[{i}].basic", wrong_type("object", body))
            body = dict(body)
        ctx.known(body, f"spec.devices[{i}].basic", "BasicDevice")

    attrs: dict[str, DeviceAttribute] = {}
    a = body.get("attributes")
    extra_values = 0
    if a is not None and type(a) is not dict:  # ([], "" or 0 too: Go refuses each)
        a = _as_dict(ctx, a, f"{_device_path(i, nested)}.attributes")
    if a:
        for key, value in a.items():
            fq = key_names.get(key)
            if fq is None:
                fq = _attribute_name(ctx, driver, key, f"{_device_path(i, nested)}.attributes")
            attr = None
            try:
                [(kind, v)] = value.items()  # the common shape: {kind: value}
            except (AttributeError, ValueError):
                pass
            else:
                if kind == "string":
                    if type(v) is str:
                        attr = strings.get(v)
                        if attr is None and (
                            not validate or len(v) <= 16 or (len(v) <= 64 and v.isascii())
                        ):
                            # A new string that fits 64 bytes (uuids, serials).
                            attr = strings[v] = DeviceAttribute("string", v)
                else:
                    entry = attr_caches.get(kind)
                    if entry is not None and type(v) is entry[0]:
                        attr = entry[1].get(v)
            if attr is None:
                if isinstance(value, Mapping):
                    ctx.known(
                        value,
                        child(f"{_device_path(i, nested)}.attributes", key),
                        "DeviceAttribute",
                    )
                try:
                    attr = _attribute_value(caches, validate, value)
                except _BadValue as bad:
                    path = f"{_device_path(i, nested)}.attributes"
                    path = map_entry(path, key, ATTRIBUTE_KEY_LIMIT)
                    ctx.fail(f"{path}.{bad.where}" if bad.where else path, bad.message)
                if attr.kind in LIST_KINDS:
                    extra_values += max(len(attr.value), 1) - 1
            attrs[fq] = attr
        if len(attrs) != len(a):
            attrs = _merge_duplicates(
                ctx, a, driver, f"{_device_path(i, nested)}.attributes", _decode_attribute
            )

    caps: dict[str, DeviceCapacity] = {}
    c = body.get("capacity")
    if c is not None and type(c) is not dict:
        c = _as_dict(ctx, c, f"{_device_path(i, nested)}.capacity")
    if c:
        for key, value in c.items():
            if key not in key_names:  # checked once per load
                _attribute_name(ctx, driver, key, f"{_device_path(i, nested)}.capacity")
            cap = None
            if bare_capacity:
                if type(value) is str:
                    cap = capacities.get(value)
            else:
                try:
                    [(field, text)] = value.items()  # the common shape: {value: text}
                except (AttributeError, ValueError):
                    pass
                else:
                    if field == "value" and type(text) is str:
                        cap = capacities.get(text)
            if cap is None:
                path = map_entry(f"{_device_path(i, nested)}.capacity", key, ATTRIBUTE_KEY_LIMIT)
                cap = (
                    _bare_capacity(ctx, value, path)
                    if bare_capacity
                    else _decode_capacity(ctx, value, path)
                )
            # Keyed as written: upstream compares and prints capacity names literally
            # (``memory`` and ``<driver>/memory`` are two capacities).
            caps[key] = cap

    if validate and (a or c):
        total = (len(a) if a else 0) + (len(c) if c else 0)
        if total > max_fields:
            ctx.fail(
                _device_path(i, nested),
                invalid(
                    total,
                    f"the total number of attributes and capacities must not exceed {max_fields}",
                ),
            )
        if a and len(a) + extra_values > max_values:
            ctx.fail(
                _device_path(i, nested),
                invalid(
                    len(a) + extra_values,
                    f"the total number of attribute values must not exceed {max_values}",
                ),
            )

    if validate and body.get("allowMultipleAllocations") is not True:
        for key, cap in caps.items():
            if cap.request_policy is not None:  # (consumable capacity is for shared devices)
                path = map_entry(f"{_device_path(i, nested)}.capacity", key, ATTRIBUTE_KEY_LIMIT)
                ctx.fail(
                    child(path, "requestPolicy"), forbidden("allowMultipleAllocations must be true")
                )
    device = Device(name, attrs, caps)
    if len(body) > base_keys + (a is not None) + (c is not None):
        _decode_device_extras(ctx, device, body, _device_path(i, nested), per_device)
    return device


class CheckedDevices:
    """The devices of one typed slice that the compiled builder leaves to the checked
    decoder (:class:`draspeed.api._decode.SliceBuilder`): the slice's text is decoded once
    to the dict the checked path reads, and that dict becomes the slice's ``raw``.
    Called as ``(i, driver)`` for device ``i``; errors are the checked path's own."""

    __slots__ = ("ctx", "devices", "raw")

    def __init__(
        self,
        text: msgspec.Raw,
        *,
        validate: bool,
        caches: Caches,
        sink: list[str] | None,
        pending: Pending | None = None,
        fields: Validation | None = None,
    ) -> None:
        self.raw: dict[str, Any] = json_as_go.decode(text)
        name = object_name("ResourceSlice", self.raw, namespaced=False)
        self.ctx = DecodeContext(
            name, validate=validate, caches=caches, sink=sink, pending=pending, fields=fields
        )
        # A slice of counter sets alone has no devices (only its sets are asked for).
        self.devices: list[Any] = self.raw["spec"].get("devices") or []

    def counter_sets(self) -> list[CounterSet]:
        """The slice's ``sharedCounters``, decoded and checked."""
        sets = self.ctx.array(self.raw["spec"], "sharedCounters", "spec")
        if sets is None:
            return []
        self.ctx.known_tree(sets, "spec.sharedCounters", "[CounterSet]")
        return _decode_counter_sets(self.ctx, sets) if sets else []

    def __call__(self, i: int, driver: str) -> Device:
        ctx = self.ctx
        key_names = ctx.caches.attribute_names[driver]
        try:
            return _decode_device(ctx, i, self.devices[i], driver, key_names, None, False, False)
        except DraspeedError:
            raise
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
            # As draspeed.api.decode.decode_known words a shape no decoder anticipated.
            raise InputError(ctx.obj, "", f"cannot decode: {exc}") from exc


def _as_dict(ctx: DecodeContext, value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        ctx.fail(path, wrong_type("object", value))
    return dict(value)


def _merge_duplicates(
    ctx: DecodeContext, raw: Mapping[str, Any], driver: str, map_path: str, decode_one: Any
) -> dict[str, Any]:
    """Redo an attribute map in which ``model`` and ``<driver>/model`` both occur: they
    name the same attribute. Upstream's lookup tries the explicit form first, so the
    model keeps that one, with a warning."""
    key_names = ctx.caches.attribute_names[driver]
    result: dict[str, Any] = {}
    for key, value in raw.items():
        fq = key_names[key]
        if key != fq and fq in raw:
            ctx.warn(
                map_entry(map_path, key, ATTRIBUTE_KEY_LIMIT),
                f"{fq} is also given with its domain; the fully qualified entry is used",
                DraspeedWarning,
            )
            continue
        result[fq] = decode_one(ctx, value, map_entry(map_path, key, ATTRIBUTE_KEY_LIMIT))
    return result


def _attribute_name(ctx: DecodeContext, driver: str, key: Any, map_path: str) -> str:
    """Fully qualified name of an attribute or capacity key, checked once per load."""
    if not isinstance(key, str):
        ctx.fail(map_path, wrong_type("string key", key))
    if ctx.validate:
        problem = names.check_qualified_name(key)
        if problem is not None:
            ctx.fail(map_entry(map_path, key, ATTRIBUTE_KEY_LIMIT), problem)
    fq = key if "/" in key else f"{driver}/{key}"
    ctx.caches.attribute_names.setdefault(driver, {})[key] = fq
    return fq


class _BadValue(Exception):
    """A bad attribute value; ``where`` is relative to the attribute (``int``,
    ``strings[2]``). The caller knows the device and key and builds the full path only
    then, which keeps paths off the per-attribute path."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message


def _decode_attribute(ctx: DecodeContext, raw: Any, path: str) -> DeviceAttribute:
    try:
        return _attribute_value(ctx.caches, ctx.validate, raw)
    except _BadValue as bad:
        ctx.fail(f"{path}.{bad.where}" if bad.where else path, bad.message)


def _attribute_value(caches: Caches, validate: bool, raw: Any) -> DeviceAttribute:
    """One DeviceAttribute. No value at all decodes (kind None: upstream's allocator
    reports it at CEL time); two values are an error. Scalars are memoised."""
    if type(raw) is dict and len(raw) == 1:
        [(kind, value)] = raw.items()
        entry = caches.attributes.get(kind)
        if entry is not None and value is not None:
            attr = DeviceAttribute(kind, _scalar(kind, value, validate, kind))
            if type(value) is entry[0]:
                entry[1][value] = attr
            return attr
    if raw is None:  # (the zero attribute, as Go decodes null into a struct)
        raw = {}
    if not isinstance(raw, Mapping):
        raise _BadValue("", wrong_type("object", raw))
    found = [(k, v) for k, v in raw.items() if k in _VALUE_KINDS and v is not None]
    if not found:
        if validate:
            raise _BadValue("", invalid("", "exactly one value must be specified"))
        return DeviceAttribute(kind=None)
    if len(found) > 1:
        # Printed as the API server prints the attribute: its values as JSON, in the
        # order of the Go struct's fields.
        given = dict(found)
        shown = {k: given[k] for k in _GO_FIELD_ORDER if k in given}
        raise _BadValue("", invalid(shown, "exactly one value must be specified"))
    kind, value = found[0]
    if kind in LIST_KINDS:
        if not isinstance(value, list):
            raise _BadValue(kind, wrong_type("array", value))
        if validate and not value:
            raise _BadValue(kind, invalid([], "must not be empty if specified"))
        scalar = kind[:-1]
        items = tuple(_scalar(scalar, v, validate, f"{kind}[{j}]") for j, v in enumerate(value))
        return DeviceAttribute(kind, items)
    return DeviceAttribute(kind, _scalar(kind, value, validate, kind))


def _scalar(kind: str, value: Any, validate: bool, where: str) -> Any:
    """A checked int/bool/string/version value."""
    if kind == "int":
        if type(value) is not int and (isinstance(value, bool) or not isinstance(value, int)):
            raise _BadValue(where, wrong_type("integer", value))
        if not limits.INT64_MIN <= value <= limits.INT64_MAX:
            raise _BadValue(where, invalid(value, "out of the range of a 64-bit integer"))
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise _BadValue(where, wrong_type("boolean", value))
        return value
    if not isinstance(value, str):
        raise _BadValue(where, wrong_type("string", value))
    if validate:
        if kind == "version":
            problem = names.check_attribute_version(value)
        elif len(value) > 16:  # shorter text cannot exceed 64 bytes in UTF-8
            problem = names.check_attribute_string(value)
        else:
            problem = None
        if problem is not None:
            raise _BadValue(where, problem)
    return value


# --------------------------------------------------------------------------- capacity


def _bare_capacity(ctx: DecodeContext, raw: Any, path: str) -> DeviceCapacity:
    """A v1alpha3 capacity: the quantity itself."""
    cap = DeviceCapacity(value=ctx.quantity(raw, path))
    if type(raw) is str:
        ctx.caches.capacities[raw] = cap
    return cap


def _decode_capacity(ctx: DecodeContext, raw: Any, path: str) -> DeviceCapacity:
    raw = ctx.item(raw, path)
    ctx.known_tree(raw, path, "DeviceCapacity")
    # (No value is the zero quantity, which the API server takes: any parsed quantity
    # is a valid capacity.)
    value = raw.get("value")
    capacity = DeviceCapacity(value=ctx.quantity(value, child(path, "value")))
    policy = ctx.mapping(raw, "requestPolicy", path)
    if policy is not None:
        capacity.request_policy = _decode_request_policy(
            ctx, policy, child(path, "requestPolicy"), capacity.value
        )
    elif type(value) is str:
        ctx.caches.capacities[value] = capacity
    return capacity


def _decode_request_policy(
    ctx: DecodeContext, raw: Mapping[str, Any], path: str, capacity: Quantity
) -> CapacityRequestPolicy:
    policy = CapacityRequestPolicy(default=ctx.opt_quantity(raw, "default", path))
    values = ctx.array(raw, "validValues", path)
    if values is not None:
        vpath = child(path, "validValues")
        if ctx.validate and len(values) > limits.CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS:
            ctx.fail(
                vpath, too_many(len(values), limits.CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS)
            )
        policy.valid_values = [ctx.quantity(v, f"{vpath}[{j}]") for j, v in enumerate(values)]
    range_raw = ctx.mapping(raw, "validRange", path)
    if range_raw is not None:
        rpath = child(path, "validRange")
        policy.valid_range = CapacityRequestPolicyRange(
            min=ctx.opt_quantity(range_raw, "min", rpath),
            max=ctx.opt_quantity(range_raw, "max", rpath),
            step=ctx.opt_quantity(range_raw, "step", rpath),
        )
    if ctx.validate:
        _check_request_policy(ctx, policy, path, capacity)
    return policy


def _check_request_policy(
    ctx: DecodeContext, policy: CapacityRequestPolicy, path: str, capacity: Quantity
) -> None:
    """The API server's rules for a request policy, in its order (validation.go,
    validateRequestPolicy): one kind of policy; a ``default`` with either kind, valid by
    it; values, ``min``, ``max`` and one step within the capacity's value."""
    if policy.valid_values and policy.valid_range is not None:
        ctx.fail(
            path,
            forbidden(
                "exactly one policy can be specified, cannot specify "
                '"validValues" and "validRange" at the same time'
            ),
        )
    if policy.valid_values:
        _check_valid_values(ctx, policy, path, capacity)
    elif policy.valid_range is not None:
        if policy.default is None:
            ctx.fail(child(path, "default"), required("required when validRange is defined"))
        _check_valid_range(ctx, policy.valid_range, policy.default, path, capacity)


def _check_valid_values(
    ctx: DecodeContext, policy: CapacityRequestPolicy, path: str, capacity: Quantity
) -> None:
    default = policy.default
    if default is None:
        ctx.fail(child(path, "default"), required("required when validValues is defined"))
    vpath = child(path, "validValues")
    values = policy.valid_values
    for j in range(1, len(values)):
        if values[j - 1] > values[j]:
            ctx.fail(
                f"{vpath}[{j}]", invalid(str(values[j]), "values must be sorted in ascending order")
            )
    for j, option in enumerate(values):
        if option > capacity:
            ctx.fail(
                f"{vpath}[{j}]",
                invalid(str(option), f"option is larger than capacity value: {capacity}"),
            )
    seen: set[int] = set()
    for j, option in enumerate(values):
        key = option.go_value()  # (the API server tells options apart by Value())
        if key in seen:
            ctx.fail(f"{vpath}[{j}]", duplicate(str(key)))
        seen.add(key)
    if not any(option.cmp(default) == 0 for option in values):
        ctx.fail(
            vpath,
            invalid(str(default), "default value is not valid according to the requestPolicy"),
        )


def _check_valid_range(
    ctx: DecodeContext,
    rng: CapacityRequestPolicyRange,
    default: Quantity,
    path: str,
    capacity: Quantity,
) -> None:
    rpath = child(path, "validRange")
    dpath = child(path, "default")
    if rng.min is None:
        ctx.fail(child(rpath, "min"), required("required when validRange is defined"))
    if rng.min > capacity:
        ctx.fail(
            child(rpath, "min"),
            invalid(str(rng.min), f"min is larger than capacity value: {capacity}"),
        )
    if default < rng.min:
        ctx.fail(dpath, invalid(str(default), f"default is less than min: {rng.min}"))
    if rng.max is not None:
        if rng.min > rng.max:
            ctx.fail(
                child(rpath, "max"), invalid(str(rng.min), f"min is larger than max: {rng.max}")
            )
        if rng.max > capacity:
            ctx.fail(
                child(rpath, "max"),
                invalid(str(rng.max), f"max is larger than capacity value: {capacity}"),
            )
        if default > rng.max:
            ctx.fail(dpath, invalid(str(default), f"default is more than max: {rng.max}"))
    if rng.step is None:
        return
    spath = child(rpath, "step")
    if rng.step.sign() <= 0:
        ctx.fail(spath, invalid(str(rng.step), "must be greater than zero"))
    one_step = rng.min.add(rng.step)
    if one_step > capacity:
        ctx.fail(
            spath,
            invalid(
                str(rng.step), f"one step {one_step} is larger than capacity value: {capacity}"
            ),
        )
    # The step arithmetic reads each bound with Value(), which holds only in [0, MaxInt64]
    # (the API server's integer path; DRAFractionalCapacityRange's milli path is not
    # modelled, as the allocator variant rounds with Value() too).
    bounds = (("default", default), ("min", rng.min), ("max", rng.max), ("step", rng.step))
    for name, bound in bounds:
        if bound is None:
            continue
        bpath = dpath if name == "default" else child(rpath, name)
        if bound.sign() < 0:
            ctx.fail(bpath, invalid(str(bound), "must be greater than or equal to 0"))
        if bound > limits.INT64_MAX:
            ctx.fail(bpath, invalid(str(bound), f"must not be larger than {limits.INT64_MAX}"))
    for value in (default, rng.max):
        if value is not None and (value.go_value() - rng.min.go_value()) % rng.step.go_value():
            ctx.fail(
                spath,
                invalid(
                    str(value),
                    f"value is not a multiple of a given step ({rng.step}) from ({rng.min})",
                ),
            )


# ---------------------------------------------------------- counters, taints, nodes


def _decode_counters(ctx: DecodeContext, raw: Any, path: str) -> dict[str, Counter]:
    if raw is None:
        if ctx.validate:
            ctx.fail(path, required())
        return {}
    if not isinstance(raw, Mapping):
        ctx.fail(path, wrong_type("object", raw))
    if ctx.validate:
        if not raw:
            ctx.fail(path, required())
        if len(raw) > limits.RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET:
            ctx.fail(path, too_many(len(raw), limits.RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET))
    counters = {}
    for name, counter in raw.items():
        cpath = map_entry(path, str(name), COUNTER_KEY_LIMIT)
        if not isinstance(name, str):
            ctx.fail(path, wrong_type("string key", name))
        if ctx.validate:
            ctx.check("label", name, names.check_dns_label, cpath)
        counter = ctx.item(counter, cpath)
        # (No value is the zero quantity, which the API server takes: any parsed
        # quantity is a valid counter.)
        counters[name] = Counter(value=ctx.quantity(counter.get("value"), child(cpath, "value")))
    return counters


def _decode_counter_sets(ctx: DecodeContext, raw: list[Any]) -> list[CounterSet]:
    """``sharedCounters``. A set name twice in one slice is the API server's error; across
    the slices of a pool it is the allocator's ("duplicate counter set name")."""
    path = "spec.sharedCounters"
    if ctx.validate and len(raw) > limits.RESOURCE_SLICE_MAX_COUNTER_SETS:
        ctx.fail(path, too_many(len(raw), limits.RESOURCE_SLICE_MAX_COUNTER_SETS))
    sets: list[CounterSet] = []
    for i, cs in enumerate(raw):
        cs_path = f"{path}[{i}]"
        cs = ctx.item(cs, cs_path)
        name = ctx.string(cs, "name", cs_path, required=ctx.validate)
        if ctx.validate:
            ctx.check("label", name, names.check_dns_label, f"{cs_path}.name")
        sets.append(
            CounterSet(
                name=name, counters=_decode_counters(ctx, cs.get("counters"), f"{cs_path}.counters")
            )
        )
    if ctx.validate:
        seen: set[str] = set()
        for i, counter_set in enumerate(sets):
            if counter_set.name in seen:
                ctx.fail(f"{path}[{i}]", duplicate(counter_set.name))
            seen.add(counter_set.name)
    return sets


# The parts of a device with fields of their own, checked for unknown ones as a whole.
_DEVICE_PARTS = (
    ("consumesCounters", "[DeviceCounterConsumption]"),
    ("taints", "[DeviceTaint]"),
    ("nodeSelector", "NodeSelector"),
    ("nodeAllocatableResources", "{NodeAllocatableResource}"),
)


def _decode_device_extras(
    ctx: DecodeContext,
    device: Device,
    body: Mapping[str, Any],
    prefix: str,
    per_device: bool | None,
) -> None:
    """The less common device fields: counters, taints, node selection, binding, sharing."""
    validate = ctx.validate
    if ctx.fields != "ignore":
        for field_name, ref in _DEVICE_PARTS:
            part = body.get(field_name)
            if part is not None:
                ctx.known_tree(part, f"{prefix}.{field_name}", ref)
    consumes = ctx.array(body, "consumesCounters", prefix)
    if consumes:
        cpath = f"{prefix}.consumesCounters"
        if (
            validate
            and len(consumes) > limits.RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE
        ):
            ctx.fail(
                cpath,
                too_many(
                    len(consumes), limits.RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE
                ),
            )
        seen: set[str] = set()
        for j, c in enumerate(consumes):
            jpath = f"{cpath}[{j}]"
            c = ctx.item(c, jpath)
            counter_set = ctx.string(c, "counterSet", jpath, required=validate)
            if validate:
                ctx.check("label", counter_set, names.check_dns_label, f"{jpath}.counterSet")
                if counter_set in seen:
                    ctx.fail(jpath, duplicate(counter_set))
                seen.add(counter_set)
            counters = _decode_counters(ctx, c.get("counters"), f"{jpath}.counters")
            # Shared like capacities and quantities: equal consumptions are one object.
            key = (counter_set, tuple((k, id(v.value)) for k, v in counters.items()))
            use = ctx.caches.consumptions.get(key)
            if use is None:
                use = ctx.caches.consumptions[key] = DeviceCounterConsumption(
                    counter_set=counter_set, counters=counters
                )
            device.consumes_counters.append(use)

    taints = ctx.array(body, "taints", prefix)
    if taints:
        tpath = f"{prefix}.taints"
        if validate and len(taints) > limits.DEVICE_TAINTS_MAX_LENGTH:
            ctx.fail(tpath, too_many(len(taints), limits.DEVICE_TAINTS_MAX_LENGTH))
        device.taints = [decode_taint(ctx, t, f"{tpath}[{j}]") for j, t in enumerate(taints)]

    device.node_name = ctx.opt_string(body, "nodeName", prefix)
    selector = body.get("nodeSelector")
    if selector is not None:
        device.node_selector = decode_node_selector(ctx, selector, f"{prefix}.nodeSelector")
    device.all_nodes = ctx.opt_bool(body, "allNodes", prefix)
    device.binds_to_node = ctx.opt_bool(body, "bindsToNode", prefix)
    device.binding_conditions = ctx.string_list(body, "bindingConditions", prefix)
    device.binding_failure_conditions = ctx.string_list(body, "bindingFailureConditions", prefix)
    device.allow_multiple_allocations = ctx.opt_bool(body, "allowMultipleAllocations", prefix)
    if validate:
        _check_device_node_selection(ctx, device, prefix, per_device)
        check_binding_conditions(
            ctx, device.binding_conditions, device.binding_failure_conditions, body, prefix
        )


def _check_device_node_selection(
    ctx: DecodeContext, device: Device, prefix: str, per_device: bool | None
) -> None:
    if not per_device:
        if (
            device.node_name is not None
            or device.node_selector is not None
            or device.all_nodes is not None
        ):
            ctx.fail(
                prefix,
                invalid(
                    None,
                    "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
                ),
            )
        return
    chosen = []
    if device.node_name is not None:
        if not device.node_name:
            ctx.fail(f"{prefix}.nodeName", invalid("", "must not be empty"))
        ctx.check("node", device.node_name, names.check_dns_subdomain, f"{prefix}.nodeName")
        chosen.append("`nodeName`")
    if device.node_selector is not None:
        chosen.append("`nodeSelector`")
    if device.all_nodes is not None:
        if not device.all_nodes:
            ctx.fail(f"{prefix}.allNodes", invalid(False, "must be either unset or set to true"))
        chosen.append("`allNodes`")
    # None at all is refused for every device of the slice (_check_devices), also for
    # those without other fields, which never come here.
    if len(chosen) > 1:
        ctx.fail(prefix, invalid("{" + ", ".join(chosen) + "}", _PER_DEVICE_NODE_SELECTION))
