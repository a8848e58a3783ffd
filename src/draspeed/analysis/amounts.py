"""Amounts in nano units, as capacity analysis counts counters and capacities.

The analysis adds, subtracts and divides plain integers (and floats for its optimal
bound), so a value of 10^100000 nano units or more, which the allocator compares
without writing it out (:mod:`draspeed.quantity_sum`), has no place in it: such a
value is refused here with the object it belongs to named.
"""

from __future__ import annotations

from draspeed.errors import QuantityError
from draspeed.quantity import MAX_EXPONENT_DIGITS, Quantity
from draspeed.quantity_sum import QuantitySum


def nanos_of(amount: Quantity | QuantitySum, what: str) -> int:
    """``amount`` in nano units; beyond the exact range a QuantityError naming ``what``
    (a counter, a capacity: where the amount was read)."""
    found = amount.nanos_below(MAX_EXPONENT_DIGITS)
    if found is None:
        raise QuantityError(
            f"{what}: {amount} is 10^{MAX_EXPONENT_DIGITS} nano units or more, beyond "
            "what capacity analysis counts (allocate and feasible answer for it)"
        )
    return found
