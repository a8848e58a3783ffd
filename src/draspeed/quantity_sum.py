"""Exact sums of quantities, compared without writing out digits no answer needs.

Upstream adds quantities with ``inf.Dec``: ``1e999999 + 1Gi`` is a number of a million
digits, which Go writes out (0.15 s), and ``1e2147483647 + 1`` one it never finishes.
Which of two sums is larger never needs those digits: a sum is held here as *clusters*,
each an exact ``coef * 10**exp``, any two of them more than ``GAP`` digits apart, so the
highest non-zero cluster alone decides the sum's sign. Values within ``GAP`` digits of
each other are added exactly, as Python ints, so ordinary quantities make one cluster
of a few digits.

Hand-written rather than ``decimal``: its contexts round to a fixed precision, and an
exact context would write the digits out as inf.Dec does.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from draspeed.errors import QuantityError
from draspeed.quantity import MAX_EXPONENT_DIGITS, Quantity

__all__ = ["QuantitySum"]

#: Clusters further apart than this many digits are kept apart. Any fewer than
#: ``10**GAP`` clusters below one sum to less than one unit of it.
GAP = 40

_ZERO = Quantity.from_int(0)
_HASH_MODULUS = sys.hash_info.modulus

# Nano units per unit, as a power of ten.
_NANO_DIGITS = 9

_Cluster = tuple[int, int]  # (coef, exp): coef * 10**exp, coef != 0


def _top(coef: int, exp: int) -> int:
    """An exponent t with ``|coef| * 10**exp < 10**t`` (from the bit length: it may
    exceed the least such t by one, which only merges clusters a little sooner)."""
    return exp + (abs(coef).bit_length() * 30103) // 100000 + 1


def _merge(low: _Cluster, high: _Cluster) -> _Cluster:
    """``low + high`` as one cluster (``low``'s exponent is the smaller)."""
    return high[0] * 10 ** (high[1] - low[1]) + low[0], low[1]


def _normal(clusters: Iterable[_Cluster]) -> tuple[_Cluster, ...]:
    """Clusters sorted by exponent, those within ``GAP`` digits added, zeros dropped."""
    out: list[_Cluster] = []
    for cluster in sorted(clusters, key=lambda c: c[1]):
        if out and cluster[1] - _top(*out[-1]) <= GAP:
            cluster = _merge(out.pop(), cluster)
            if cluster[0] == 0:
                continue
        out.append(cluster)
    # A merge whose digits cancelled may leave a cluster farther from the next than
    # GAP, never nearer: the order and the separation hold.
    return tuple(out)


def _sign(clusters: tuple[_Cluster, ...]) -> int:
    if not clusters:
        return 0
    return 1 if clusters[-1][0] > 0 else -1


class QuantitySum:
    """The exact sum of some quantities (upstream's running ``Add``), immutable.

    :meth:`cmp` is exact for any exponents; :meth:`quantity` is the sum as upstream's
    running ``Add`` holds it (its format and scale), refused where that needs more
    digits than draspeed writes out, as :meth:`Quantity.add` is.
    """

    __slots__ = ("_clusters", "_written")

    _clusters: tuple[_Cluster, ...]
    # The running Add of the terms so far: None before the first, the QuantityError
    # once it needed more digits than draspeed writes out.
    _written: Quantity | QuantityError | None

    def __init__(self, terms: Iterable[Quantity] = ()) -> None:
        self._clusters = ()
        self._written = None
        for q in terms:
            self._clusters, self._written = self._plus(q)

    def _plus(self, q: Quantity) -> tuple[tuple[_Cluster, ...], Quantity | QuantityError | None]:
        clusters = _normal((*self._clusters, q.decimal)) if q.sign() else self._clusters
        written = self._written
        if written is None:
            return clusters, q
        if isinstance(written, Quantity):
            try:
                return clusters, written.add(q)
            except QuantityError as exc:
                return clusters, exc
        return clusters, written

    def add(self, other: Quantity | QuantitySum) -> QuantitySum:
        """This sum plus ``other``, a new sum."""
        made = object.__new__(QuantitySum)
        if isinstance(other, QuantitySum):
            made._clusters = _normal(self._clusters + other._clusters)
            mine, theirs = self._written, other._written
            if mine is None or theirs is None:
                made._written = theirs if mine is None else mine
            elif isinstance(mine, Quantity) and isinstance(theirs, Quantity):
                try:
                    made._written = mine.add(theirs)
                except QuantityError as exc:
                    made._written = exc
            else:
                made._written = mine if isinstance(mine, QuantityError) else theirs
        else:
            made._clusters, made._written = self._plus(other)
        return made

    def neg(self) -> QuantitySum:
        """Minus this sum, a new sum (upstream's ``Neg`` of the running ``Add``)."""
        made = object.__new__(QuantitySum)
        made._clusters = tuple((-coef, exp) for coef, exp in self._clusters)
        written = self._written
        made._written = written.neg() if isinstance(written, Quantity) else written
        return made

    def cmp(self, other: Quantity | QuantitySum) -> int:
        """-1, 0 or 1 as this sum is below, equal to or above ``other``, exactly."""
        if isinstance(other, QuantitySum):
            theirs = other._clusters
        else:
            theirs = (other.decimal,) if other.sign() else ()
        negated = tuple((-coef, exp) for coef, exp in theirs)
        return _sign(_normal(self._clusters + negated))

    def sign(self) -> int:
        """-1, 0 or 1."""
        return _sign(self._clusters)

    def nanos_below(self, digits: int) -> int | None:
        """The sum in nano units if its magnitude is below ``10**digits``, else None
        (as :meth:`Quantity.nanos_below`), without writing out a larger one."""
        if not self._clusters:
            return 0
        if self._clusters[-1][1] + _NANO_DIGITS > digits:
            return None  # the top cluster alone is at least 10**(digits+1) nanos
        # (Every quantity is whole nanos: no exponent is below -9.)
        nanos = sum(coef * 10 ** (exp + _NANO_DIGITS) for coef, exp in self._clusters)
        return nanos if _top(nanos, 0) <= digits or abs(nanos) < 10**digits else None

    @property
    def nanos(self) -> int:
        """The exact sum in nano units (as :attr:`Quantity.nanos`: refused beyond
        draspeed's limit)."""
        found = self.nanos_below(MAX_EXPONENT_DIGITS)
        if found is None:
            raise QuantityError(
                f"a sum of quantities beyond draspeed's limit of 10^{MAX_EXPONENT_DIGITS}"
            )
        return found

    def quantity(self) -> Quantity:
        """The sum as upstream's running ``Add`` holds it; raises
        :class:`~draspeed.errors.QuantityError` where that needs more digits than
        draspeed writes out."""
        written = self._written
        if written is None:
            return _ZERO
        if isinstance(written, Quantity):
            return written
        raise QuantityError(str(written))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Quantity, QuantitySum)):
            return self.cmp(other) == 0
        return NotImplemented

    def __hash__(self) -> int:
        # Python's numeric hash of the value, as Quantity's: a sum hashes like an equal
        # quantity. The residue of each cluster, without writing out 10**exp.
        sign = self.sign()
        if not sign:
            return 0
        residue = sum(coef * pow(10, exp, _HASH_MODULUS) for coef, exp in self._clusters)
        found = sign * (sign * residue % _HASH_MODULUS)
        return -2 if found == -1 else found

    def __str__(self) -> str:
        if isinstance(self._written, QuantityError):
            coef, exp = self._clusters[-1]
            return f"{'-' if coef < 0 else ''}about 10^{_top(coef, exp)} (beyond the exact range)"
        return str(self.quantity())

    def __repr__(self) -> str:
        if isinstance(self._written, QuantityError):
            return f"QuantitySum(<{len(self._clusters)} clusters beyond the exact range>)"
        return f"QuantitySum([{str(self.quantity())!r}])"
