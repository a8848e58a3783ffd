"""Pod shapes: the claims one pod brings, and the order a mix of shapes is tried in.

A :class:`PodShape` is a name and one or more claim prototypes (the specs of a
pod's ResourceClaims). Each pod placed gets fresh claims with names of its own,
made the way the claim controller makes them from a ResourceClaimTemplate.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

from draspeed import arguments
from draspeed.api.model import ObjectMeta, ResourceClaim, ResourceClaimTemplate

# What fit() and the scenarios accept as "a shape".
ShapeSource = Union["PodShape", ResourceClaimTemplate, ResourceClaim, Mapping[str, Any]]


@dataclass(frozen=True)
class PodShape:
    """One pod's claims: ``claims`` are prototypes (their names do not matter)."""

    name: str
    claims: tuple[ResourceClaim, ...]

    def __post_init__(self) -> None:
        arguments.text(self.name, "name", "a shape name")
        claims = arguments.items_of(self.claims, ResourceClaim, "claims", "a ResourceClaim")
        object.__setattr__(self, "claims", tuple(claims))
        if not self.claims:
            raise ValueError(f"pod shape {self.name!r} has no claims")

    def instantiate(self, pod: int) -> list[ResourceClaim]:
        """The pending claims of pod number ``pod`` of this shape (unique names)."""
        single = len(self.claims) == 1
        out = []
        for k, proto in enumerate(self.claims):
            name = f"capacity-{self.name}-{pod}" + ("" if single else f"-{k}")
            out.append(
                ResourceClaim(
                    metadata=ObjectMeta(name=name, namespace=proto.metadata.namespace or "default"),
                    spec=proto.spec,
                    api_version=proto.api_version,
                )
            )
        return out

    @classmethod
    def of(cls, source: ShapeSource, name: str = "source") -> PodShape:
        """A one-claim shape from a template, a claim, or a YAML/JSON-shaped object
        (``name``: the argument a wrong type is told of)."""
        if isinstance(source, PodShape):
            return source
        if isinstance(source, Mapping):
            from draspeed.api.loader import load

            objects = load(dict(source))
            decoded: list[ResourceClaimTemplate | ResourceClaim] = [
                *objects.templates,
                *objects.claims,
            ]
            if len(decoded) != 1:
                raise ValueError(
                    "a shape object must be one ResourceClaimTemplate or ResourceClaim"
                )
            return cls.of(decoded[0])
        if isinstance(source, ResourceClaimTemplate):
            proto = ResourceClaim(
                metadata=ObjectMeta(
                    name=source.metadata.name, namespace=source.metadata.namespace or "default"
                ),
                spec=source.spec,
            )
            return cls(source.metadata.name, (proto,))
        if isinstance(source, ResourceClaim):
            return cls(source.metadata.name, (source,))
        raise TypeError(f"{name}: expected {_SHAPE}, got {arguments.type_name(source)}")


_SHAPE = "a ResourceClaimTemplate, ResourceClaim, PodShape or mapping"


def as_shapes(templates: ShapeSource | Sequence[ShapeSource]) -> list[PodShape]:
    """One shape per item; names made unique (``name``, ``name-2``, ...) in input order."""
    items: Sequence[ShapeSource]
    if isinstance(templates, (PodShape, ResourceClaimTemplate, ResourceClaim, Mapping)):
        items = [templates]
    elif isinstance(templates, (str, bytes, bytearray)) or not isinstance(templates, Iterable):
        raise TypeError(
            f"templates: expected {_SHAPE} (a sequence of them), "
            f"got {arguments.type_name(templates)}"
        )
    else:
        items = list(templates)
    if not items:
        raise ValueError("templates: no pod shapes given")
    shapes = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        shape = PodShape.of(item, f"templates[{i}]")
        count = seen.get(shape.name, 0) + 1
        seen[shape.name] = count
        if count > 1:
            shape = PodShape(f"{shape.name}-{count}", shape.claims)
        shapes.append(shape)
    return shapes


def normalise_ratios(
    shapes: Sequence[PodShape], ratios: Mapping[str, float] | Sequence[float] | None
) -> list[float]:
    """Weights per shape (shape order): all 1 by default; by name (shapes not named
    weigh 1) or by position."""
    if ratios is None:
        return [1.0] * len(shapes)
    if isinstance(ratios, Mapping):
        unknown = set(ratios) - {s.name for s in shapes}
        if unknown:
            raise ValueError(f"ratios name unknown shapes: {', '.join(sorted(map(str, unknown)))}")
        named = [(f"ratios[{s.name!r}]", ratios.get(s.name, 1.0)) for s in shapes]
    elif isinstance(ratios, (str, bytes, bytearray)) or not isinstance(ratios, Iterable):
        raise TypeError(
            "ratios: expected weights by shape name (a mapping) or by position (a sequence), "
            f"got {arguments.type_name(ratios)}"
        )
    else:
        named = [(f"ratios[{i}]", w) for i, w in enumerate(ratios)]
        if len(named) != len(shapes):
            raise ValueError(f"{len(named)} ratios for {len(shapes)} shapes")
    weights = [_weight(w, where) for where, w in named]
    if not any(w > 0 for w in weights):
        raise ValueError("ratios must be non-negative with at least one positive")
    return weights


def _weight(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a number, got {arguments.type_name(value)}")
    try:
        weight = float(value)
    except OverflowError:  # an int beyond any float
        weight = math.inf
    if not (math.isfinite(weight) and weight >= 0):
        raise ValueError(f"{name}: expected a finite number >= 0, got {value!r}")
    return weight


class ShapeOrder:
    """Which shape the next pod has: smooth weighted round-robin over the shapes
    still placeable (deterministic; weights 3:1 give a a b a a a b a ...)."""

    def __init__(self, weights: Sequence[float]) -> None:
        self.weights = list(weights)
        self.alive = [w > 0 for w in self.weights]
        self._current = [0.0] * len(self.weights)

    def retire(self, shape: int) -> None:
        """The shape fits nowhere any more: later picks skip it."""
        self.alive[shape] = False

    def __iter__(self) -> Iterator[int]:
        while any(self.alive):
            total = 0.0
            best = -1
            for i, w in enumerate(self.weights):
                if not self.alive[i]:
                    continue
                total += w
                self._current[i] += w
                if best < 0 or self._current[i] > self._current[best]:
                    best = i
            self._current[best] -= total
            yield best
