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
from draspeed.quantity import (
    DECIMAL_SI,
    ERR_NOT_INTEGER,
    MAX_EXPONENT_DIGITS,
    Quantity,
    decimal_digits,
)

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

    :meth:`cmp` is exact for any exponents. While the running ``Add`` can be written
    out, :meth:`quantity` is it (its format and scale); past that, the sum keeps what
    upstream's ``inf.Dec`` would hold besides the digits (the format, the scale), which
    CEL's quantity methods read (:meth:`settled`, :meth:`is_integer`,
    :meth:`as_approximate_float`).
    """

    __slots__ = ("_clusters", "_format", "_go_scale", "_written")

    _clusters: tuple[_Cluster, ...]
    # The running Add of the terms so far, while it can be written out (None before
    # the first term, and past the limit).
    _written: Quantity | None
    # Past the limit (``_written`` None, some term added): upstream's format and its
    # inf.Dec scale (as a power of ten); else unused.
    _format: str
    _go_scale: int | None

    def __init__(self, terms: Iterable[Quantity] = ()) -> None:
        self._clusters = ()
        self._written = None
        self._format = ""
        self._go_scale = None
        for q in terms:
            self._set(self._plus(q.decimal, q, q.format, q.go_scale))

    def _set(self, state: tuple[tuple[_Cluster, ...], Quantity | None, str, int | None]) -> None:
        self._clusters, self._written, self._format, self._go_scale = state

    def _plus(
        self, decimal: _Cluster, written: Quantity | None, fmt: str, go_scale: int | None
    ) -> tuple[tuple[_Cluster, ...], Quantity | None, str, int | None]:
        """The state after adding a value: ``decimal`` (its exact value), ``written``
        (it as a Quantity, if it is one), ``fmt`` and ``go_scale``."""
        clusters = _normal((*self._clusters, decimal)) if decimal[0] else self._clusters
        mine = self._written
        if mine is None and self._go_scale is None:  # the first term
            return clusters, written, fmt, go_scale
        if mine is not None and written is not None:
            try:
                return clusters, mine.add(written), "", None
            except QuantityError:
                pass
        # inf.Dec from here on: Add keeps the larger inf scale (the smaller unit), and
        # the format of the sum so far unless that is zero.
        mine_scale = mine.go_scale if mine is not None else self._go_scale
        assert mine_scale is not None and go_scale is not None
        mine_format = mine.format if mine is not None else self._format
        return clusters, None, mine_format if self._clusters else fmt, min(mine_scale, go_scale)

    def add(self, other: Quantity | QuantitySum) -> QuantitySum:
        """This sum plus ``other``, a new sum."""
        made = object.__new__(QuantitySum)
        if isinstance(other, QuantitySum):
            if other._written is None and other._go_scale is None:
                return self
            written = other._written
            fmt, go_scale = (
                (written.format, written.go_scale)
                if written is not None
                else (other._format, other._go_scale)
            )
            # (Its clusters are added below, all of them.)
            made._set(self._plus((0, 0), written, fmt, go_scale))
            made._clusters = _normal(self._clusters + other._clusters)
        else:
            made._set(self._plus(other.decimal, other, other.format, other.go_scale))
        return made

    def neg(self) -> QuantitySum:
        """Minus this sum, a new sum (upstream's ``Neg`` of the running ``Add``)."""
        made = object.__new__(QuantitySum)
        made._clusters = tuple((-coef, exp) for coef, exp in self._clusters)
        made._written = None if self._written is None else self._written.neg()
        made._format, made._go_scale = self._format, self._go_scale
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

    def magnitude_bound(self) -> int:
        """An exponent e with ``|sum| < 10**e`` (not necessarily the least)."""
        if not self._clusters:
            return 0
        return _top(*self._clusters[-1]) + 1

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
        settled = self.settled()
        if isinstance(settled, Quantity):
            return settled
        top, low = self._clusters[-1], self._clusters[0]
        raise QuantityError(
            f"quantity needs 10^{_top(*top) - low[1]}, beyond draspeed's limit of "
            f"10^{MAX_EXPONENT_DIGITS}"
        )

    def settled(self) -> Quantity | QuantitySum:
        """The sum as a Quantity where one holds it without writing it out (written
        out, or one cluster: upstream's inf.Dec of that value), else this sum."""
        if self._written is not None:
            return self._written
        if self._go_scale is None:
            return _ZERO
        if len(self._clusters) > 1:
            return self
        coef, exp = self._clusters[0] if self._clusters else (0, 0)
        return Quantity.from_inf_dec(coef, exp, self._go_scale, self._format)

    # CEL's quantity methods on a sum that no Quantity holds: upstream's inf.Dec of
    # more than 10^100000 digits.

    def is_integer(self) -> bool:
        """``isInteger()``: Go's AsInt64, which refuses every inf.Dec."""
        settled = self.settled()
        return isinstance(settled, Quantity) and settled.is_integer()

    def as_integer(self) -> int:
        """``asInteger()``; raises QuantityError("cannot convert value to integer")."""
        settled = self.settled()
        if isinstance(settled, Quantity):
            return settled.as_integer()
        raise QuantityError(ERR_NOT_INTEGER)

    def as_approximate_float(self) -> float:
        """``AsApproximateFloat64()``: an unscaled integer of more than 10^100000
        digits is an infinite float64 (times 10^scale, at least 1e-9: still infinite)."""
        settled = self.settled()
        if isinstance(settled, Quantity):
            return settled.as_approximate_float()
        return float("inf") if self.sign() > 0 else float("-inf")

    def exact_text(self) -> str:
        """The sum as quantity text that parses back to it: upstream's ``String()`` of it
        where that does, else the exact value as ``<digits>e<exp>`` (what a harness
        that reads the sum needs). Clusters of one sign are laid side by side with
        the zeros between them; mixed signs are refused (no committed consumption is
        negative)."""
        if self._written is not None or self._go_scale is None:
            written = self.quantity()
            text = str(written)
            if Quantity.parse(text) == written:
                return text
            # (A BinarySI text beyond int64 parses capped at 2^63-1: written in decimal.)
            coef, exp = written.decimal
            return f"{'-' if coef < 0 else ''}{decimal_digits(abs(coef))}e{exp}"
        if len({coef > 0 for coef, _ in self._clusters}) > 1:
            raise QuantityError("a sum of both signs beyond the exact range has no short text")
        parts: list[str] = []
        last = 0  # the exponent of the last digit written so far
        for coef, exp in reversed(self._clusters):
            digits = decimal_digits(abs(coef))
            if parts:
                parts.append("0" * (last - exp - len(digits)))
            parts.append(digits)
            last = exp
        sign = "-" if self._clusters[0][0] < 0 else ""
        return f"{sign}{''.join(parts)}e{last}" if last else sign + "".join(parts)

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
        settled = self.settled()
        if isinstance(settled, Quantity):
            return str(settled)
        # The exact value as its clusters, highest first ("1e999999 - 1").
        text = ""
        for cluster in reversed(self._clusters):
            coef, exp = Quantity.from_inf_dec(*cluster, 0, DECIMAL_SI).decimal  # (tens out)
            term = f"{decimal_digits(abs(coef))}e{exp}" if exp else decimal_digits(abs(coef))
            if text:
                text += f" {'-' if coef < 0 else '+'} {term}"
            else:
                text = f"-{term}" if coef < 0 else term
        return text

    def __repr__(self) -> str:
        return f"QuantitySum({str(self)!r})"
