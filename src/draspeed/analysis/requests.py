"""What pod shapes ask for, flattened once: alternatives, classes, selectors, constraints.

Capacity analysis reads the same few facts of a shape many times (which selectors
decide a device's eligibility, how many devices a request takes, which attributes
constraints compare). :class:`ShapeRequests` reads them once per shape, with the
selectors of the DeviceClasses resolved, and :class:`SelectorVerdicts` evaluates
every expression involved once per distinct device, with the vector path of
:mod:`draspeed.cel` that the engine uses (a device on which a selector errors is
marked as an error, as the allocator would report it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from draspeed.api._model_tree import signature
from draspeed.errors import CELCompileError
from draspeed.explain.alternatives import Alternative, claim_alternatives

if TYPE_CHECKING:
    from draspeed.analysis.shapes import PodShape
    from draspeed.api.model import Device, DeviceClass
    from draspeed.features import Features

FALSE, TRUE, ERROR = 0, 1, 2


@dataclass(slots=True)
class AlternativeSpec:
    """One request (or one firstAvailable alternative) of one claim of a shape."""

    alternative: Alternative
    expressions: list[int]  # indices into SelectorVerdicts.expressions (class's, then own)
    # Why the allocator cannot take any device for it whatever the node (no such class,
    # a selector of a kind this version does not know, a compile error), or None.
    broken: str | None = None


@dataclass(slots=True)
class ShapeRequests:
    """A shape's claims, each a list of requests, each a list of alternatives."""

    name: str
    claims: list[list[list[AlternativeSpec]]]
    # Per claim: (requests named, matchAttribute or None, distinctAttribute or None).
    constraints: list[list[tuple[list[str], str | None, str | None]]] = field(default_factory=list)

    @property
    def alternatives(self) -> list[AlternativeSpec]:
        return [a for claim in self.claims for request in claim for a in request]

    def class_of(self, claim: int, request_name: str) -> str:
        """The DeviceClass a result's ``request`` (``req`` or ``req/sub``) was allocated
        from."""
        for request in self.claims[claim]:
            for a in request:
                if a.alternative.name == request_name:
                    return a.alternative.class_name
        return ""


class SelectorVerdicts:
    """Every selector expression of some shapes, evaluated once per distinct device.

    Usage::

        verdicts = SelectorVerdicts(classes, shapes, features)
        table = verdicts.evaluate([(driver, device), ...])   # (devices, expressions)
        verdicts.shapes[0].claims[0][0][0].expressions       # columns of one request
    """

    def __init__(
        self,
        classes: Mapping[str, DeviceClass],
        shapes: Sequence[PodShape],
        features: Features,
    ) -> None:
        self.features = features
        self.expressions: list[str] = []
        self._index: dict[str, int] = {}
        self.compile_errors: dict[int, str] = {}
        # The selectors of each DeviceClass the shapes name (None: no such class, or
        # a selector of a kind this version does not know).
        self.class_expressions: dict[str, list[int] | None] = {}
        self.shapes = [self._read(shape, classes) for shape in shapes]
        self._compiled: list[Any] = []
        for k, expression in enumerate(self.expressions):
            from draspeed.cel import compile_selector

            try:
                self._compiled.append(compile_selector(expression))
            except CELCompileError as exc:
                self._compiled.append(None)
                self.compile_errors[k] = str(exc)
        # What the expressions read of a device (None: the whole device).
        self._reads = self._what_is_read()
        # Kinds that always convert to CEL values: other attributes (versions, unset
        # values) can make every selector fail on a device, so they count as read.
        self._plain_kinds = {"int", "bool", "string"}
        if features.list_type_attributes:
            self._plain_kinds |= {"ints", "bools", "strings"}
        # Row k of the table: the verdicts of the k-th distinct key (what is read of
        # a device); devices seen, by id, to their key's number.
        self._keys: dict[Any, int] = {}
        self._by_id: dict[tuple[str, int], int] = {}
        self._keep: list[Device] = []
        self._table = np.zeros((0, len(self.expressions)), dtype=np.uint8)

    def _expression(self, text: str) -> int:
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.expressions)
            self.expressions.append(text)
        return found

    def _read(self, shape: PodShape, classes: Mapping[str, DeviceClass]) -> ShapeRequests:
        claims: list[list[list[AlternativeSpec]]] = []
        for requests in claim_alternatives(shape.claims):
            claims.append([[self._spec(a, classes) for a in alts] for alts in requests])
        constraints = [
            [
                (list(c.requests), c.match_attribute, c.distinct_attribute)
                for c in claim.spec.devices.constraints
            ]
            for claim in shape.claims
        ]
        return ShapeRequests(shape.name, claims, constraints)

    def _spec(self, alt: Alternative, classes: Mapping[str, DeviceClass]) -> AlternativeSpec:
        device_class = classes.get(alt.class_name)
        if alt.class_name not in self.class_expressions:
            selectors = [] if device_class is None else device_class.spec.selectors
            self.class_expressions[alt.class_name] = (
                None
                if device_class is None or any(s.cel is None for s in selectors)
                else [self._expression(s.cel.expression) for s in selectors if s.cel is not None]
            )
        if device_class is None:
            return AlternativeSpec(alt, [], f"device class {alt.class_name} does not exist")
        expressions = []
        for selector in [*device_class.spec.selectors, *alt.selectors]:
            if selector.cel is None:
                return AlternativeSpec(alt, [], "a selector of a kind this version does not know")
            expressions.append(self._expression(selector.cel.expression))
        return AlternativeSpec(alt, expressions)

    def broken(self, spec: AlternativeSpec) -> str | None:
        """Why no device can serve ``spec`` on any node, or None."""
        if spec.broken is not None:
            return spec.broken
        for k in spec.expressions:
            if k in self.compile_errors:
                return self.compile_errors[k]
        return None

    def evaluate(self, devices: Sequence[tuple[str, Device]]) -> np.ndarray:
        """Verdicts (FALSE, TRUE, ERROR) of every expression for ``devices``: one row
        per device, one column per expression."""
        if not self.expressions:
            return np.zeros((len(devices), 0), dtype=np.uint8)
        keys = np.asarray(self.keys(devices), dtype=np.int64)  # may grow the table
        return self._table[keys]

    def keys(self, devices: Sequence[tuple[str, Device]]) -> list[int]:
        """Per device, the number of what decides its verdicts (equal numbers: equal
        verdicts, row ``k`` of the table)."""
        by_id = self._by_id
        keys: list[int] = []
        new: dict[int, tuple[str, Device]] = {}
        for driver, device in devices:
            k = by_id.get((driver, id(device)))
            if k is None:
                # Devices are read once: the key becomes a number, hashed once however
                # often the device comes back.
                k = self._keys.setdefault(self.key(driver, device), len(self._keys))
                by_id[(driver, id(device))] = k
                self._keep.append(device)  # keeps its id meaningful
                if k >= len(self._table) and k not in new:
                    new[k] = (driver, device)
            keys.append(k)
        if new and self.expressions:
            self._add(sorted(new.items()))
        return keys

    def verdict_row(self, key: int) -> bytes:
        """The verdicts of a key (as :meth:`keys` numbers them), as bytes."""
        return self._table[key].tobytes() if self.expressions else b""

    def _what_is_read(self) -> list[tuple[str, ...]] | None:
        from draspeed.cel.vector import analyze_reads

        reads: set[tuple[str, ...]] = set()
        for compiled in self._compiled:
            if compiled is not None:
                reads |= analyze_reads(compiled.ast)
        return None if ("device",) in reads else sorted(reads)

    def key(self, driver: str, device: Device) -> Any:
        """What decides every verdict for a device (equal keys, equal verdicts)."""
        parts = self.parts(driver, device)
        # The compiled model-tree signature: equal bytes for equal values, fast to hash.
        return (driver, id(device)) if parts is None else signature(parts)

    def parts(self, driver: str, device: Device) -> list[Any] | None:
        """The values the expressions read of a device, and the attributes whose
        conversion can fail (they make every selector fail); None when the whole device
        is read."""
        reads = self._reads
        if reads is None:
            return None
        attrs = device.attributes
        parts: list[Any] = [driver, bool(device.allow_multiple_allocations)]
        for read in reads:
            kind = read[0]
            if kind in ("attr", "attr_present"):
                found = attrs.get(f"{read[1]}/{read[2]}")
                if found is None and read[1] == driver:
                    found = attrs.get(read[2])
                parts.append(found)
            elif kind in ("attr_domain", "attr_presence"):
                parts.append(_domain(attrs, read[1], driver))
            elif kind in ("cap", "cap_present"):
                cap = device.capacity.get(f"{read[1]}/{read[2]}")
                if cap is None and read[1] == driver:
                    cap = device.capacity.get(read[2])
                parts.append(None if cap is None else cap.value)
            elif kind == "cap_domain":
                parts.append([[k, c.value] for k, c in _domain(device.capacity, read[1], driver)])
            elif kind in ("attr_keys", "attr_domains"):
                parts.append(list(attrs))  # every name, in order: more than is read
            elif kind in ("cap_keys", "cap_domains"):
                parts.append(list(device.capacity))
        plain = self._plain_kinds
        for name, attribute in attrs.items():
            if attribute.kind not in plain:
                parts.append(name)
                parts.append(attribute)
        return parts

    def _add(self, items: list[tuple[int, tuple[str, Device]]]) -> None:
        """Evaluate the new keys (numbered from the table's length on, in order)."""
        from draspeed.cel import DeviceTable

        assert [k for k, _ in items] == list(range(len(self._table), len(self._table) + len(items)))
        table = DeviceTable.build(
            [item for _, item in items],
            list_type_attributes=self.features.list_type_attributes,
            # The allocator hands CEL the device's real value whatever the gate says.
            consumable_capacity=True,
        )
        block = np.zeros((len(items), len(self.expressions)), dtype=np.uint8)
        for k, compiled in enumerate(self._compiled):
            if compiled is None:
                block[:, k] = ERROR
                continue
            match, error, _ = compiled.evaluate(table)
            column = np.where(np.asarray(match, dtype=bool), TRUE, FALSE).astype(np.uint8)
            column[np.asarray(error, dtype=bool)] = ERROR
            block[:, k] = column
        self._table = np.concatenate([self._table, block]) if len(self._table) else block


def _domain(mapping: Mapping[str, Any], domain: str, driver: str) -> list[Any]:
    """The entries of one domain of a device's attributes or capacities (bare names
    are in the driver's domain), in name order."""
    prefix = domain + "/"
    return [
        [k, mapping[k]]
        for k in sorted(mapping)
        if k.startswith(prefix) or ("/" not in k and domain == driver)
    ]


def members(verdicts: np.ndarray, expressions: list[int] | None) -> np.ndarray:
    """Devices (rows) every one of these selectors accepts (None: no device)."""
    if expressions is None:
        return np.zeros(len(verdicts), dtype=bool)
    return np.all(verdicts[:, expressions] == TRUE, axis=1)


def eligible(verdicts: np.ndarray, spec: AlternativeSpec) -> np.ndarray:
    """Devices (rows of ``verdicts``) every selector of ``spec`` accepts."""
    if spec.broken is not None:
        return np.zeros(len(verdicts), dtype=bool)
    if not spec.expressions:
        return np.ones(len(verdicts), dtype=bool)
    return np.all(verdicts[:, spec.expressions] == TRUE, axis=1)


def erring(verdicts: np.ndarray, spec: AlternativeSpec) -> np.ndarray:
    """Devices on which the allocator would stop with a selector error for ``spec``:
    selectors are evaluated in order (the class's, then the request's), and the first
    false one ends the evaluation, so an error counts only after true ones."""
    if spec.broken is not None or not spec.expressions:
        return np.zeros(len(verdicts), dtype=bool)
    columns = verdicts[:, spec.expressions]
    first = np.argmax(columns != TRUE, axis=1)  # the first selector not true (0 if all are)
    stopped = columns[np.arange(len(columns)), first]
    return stopped == ERROR
