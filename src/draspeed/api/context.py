"""Decoding state shared by the per-kind decoders: who to blame, warnings, caches.

A :class:`DecodeContext` exists per top-level object. It raises the one
:class:`~draspeed.errors.InputError` of a bad object (``Kind ns/name: field.path: msg``),
emits conversion warnings, and offers typed field readers that treat ``null`` like an
absent field, as Go's JSON decoding does.

:class:`Caches` live for one :func:`draspeed.load` call (or one :func:`decode` call):
ResourceSlices repeat the same attribute names, values and quantities thousands of
times, and every model value they produce is immutable, so each distinct one is parsed
and checked once.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, Literal, NoReturn

from draspeed.api import limits, messages
from draspeed.api.fields import KNOWN, SCHEMAS, all_known, unknown_fields
from draspeed.api.json_as_go import NumberText
from draspeed.api.model import DeviceAttribute, DeviceCapacity, DeviceCounterConsumption
from draspeed.errors import InputError, QuantityError, printable
from draspeed.quantity import Quantity

# How strictly objects are read, as ``kubectl --validate`` says it:
# - "strict": the API server's validation, and unknown or duplicate fields are errors;
# - "warn": the same validation, unknown or duplicate fields are warnings (the last
#   of duplicate fields is used);
# - "ignore": neither. Unlike kubectl, whose API server validates either way, this
#   also skips the API server's validation: for objects that never met one (upstream's
#   own test fixtures), with upstream's allocator's errors at allocation instead.
Validation = Literal["strict", "warn", "ignore"]
VALIDATIONS: tuple[Validation, ...] = ("strict", "warn", "ignore")


def validation_mode(value: object) -> Validation:
    """The mode a ``validate`` argument names: a mode, or True (strict) / False (ignore)."""
    if value is True:
        return "strict"
    if value is False:
        return "ignore"
    if value == "strict" or value == "warn" or value == "ignore":
        return value
    raise ValueError(
        f"validate must be 'strict', 'warn' or 'ignore' (or True / False), not {value!r}"
    )


class DraspeedWarning(UserWarning):
    """Base class of the warnings draspeed emits about its input."""


class DraspeedConversionWarning(DraspeedWarning):
    """An object of an older API version lost information on its way to the v1 model
    (or a result lost information on its way to an older version)."""


class Caches:
    """Per-load memo tables; see the module docstring.

    Model values found here are shared between the objects of one load (two devices
    with ``memory: 80Gi`` hold the same :class:`DeviceCapacity`): treat decoded objects
    as read-only.
    """

    __slots__ = (
        "attribute_names",
        "attributes",
        "capacities",
        "checked",
        "consumptions",
        "dns_labels",
        "quantities",
        "strings",
    )

    def __init__(self) -> None:
        # driver -> raw attribute/capacity key -> fully qualified name (checked)
        self.attribute_names: dict[str, dict[str, str]] = {}
        # scalar value kind -> (the Python type of its values, value -> DeviceAttribute)
        self.attributes: dict[str, tuple[type, dict[Any, DeviceAttribute]]] = {
            "int": (int, {}),
            "bool": (bool, {}),
            "string": (str, {}),
            "version": (str, {}),
        }
        # quantity text of a capacity without a request policy -> DeviceCapacity
        self.capacities: dict[str, DeviceCapacity] = {}
        # (check name, value) pairs that passed a syntax check
        self.checked: set[tuple[str, str]] = set()
        # (counter set, ((counter, id of its interned Quantity), ...)) -> the one
        # DeviceCounterConsumption: partitionable devices repeat the same few consumptions
        # on every node, and the engine reads each distinct one once.
        self.consumptions: dict[tuple[Any, ...], DeviceCounterConsumption] = {}
        # names that passed the DNS label check (device names: the most frequent check)
        self.dns_labels: set[str] = set()
        # quantity text -> Quantity
        self.quantities: dict[str, Quantity] = {}
        # strings that repeat from object to object (a result's driver, pool and
        # request, a node selector's key, a device name): one str object each
        self.strings: dict[str, str] = {}


def dict_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The input mapping itself when it is a dict (``raw`` must be the input, unchanged)."""
    return obj if isinstance(obj, dict) else dict(obj)


# What Go decodes a JSON null, or an absent field, of a Quantity value into.
ZERO_QUANTITY = Quantity.zero()


def child(path: str, key: str) -> str:
    """``path.key``; keys that are not plain identifiers are written ``path[key]``."""
    if key and (key.replace("-", "").replace("_", "").isalnum()) and key.isascii():
        return f"{path}.{key}" if path else key
    return f"{path}[{key}]"


# validation.go's limits for map keys in error paths: attribute and capacity names
# (domain, "/", identifier) and counter names (DNS labels).
ATTRIBUTE_KEY_LIMIT = 63 + 1 + 32
COUNTER_KEY_LIMIT = 63


def map_entry(path: str, key: str, limit: int) -> str:
    """``path[key]``: an entry of a map the API server validates, as its field path
    writes it (``spec.devices[0].attributes[model]``), a key longer than ``limit``
    bytes (at least 16) shortened in the middle to that length with "..." as
    validation.go's validateMap shortens it."""
    data = key.encode()
    limit = max(limit, 16)
    if len(data) > limit:
        remaining = limit - 3
        head, tail = data[: (remaining + 1) // 2], data[len(data) - remaining // 2 :]
        key = (head + b"..." + tail).decode(errors="replace")
    return f"{path}[{key}]"


Pending = list[tuple[str, type[Warning]]]  # warnings held back: (text, category)


class DecodeContext:
    """Error and warning reporting for one top-level object.

    ``validate``: the API server's validation is on. ``fields``: what an unknown field
    is (see :data:`Validation`; by default strict with validation, else ignored);
    ``version``: the object's API version, whose fields
    (:mod:`draspeed.api.fields`) are the known ones.

    Warnings go to ``sink`` (text) and to ``warnings.warn``, or, with ``pending``, into
    that list for the caller to warn later (a loader that may still find out that its
    input was no JSON after all, and start over, holds them back).
    """

    __slots__ = (
        "caches",
        "fields",
        "known_fields",
        "obj",
        "pending",
        "sink",
        "validate",
        "version",
        "warned",
    )

    def __init__(
        self,
        obj: str,
        *,
        validate: bool,
        caches: Caches | None = None,
        sink: list[str] | None = None,
        pending: Pending | None = None,
        fields: Validation | None = None,
        version: str = "v1",
    ) -> None:
        self.obj = obj
        self.validate = validate
        self.caches = caches if caches is not None else Caches()
        self.sink = sink
        self.pending = pending
        self.fields: Validation = fields or ("strict" if validate else "ignore")
        self.version = version
        self.known_fields = KNOWN[version]
        # Warnings given so far: the compiled slice builder reuses only what decoded
        # without one (a warning is given again at every place it applies to).
        self.warned = 0

    # ---------------------------------------------------------------- reporting

    def fail(self, path: str, message: str) -> NoReturn:
        raise InputError(self.obj, path, message)

    def warn(
        self, path: str, message: str, category: type[Warning] = DraspeedConversionWarning
    ) -> None:
        obj = printable(self.obj)
        text = f"{obj}: {printable(path)}: {message}" if path else f"{obj}: {message}"
        self.warned += 1
        if self.sink is not None:
            self.sink.append(text)
        if self.pending is not None:
            self.pending.append((text, category))
        else:
            warnings.warn(text, category, stacklevel=4)

    # ------------------------------------------------------------------ unknown fields

    def known(self, raw: Mapping[str, Any], path: str, struct: str) -> None:
        """Report the fields of ``raw`` (at ``path``) that ``struct`` does not have."""
        if self.fields == "ignore":
            return
        names = self.known_fields[struct]
        if raw.keys() <= names:
            return
        for key in raw:
            if key not in names:
                self.unknown(f"{path}.{key}" if path else str(key))

    def known_tree(self, value: Any, path: str, ref: str) -> None:
        """:meth:`known` for a part the decoders keep without reading (``ref``: a struct,
        ``[S]`` or ``{S}`` of :mod:`draspeed.api.fields`), all the way down."""
        if self.fields == "ignore":
            return
        schema = SCHEMAS[self.version]
        if all_known(value, schema, ref):
            return
        for found in unknown_fields(value, schema, ref, path):
            self.unknown(found)

    def unknown(self, path: str) -> None:
        """An unknown field: the API server's strict decoding error, or its warning."""
        if self.fields == "strict":
            self.fail(path, f'strict decoding error: unknown field "{path}"')
        self.warn("", f'unknown field "{path}"', DraspeedWarning)

    # ---------------------------------------------------------------- name checks

    def check(self, kind: str, value: str, checker: Callable[[str], str | None], path: str) -> None:
        """Run a name syntax check once per distinct value; raise on failure."""
        key = (kind, value)
        if key in self.caches.checked:
            return
        problem = checker(value)
        if problem is not None:
            self.fail(path, problem)
        self.caches.checked.add(key)

    # ---------------------------------------------------------------- typed readers

    def item(self, value: Any, path: str) -> Mapping[str, Any]:
        """A list item or map value that holds an object (a struct in Go, not a
        pointer): null decodes into the struct's zero value there, so it is read as an
        empty object and validated as the API server validates the zero object;
        anything but a mapping is an error at ``path``."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.fail(path, messages.wrong_type("object", value))
        return value

    def mapping(
        self, d: Mapping[str, Any], key: str, path: str, *, required: bool = False
    ) -> Mapping[str, Any] | None:
        value = d.get(key)
        if type(value) is dict:
            return value
        if value is None:
            if required:
                self.fail(child(path, key), messages.required())
            return None
        if not isinstance(value, Mapping):
            self.fail(child(path, key), messages.wrong_type("object", value))
        return value

    def array(self, d: Mapping[str, Any], key: str, path: str) -> list[Any] | None:
        value = d.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            self.fail(child(path, key), messages.wrong_type("array", value))
        return value

    def string(self, d: Mapping[str, Any], key: str, path: str, *, required: bool = False) -> str:
        value = d.get(key)
        if value is None:
            if required:
                self.fail(child(path, key), messages.required())
            return ""
        if not isinstance(value, str):
            self.fail(child(path, key), messages.wrong_type("string", value))
        return value

    def shared_string(
        self, d: Mapping[str, Any], key: str, path: str, *, required: bool = False
    ) -> str:
        """:meth:`string`, one str object per distinct value in a load (for fields that
        repeat across thousands of objects: each was a copy of its own)."""
        value = self.string(d, key, path, required=required)
        return self.caches.strings.setdefault(value, value)

    def opt_string(self, d: Mapping[str, Any], key: str, path: str) -> str | None:
        value = d.get(key)
        if value is None or isinstance(value, str):
            return value
        self.fail(child(path, key), messages.wrong_type("string", value))

    def opt_bool(self, d: Mapping[str, Any], key: str, path: str) -> bool | None:
        value = d.get(key)
        if value is None or isinstance(value, bool):
            return value
        self.fail(child(path, key), messages.wrong_type("boolean", value))

    def opt_int(self, d: Mapping[str, Any], key: str, path: str) -> int | None:
        value = d.get(key)
        if value is None:
            return None
        if type(value) is int and limits.INT64_MIN <= value <= limits.INT64_MAX:
            return value
        return self.int64(value, child(path, key))

    def int64(self, value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            # Go accepts a JSON number with a zero fraction for an integer field only
            # when it is written without one; YAML "2.0" is a float and refused likewise.
            self.fail(path, messages.wrong_type("integer", value))
        if not limits.INT64_MIN <= value <= limits.INT64_MAX:
            self.fail(path, messages.invalid(value, "out of the range of a 64-bit integer"))
        return value

    def string_list(self, d: Mapping[str, Any], key: str, path: str) -> list[str]:
        values = self.array(d, key, path)
        if not values:
            return []
        for i, v in enumerate(values):
            if not isinstance(v, str) and v is not None:
                self.fail(f"{child(path, key)}[{i}]", messages.wrong_type("string", v))
        # (Go decodes null into a list's string as the empty string.)
        return ["" if v is None else v for v in values]

    def quantity(self, value: Any, path: str) -> Quantity:
        """A resource.Quantity field: a string, or a bare JSON/YAML number as Go accepts."""
        cache = self.caches.quantities
        if value is None:  # a Quantity value (not a pointer): Go decodes null as zero
            return ZERO_QUANTITY
        if type(value) is str:
            found = cache.get(value)
            if found is not None:
                return found
            text = value
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(path, messages.wrong_type("quantity string", value))
        elif type(value) is NumberText:
            text = value.text  # Go reads the quantity from the number as written
        else:
            text = repr(value) if isinstance(value, float) else str(value)
        try:
            # (Quantity.UnmarshalJSON trims a string's surrounding space as JSON has it.)
            q = Quantity.from_json(text) if type(value) is str else Quantity.parse(text)
        except QuantityError as exc:
            self.fail(path, str(exc))
        if type(value) is str:
            cache[value] = q
        return q

    def opt_quantity(self, d: Mapping[str, Any], key: str, path: str) -> Quantity | None:
        value = d.get(key)
        if value is None:
            return None
        return self.quantity(value, child(path, key))

    def timestamp(self, d: Mapping[str, Any], key: str, path: str) -> str | None:
        """A metav1.Time: kept as its RFC 3339 text (YAML may have parsed it already)."""
        value = d.get(key)
        if value is None or isinstance(value, str):
            return value
        isoformat = getattr(value, "isoformat", None)
        if isoformat is None:
            self.fail(child(path, key), messages.wrong_type("RFC 3339 timestamp", value))
        text: str = isoformat()
        return text.replace("+00:00", "Z")
