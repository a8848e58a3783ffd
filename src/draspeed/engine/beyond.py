"""Quantities beyond the fast engine's exact range, and the stand-ins that keep its
comparisons exact.

The compiled search compares sums of whole nano units (counters against what devices
consume, shared capacity against what requests take). Such a value is an exact
integer, but a quantity like ``1e999999`` would need a million digits, and
materialising ``1e2147483647`` is impossible (upstream's allocator spends 0.15 s on the
first and never finishes the second). Yet the answer rarely needs the digits: a
counter of ``1e999999`` is larger than anything a cluster's devices consume.

So a value of ``10**EXACT_DIGITS`` nano units or more stands in as ``±STAND_IN``, a
number larger than any sum of fewer than ``10**40`` exact values: every comparison
between one such value and sums of exact ones is decided as with the true value, and so
is one between a value and sums of that same value (a device consumed whole). Where
both sides hold different ones (a huge counter consumed in other huge amounts), the
stand-ins could decide wrongly, and :func:`one_side` refuses instead; the allocator
then answers with the reference engine, which compares quantities themselves.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from draspeed.errors import QuantityError
from draspeed.quantity import MAX_EXPONENT_DIGITS, Quantity
from draspeed.quantity_sum import QuantitySum

#: Exact below ``10**EXACT_DIGITS`` nano units.
EXACT_DIGITS = MAX_EXPONENT_DIGITS


@functools.cache
def stand_in() -> int:
    """The magnitude that stands in for every value beyond the exact range (made once:
    a number of 100,040 digits)."""
    return 10 ** (EXACT_DIGITS + 40)


def nanos(q: Quantity | QuantitySum) -> int:
    """``q`` in nano units: exact, or ``±stand_in()`` beyond the exact range."""
    found = q.nanos_below(EXACT_DIGITS)
    if found is not None:
        return found
    return stand_in() if q.sign() > 0 else -stand_in()


def is_stand_in(value: int) -> bool:
    """Whether ``value`` (one quantity's nanos, not a sum) is a stand-in."""
    return abs(value) == stand_in()  # (ints of different sizes compare at once)


def one_side(
    capacity: Iterable[tuple[int, Quantity | QuantitySum]],
    used: Iterable[tuple[int, Quantity | QuantitySum]],
    what: str,
) -> None:
    """Refuse a comparison that stand-ins could decide wrongly. ``capacity`` and ``used``
    are (nanos, quantity) pairs: what is available and what is taken of it. Exact:
    stand-ins on one side only, of one sign among the uses; or one value on both sides
    (a device consumed whole: ``k`` times a value plus exact ones against that value is
    decided by ``k`` and the exact sum alone)."""
    huge_capacity = {q for v, q in capacity if is_stand_in(v)}
    huge_used = {q for v, q in used if is_stand_in(v)}
    if huge_capacity and huge_used:
        if len(huge_capacity | huge_used) > 1:
            raise _beyond(what, "on both sides of a comparison")
    elif len({q.sign() for q in huge_used}) > 1:
        raise _beyond(what, "of both signs in one sum")


class BeyondExactRange(QuantityError):
    """Stand-ins cannot decide a comparison: the allocator asks the reference engine,
    which compares the quantities themselves."""


def _beyond(what: str, where: str) -> BeyondExactRange:
    return BeyondExactRange(
        f"{what}: quantities of 10^{EXACT_DIGITS} nano units or more {where}, beyond "
        "draspeed's exact range (the reference engine, --engine reference, compares them)"
    )
